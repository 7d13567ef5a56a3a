package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.runtime.JobListener;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.iceberg.IcebergMaintenance;
import dev.lakecommit.iceberg.MaintenanceOptions;
import dev.lakecommit.iceberg.MaintenanceRound;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code ingest --maintain-every N}: after every N commits of the job, one maintenance round on a thread of its
 * own — compaction of the files older than the newest N checkpoints, manifest rewrite, and with
 * {@code --maintain-retain-last} snapshot expiry — under the table's maintenance lease, so that one round at a
 * time runs per table across jobs (a round whose lease another holds is skipped). The job's commits never wait for a round (a round's commits
 * conflict with a checkpoint commit at most like any concurrent commit: one more attempt) and never fail because
 * of one; a round that fails is logged and the next round tries again. A round still running when the next is due
 * is not doubled. Forwards every event to the job's own listener.
 */
final class PeriodicMaintenance implements JobListener, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PeriodicMaintenance.class);

  private final IcebergMaintenance maintenance;
  private final int every;
  private final Integer retainLast;
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

  PeriodicMaintenance(IcebergMaintenance maintenance, int every, Integer retainLast, JobListener delegate) {
    this.maintenance = maintenance;
    this.every = every;
    this.retainLast = retainLast;
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
      MaintenanceOptions.Builder options = MaintenanceOptions.builder().keepCheckpoints(every);
      if (retainLast != null) {
        options.expire(retainLast, Duration.ZERO);
      }
      MaintenanceRound.Result result = maintenance.round(options.build(), "lakecommit ingest, "
          + RunEpoch.thisProcess());
      (result.ran() ? rounds : skippedRounds).incrementAndGet();
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
}
