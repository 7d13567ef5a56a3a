package dev.lakecommit.core;

import java.util.Objects;

/**
 * The identity of one commit: the job and the checkpoint it commits. Checkpoint ids only grow within a job.
 *
 * @param jobId the job
 * @param checkpointId the checkpoint, {@code >= 1}
 */
public record CommitId(JobId jobId, long checkpointId) implements Comparable<CommitId> {
  /** Summary key of the job id, in every snapshot or partition batch that Lakecommit commits. */
  public static final String JOB_ID_KEY = "lakecommit.job-id";

  /** Summary key of the checkpoint id, in every snapshot or partition batch that Lakecommit commits. */
  public static final String CHECKPOINT_ID_KEY = "lakecommit.checkpoint-id";

  /** Prefix of the per-job watermark property: {@code lakecommit.committed.<job-id>} = last committed checkpoint. */
  public static final String WATERMARK_KEY_PREFIX = "lakecommit.committed.";

  /**
   * Prefix of the per-job source position property: {@code lakecommit.source.<job-id>} = where the job's source
   * stands after its last committed checkpoint (e.g. Kafka offsets), set in the same commit as the watermark.
   */
  public static final String SOURCE_POSITION_KEY_PREFIX = "lakecommit.source.";

  public CommitId {
    Objects.requireNonNull(jobId, "jobId");
    if (checkpointId < 1) {
      throw new IllegalArgumentException(
          String.format("Invalid checkpoint id: %s (must be >= 1)", checkpointId));
    }
  }

  /** The table property (Iceberg) or table parameter (Hive) that holds this job's watermark. */
  public static String watermarkKey(JobId jobId) {
    return WATERMARK_KEY_PREFIX + jobId.value();
  }

  /** The table property (Iceberg) or table parameter (Hive) that holds this job's committed source position. */
  public static String sourcePositionKey(JobId jobId) {
    return SOURCE_POSITION_KEY_PREFIX + jobId.value();
  }

  @Override
  public int compareTo(CommitId other) {
    int byJob = jobId.compareTo(other.jobId);
    return byJob != 0 ? byJob : Long.compare(checkpointId, other.checkpointId);
  }

  @Override
  public String toString() {
    return "checkpoint " + checkpointId + " of job " + jobId;
  }
}
