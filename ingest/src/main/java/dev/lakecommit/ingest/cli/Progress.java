package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.runtime.JobListener;
import java.io.PrintWriter;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Shows a long ingest's progress: on a terminal a line that refreshes every second (rows, rows/s, checkpoints,
 * last commit); otherwise a plain line per completed checkpoint and every 10 seconds.
 */
final class Progress implements JobListener, AutoCloseable {
  private final PrintWriter out;
  private final boolean terminal;
  private final AtomicLong rowsRead;
  private final long started = System.nanoTime();
  private final ScheduledExecutorService ticker;
  private volatile long checkpoint;
  private volatile long baseRows;
  private volatile String lastCommit = "none yet";

  Progress(PrintWriter out, boolean terminal, AtomicLong rowsRead) {
    this.out = out;
    this.terminal = terminal;
    this.rowsRead = rowsRead;
    this.ticker = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread thread = new Thread(r, "lakecommit-progress");
      thread.setDaemon(true);
      return thread;
    });
    long period = terminal ? 1 : 10;
    ticker.scheduleAtFixedRate(this::tick, period, period, TimeUnit.SECONDS);
  }

  @Override
  public void onStart(int attempt, long restoredCheckpointId, long recordCount) {
    baseRows = recordCount;
    if (restoredCheckpointId > 0) {
      out.printf("Resuming after checkpoint %d (%,d rows already read), attempt %d%n", restoredCheckpointId,
          recordCount, attempt);
      out.flush();
    }
  }

  @Override
  public void onCommitted(long checkpointId, CommitOutcome outcome, long durationNanos) {
    lastCommit = "checkpoint " + checkpointId + " "
        + (outcome instanceof CommitOutcome.Committed c ? c.targetVersion() : "already committed")
        + " in " + durationNanos / 1_000_000 + " ms";
  }

  @Override
  public void onCheckpointComplete(long checkpointId, long recordCount) {
    checkpoint = checkpointId;
    if (!terminal) {
      out.printf("checkpoint %d complete: %,d rows; last commit %s%n", checkpointId, recordCount, lastCommit);
      out.flush();
    }
  }

  private void tick() {
    long rows = rowsRead.get();
    double seconds = Math.max(0.001, (System.nanoTime() - started) / 1e9);
    String line = String.format("%,d rows read (%,.0f rows/s), checkpoint %d, last commit %s", baseRows + rows,
        rows / seconds, checkpoint, lastCommit);
    if (terminal) {
      out.print("\r" + line + "   ");
    } else {
      out.println(line);
    }
    out.flush();
  }

  @Override
  public void close() {
    ticker.shutdownNow();
    if (terminal) {
      out.println();
    }
  }
}
