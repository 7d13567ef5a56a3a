package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;

/**
 * What the committer reports, for the CLI and the engine adapters to export. Called on the committer's thread;
 * implementations must be quick and must not throw.
 */
public interface CommitMetrics {

  /**
   * A checkpoint was committed as a new snapshot.
   *
   * @param attempts catalog commit attempts it took (1 without conflicts)
   * @param conflicts attempts the catalog refused because the table had changed
   */
  default void committed(CommitId id, long snapshotId, long durationNanos, int attempts, int conflicts,
      int files, long records, long bytes) {}

  /**
   * A checkpoint was found in the table already (replay, retry or racing committer); nothing was changed.
   *
   * @param conflicts catalog attempts refused before the checkpoint was found (a lost race shows one)
   */
  default void skipped(CommitId id, String where, int conflicts) {}

  /** A commit attempt failed and will be retried, or its state had to be settled by reading the table. */
  default void failed(CommitId id, Throwable cause, boolean settledByReadBack) {}

  CommitMetrics NONE = new CommitMetrics() {};
}
