package dev.lakecommit.core.runtime;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.TargetRun;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One commit of due checkpoints, made until its outcome is final: the committer's choice of the next commit, the
 * source position it records, attempts under the job's retry policy (each failed attempt told to the watchdog and
 * the listener), an unknown outcome settled by reading the target back, and a failure turned into a message that
 * says what happened to the checkpoint. Counts what it did. One caller at a time.
 *
 * @param <A> the sink's combined commit
 */
final class CommitAttempts<A> {
  private static final Logger LOG = LoggerFactory.getLogger(CommitAttempts.class);

  /** Throws if no further call on the committer or target may start (the run abandoned its committer thread). */
  interface Guard {
    void check(long checkpointId);
  }

  private final StandaloneJob<?> job;
  private final JobId jobId;
  private final CommitPath<?, A> path;
  private final TargetRun run;
  private final PendingCommits<A> pending;
  private final StallWatchdog watchdog;
  private final JobListener listener;
  private final Guard guard;

  /** Whether the committer was given commit properties (a source position) that a later commit must clear. */
  private boolean positionSet;
  private int commits;
  private int skippedCommits;
  private int commitRetries;
  private long commitRetryNanos;

  CommitAttempts(StandaloneJob<?> job, CommitPath<?, A> path, TargetRun run, PendingCommits<A> pending,
      StallWatchdog watchdog, JobListener listener, Guard guard) {
    this.job = job;
    this.jobId = job.jobId;
    this.path = path;
    this.run = run;
    this.pending = pending;
    this.watchdog = watchdog;
    this.listener = listener;
    this.guard = guard;
  }

  /**
   * Makes the next commit of the due ones (the committer may merge the oldest into one carrying the newest id) and
   * removes what it covers from the book.
   *
   * @throws JobFailedException if the commit failed for good, was refused, or its outcome stayed unknown
   */
  void commitNext(TreeMap<Long, A> due) throws InterruptedException {
    CommitPath.Next<A> next = path.next(due);
    long id = next.lastCheckpointId();
    recordPosition(id);
    long start = System.nanoTime();
    watchdog.phase("committing checkpoint " + id);
    int[] attempts = {0};
    long[] firstFailure = {Long.MIN_VALUE};
    boolean[] unknown = {false};
    CommitOutcome outcome = job.commitRetry.commit("commit of checkpoint " + id + " of job " + jobId, () -> {
      int attemptNo = ++attempts[0];
      guard.check(id);
      CommitOutcome result = path.commit(next.committable());
      guard.check(id);
      if (result.isRetryable()) {
        Throwable cause = result instanceof CommitOutcome.Retryable r
            ? r.cause() : ((CommitOutcome.Unknown) result).cause();
        commitRetries++;
        unknown[0] |= result instanceof CommitOutcome.Unknown;
        if (firstFailure[0] == Long.MIN_VALUE) {
          firstFailure[0] = System.nanoTime();
        }
        watchdog.error(cause);
        watchdog.phase("retrying the commit of checkpoint " + id + " (attempt " + attemptNo + " failed)");
        listener.onCommitAttemptFailed(id, attemptNo, cause);
      }
      return result;
    });
    long duration = System.nanoTime() - start;
    if (firstFailure[0] != Long.MIN_VALUE) {
      commitRetryNanos += System.nanoTime() - firstFailure[0];
    }
    guard.check(id);
    if (unknown[0] && outcome.isRetryable()) {
      outcome = run.settle(id, outcome);
    }
    if (outcome instanceof CommitOutcome.Committed c) {
      commits++;
      LOG.info("Committed checkpoint {} of job {} as {} in {} ms", id, jobId, c.targetVersion(),
          duration / 1_000_000);
    } else if (outcome instanceof CommitOutcome.AlreadyCommitted a) {
      skippedCommits++;
      LOG.info("Checkpoint {} of job {} was already committed ({}); skipped", id, jobId, a.reason());
    } else {
      throw failed(id, outcome, attempts[0], unknown[0]);
    }
    for (long covered : due.headMap(id, true).keySet()) {
      pending.remove(covered);
      watchdog.progressed("committed checkpoint " + covered);
      listener.onCommitted(covered, outcome, duration);
    }
  }

  int commits() {
    return commits;
  }

  int skippedCommits() {
    return skippedCommits;
  }

  int commitRetries() {
    return commitRetries;
  }

  long commitRetryNanos() {
    return commitRetryNanos;
  }

  private JobFailedException failed(long id, CommitOutcome outcome, int attempts, boolean unknown) {
    if (outcome instanceof CommitOutcome.Fatal f && f.cause() instanceof FencedException fenced) {
      return new JobFailedException("Commit of checkpoint " + id + " of job " + jobId + " refused: "
          + fenced.getMessage() + ". This run committed nothing of checkpoint " + id + " and deletes only files"
          + " it staged itself.", fenced);
    }
    if (outcome instanceof CommitOutcome.Fatal f) {
      return new JobFailedException("Commit of checkpoint " + id + " of job " + jobId + " failed: "
          + f.cause().getMessage() + ". The checkpoint and its staged files are kept in "
          + job.store.location() + "; fix the cause and run the job again.", f.cause());
    }
    if (outcome instanceof CommitOutcome.Retryable r && !unknown) {
      return new JobFailedException("Could not commit checkpoint " + id + " of job " + jobId + " after "
          + attempts + " attempts in at most " + job.commitRetry.totalTimeout().toSeconds() + " s: "
          + r.cause().getMessage() + ". The checkpoint is durable in " + job.store.location()
          + "; run the job again to retry the commit.", r.cause());
    }
    Throwable cause = outcome instanceof CommitOutcome.Retryable r ? r.cause()
        : ((CommitOutcome.Unknown) outcome).cause();
    return new JobFailedException("The outcome of the commit of checkpoint " + id + " of job " + jobId
        + " is unknown after " + attempts + " attempts (the target did not answer whether an attempt landed; "
        + "last: " + cause.getMessage() + "). It is committed once either way: the next run of the job reads the"
        + " target and commits it only if it did not land. The checkpoint is durable in " + job.store.location()
        + ".", cause);
  }

  /**
   * The commit of checkpoint {@code id} sets the source position it was taken at in the table, next to the
   * watermark (CommitId#sourcePositionKey); a commit without one sets none.
   */
  private void recordPosition(long id) {
    String position = pending.position(id);
    if (position != null) {
      positionSet = path.commitProperties(Map.of(CommitId.sourcePositionKey(jobId), position));
    } else if (positionSet) {
      path.commitProperties(Map.of());
      positionSet = false;
    }
  }
}
