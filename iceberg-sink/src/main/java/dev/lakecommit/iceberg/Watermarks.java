package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * Reads commit identity from table metadata: the per-job watermark property (O(1), survives snapshot expiry) and,
 * as a second witness, the summary of the branch head. Where the property is missing (a user or a tool removed
 * it), the branch's whole snapshot ancestry is read instead, so a replay is never taken for a new commit while
 * the job's snapshots are still in the history.
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
   * branch head if this job committed it and it is newer; without a watermark, the newest checkpoint of the job in
   * the branch's ancestry. Empty if none.
   */
  static OptionalLong committedUpTo(TableMetadata metadata, JobId jobId, String branch) {
    OptionalLong watermark = watermark(metadata, jobId);
    long upTo = watermark.orElse(-1);
    if (watermark.isPresent()) {
      upTo = Math.max(upTo, checkpointOf(head(metadata, branch), jobId));
    } else {
      for (Snapshot snapshot : ancestry(metadata, branch)) {
        upTo = Math.max(upTo, checkpointOf(snapshot, jobId));
      }
    }
    return upTo < 0 ? OptionalLong.empty() : OptionalLong.of(upTo);
  }

  /**
   * Where the table shows that the commit is in it, or empty if it is not: the watermark is at or above the
   * checkpoint, or the head of the branch was committed by this job at or above it; without a watermark, any
   * snapshot of the job at or above it in the branch's ancestry.
   */
  static Optional<String> findCommitted(TableMetadata metadata, CommitId id, String branch) {
    OptionalLong watermark = watermark(metadata, id.jobId());
    if (watermark.isPresent() && watermark.getAsLong() >= id.checkpointId()) {
      return Optional.of("watermark " + CommitId.watermarkKey(id.jobId()) + "=" + watermark.getAsLong());
    }
    Iterable<Snapshot> witnesses = watermark.isPresent() ? headOnly(metadata, branch) : ancestry(metadata, branch);
    for (Snapshot snapshot : witnesses) {
      long checkpoint = checkpointOf(snapshot, id.jobId());
      if (checkpoint >= id.checkpointId()) {
        return Optional.of("snapshot " + snapshot.snapshotId() + " of checkpoint " + checkpoint
            + (watermark.isPresent() ? "" : " (watermark property missing; found in the snapshot history)"));
      }
    }
    return Optional.empty();
  }

  private static Snapshot head(TableMetadata metadata, String branch) {
    SnapshotRef ref = metadata.ref(branch);
    return ref == null ? null : metadata.snapshot(ref.snapshotId());
  }

  private static Iterable<Snapshot> headOnly(TableMetadata metadata, String branch) {
    Snapshot head = head(metadata, branch);
    return head == null ? java.util.List.of() : java.util.List.of(head);
  }

  private static Iterable<Snapshot> ancestry(TableMetadata metadata, String branch) {
    Snapshot head = head(metadata, branch);
    return head == null ? java.util.List.of() : SnapshotUtil.ancestorsOf(head.snapshotId(), metadata::snapshot);
  }

  /** The checkpoint a snapshot committed for the job, or -1 if it is not one of the job's. */
  private static long checkpointOf(Snapshot snapshot, JobId jobId) {
    if (snapshot == null || snapshot.summary() == null
        || !jobId.value().equals(snapshot.summary().get(CommitId.JOB_ID_KEY))) {
      return -1;
    }
    String checkpoint = snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY);
    return checkpoint == null ? -1 : Long.parseLong(checkpoint);
  }
}
