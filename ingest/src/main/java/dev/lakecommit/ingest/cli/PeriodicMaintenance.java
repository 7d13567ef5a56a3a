package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.runtime.JobListener;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code ingest --maintain-every N}: after every N commits of the job, one maintenance round on a thread of its
 * own (what a round does is the table's: see {@link MaintainOptions}; an Iceberg round runs under the table's
 * maintenance lease, so that one round at a time runs per table across jobs, and is skipped while another holds it).
 * The job's commits never wait for a round (a round's commits
 * conflict with a checkpoint commit at most like any concurrent commit: one more attempt) and never fail because
 * of one; a round that fails is logged and the next round tries again. A round still running when the next is due
 * is not doubled. Forwards every event to the job's own listener.
 */
final class PeriodicMaintenance implements JobListener, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PeriodicMaintenance.class);

  /** One round of maintenance; its failure is logged and the next round tries again. */
  @FunctionalInterface
  interface Round {
    /** Runs the round; false if it was skipped (another holds the table's maintenance lease). */
    boolean run() throws Exception;
  }

  private final String maintenance;
  private final Round round;
  private final int every;
  private final JobListener delegate;
  private final ExecutorService executor = Executors.newSingleThreadExecutor(runnable -> {
    Thread thread = new Thread(runnable, "lakecommit-maintenance");
    thread.setDaemon(true);
    return thread;
  });
  private final AtomicBoolean running = new AtomicBoolean();
  private final AtomicInteger commits = new AtomicInteger();
  private final AtomicInteger rounds = new AtomicInteger();
  private final AtomicInteger failedRounds = new AtomicInteger();
  private final AtomicInteger skippedRounds = new AtomicInteger();

  /**
   * @param maintenance what the rounds maintain, for the log
   * @param round one round
   */
  PeriodicMaintenance(String maintenance, Round round, int every, JobListener delegate) {
    this.maintenance = maintenance;
    this.round = round;
    this.every = every;
    this.delegate = delegate;
  }

  @Override
  public void onCommitted(long checkpointId, CommitOutcome outcome, long durationNanos) {
    delegate.onCommitted(checkpointId, outcome, durationNanos);
    if (commits.incrementAndGet() % every == 0 && running.compareAndSet(false, true)) {
      executor.execute(this::round);
    }
  }

  private void round() {
    try {
      (round.run() ? rounds : skippedRounds).incrementAndGet();
    } catch (Exception e) {
      failedRounds.incrementAndGet();
      LOG.warn("Maintenance round of {} failed; the next round tries again: {}", maintenance, e.toString());
    } finally {
      running.set(false);
    }
  }

  /** Rounds that completed and rounds that failed. */
  String summary() {
    return rounds.get() + " maintenance round(s)" + (failedRounds.get() > 0 ? ", " + failedRounds.get()
        + " failed" : "") + (skippedRounds.get() > 0 ? ", " + skippedRounds.get() + " skipped (another held the "
        + "table's maintenance lease)" : "");
  }

  /** Lets a running round finish (bounded), so that the sink's catalog is not closed under it. */
  @Override
  public void close() throws InterruptedException {
    executor.shutdown();
    if (!executor.awaitTermination(2, TimeUnit.MINUTES)) {
      executor.shutdownNow();
      LOG.warn("A maintenance round of {} did not finish in 2 minutes after the job; interrupted", maintenance);
    }
  }

  @Override
  public void onStart(int attempt, long restoredCheckpointId, long recordCount) {
    delegate.onStart(attempt, restoredCheckpointId, recordCount);
  }

  @Override
  public void onCheckpointPrepared(long checkpointId) {
    delegate.onCheckpointPrepared(checkpointId);
  }

  @Override
  public void onCheckpointPersisted(long checkpointId) {
    delegate.onCheckpointPersisted(checkpointId);
  }

  @Override
  public void onCommitAttemptFailed(long checkpointId, int attempt, Throwable cause) {
    delegate.onCommitAttemptFailed(checkpointId, attempt, cause);
  }

  @Override
  public void onCheckpointComplete(long checkpointId, long recordCount) {
    delegate.onCheckpointComplete(checkpointId, recordCount);
  }

  @Override
  public void onWaitingForCommits(long nextCheckpointId, int uncommitted) {
    delegate.onWaitingForCommits(nextCheckpointId, uncommitted);
  }
}
