package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.TableMetadata;

/**
 * Reads commit identity from table metadata: the per-job watermark property (O(1), survives snapshot expiry) and,
 * as a second witness, the summary of the branch head.
 */
final class Watermarks {
  private Watermarks() {}

  /** The last checkpoint of the job recorded in the table's properties. */
  static OptionalLong watermark(TableMetadata metadata, JobId jobId) {
    return parse(metadata.properties(), jobId);
  }

  static OptionalLong parse(Map<String, String> properties, JobId jobId) {
    String value = properties.get(CommitId.watermarkKey(jobId));
    if (value == null) {
      return OptionalLong.empty();
    }
    try {
      return OptionalLong.of(Long.parseLong(value.trim()));
    } catch (NumberFormatException e) {
      throw new IllegalStateException(
          String.format("Corrupt watermark %s=%s: not a checkpoint id", CommitId.watermarkKey(jobId), value), e);
    }
  }

  /**
   * The newest checkpoint of the job that the table shows as committed: the watermark, or the checkpoint of the
   * branch head if this job committed it and it is newer; empty if neither.
   */
  static OptionalLong committedUpTo(TableMetadata metadata, JobId jobId, String branch) {
    long upTo = watermark(metadata, jobId).orElse(-1);
    SnapshotRef ref = metadata.ref(branch);
    Snapshot head = ref == null ? null : metadata.snapshot(ref.snapshotId());
    if (head != null && head.summary() != null && jobId.value().equals(head.summary().get(CommitId.JOB_ID_KEY))) {
      String checkpoint = head.summary().get(CommitId.CHECKPOINT_ID_KEY);
      if (checkpoint != null) {
        upTo = Math.max(upTo, Long.parseLong(checkpoint));
      }
    }
    return upTo < 0 ? OptionalLong.empty() : OptionalLong.of(upTo);
  }

  /**
   * Where the table shows that the commit is in it, or empty if it is not: the watermark is at or above the
   * checkpoint, or the head of the branch was committed by this job at or above it.
   */
  static Optional<String> findCommitted(TableMetadata metadata, CommitId id, String branch) {
    OptionalLong watermark = watermark(metadata, id.jobId());
    if (watermark.isPresent() && watermark.getAsLong() >= id.checkpointId()) {
      return Optional.of("watermark " + CommitId.watermarkKey(id.jobId()) + "=" + watermark.getAsLong());
    }
    SnapshotRef ref = metadata.ref(branch);
    Snapshot head = ref == null ? null : metadata.snapshot(ref.snapshotId());
    if (head != null && head.summary() != null
        && id.jobId().value().equals(head.summary().get(CommitId.JOB_ID_KEY))) {
      String checkpoint = head.summary().get(CommitId.CHECKPOINT_ID_KEY);
      if (checkpoint != null && Long.parseLong(checkpoint) >= id.checkpointId()) {
        return Optional.of("snapshot " + head.snapshotId() + " of checkpoint " + checkpoint);
      }
    }
    return Optional.empty();
  }
}
