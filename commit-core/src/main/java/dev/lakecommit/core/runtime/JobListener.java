package dev.lakecommit.core.runtime;

import dev.lakecommit.core.CommitOutcome;

/**
 * Told of the steps of a running job, in this order per checkpoint: prepared, persisted, committed (once per commit
 * applied or skipped), complete. For progress output and metrics. A listener must be quick; what it throws fails
 * the job at that step (tests use that to crash a job there). Synchronous commits: every step comes from the
 * coordinator thread. Pipelined commits ({@code StandaloneJob.Builder#maxUncommittedCheckpoints} above 0): the
 * commit steps (committed, commit attempt failed, complete) come from the committer thread while the coordinator
 * prepares and persists later checkpoints; the steps of both threads are passed one at a time, never at once.
 */
public interface JobListener {

  /** After the job restored a checkpoint (or started fresh, with checkpoint 0), before reading any record. */
  default void onStart(int attempt, long restoredCheckpointId, long recordCount) {}

  /** All writers prepared the checkpoint; nothing of it is durable yet. */
  default void onCheckpointPrepared(long checkpointId) {}

  /** The checkpoint is durable; its commit has not started. */
  default void onCheckpointPersisted(long checkpointId) {}

  /** A pending commit reached a final outcome (committed, already committed). */
  default void onCommitted(long checkpointId, CommitOutcome outcome, long durationNanos) {}

  /**
   * A commit attempt of a checkpoint failed in a way that may succeed later (conflict, outage, unknown state); the
   * retry policy decides whether another attempt follows.
   */
  default void onCommitAttemptFailed(long checkpointId, int attempt, Throwable cause) {}

  /** The checkpoint is durable and every pending commit up to it is done. */
  default void onCheckpointComplete(long checkpointId, long recordCount) {}

  /**
   * Pipelined commits only: reading stopped before checkpoint {@code nextCheckpointId} because {@code uncommitted}
   * persisted checkpoints (the bound) wait for their commits; it goes on when the oldest is committed.
   */
  default void onWaitingForCommits(long nextCheckpointId, int uncommitted) {}

  /** No-op listener. */
  JobListener NONE = new JobListener() {};

  /** Tells {@code first}, then {@code second}, of every step. */
  static JobListener both(JobListener first, JobListener second) {
    return new JobListener() {
      @Override
      public void onStart(int attempt, long restoredCheckpointId, long recordCount) {
        first.onStart(attempt, restoredCheckpointId, recordCount);
        second.onStart(attempt, restoredCheckpointId, recordCount);
      }

      @Override
      public void onCheckpointPrepared(long checkpointId) {
        first.onCheckpointPrepared(checkpointId);
        second.onCheckpointPrepared(checkpointId);
      }

      @Override
      public void onCheckpointPersisted(long checkpointId) {
        first.onCheckpointPersisted(checkpointId);
        second.onCheckpointPersisted(checkpointId);
      }

      @Override
      public void onCommitted(long checkpointId, CommitOutcome outcome, long durationNanos) {
        first.onCommitted(checkpointId, outcome, durationNanos);
        second.onCommitted(checkpointId, outcome, durationNanos);
      }

      @Override
      public void onCommitAttemptFailed(long checkpointId, int attempt, Throwable cause) {
        first.onCommitAttemptFailed(checkpointId, attempt, cause);
        second.onCommitAttemptFailed(checkpointId, attempt, cause);
      }

      @Override
      public void onCheckpointComplete(long checkpointId, long recordCount) {
        first.onCheckpointComplete(checkpointId, recordCount);
        second.onCheckpointComplete(checkpointId, recordCount);
      }

      @Override
      public void onWaitingForCommits(long nextCheckpointId, int uncommitted) {
        first.onWaitingForCommits(nextCheckpointId, uncommitted);
        second.onWaitingForCommits(nextCheckpointId, uncommitted);
      }
    };
  }
}
