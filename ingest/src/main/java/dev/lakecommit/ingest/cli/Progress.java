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
  private final AtomicLong diverted;
  private long divertedAtLastCheckpoint = -1;
  private final long started = System.nanoTime();
  private final ScheduledExecutorService ticker;
  private volatile long checkpoint;
  private volatile long baseRows;
  private volatile String lastCommit = "none yet";
  /** Records behind the input's end (a stream's lag), or null for inputs without one. */
  private volatile java.util.function.LongSupplier lag;

  /**
   * @param diverted records the job diverted to dead-letter files up to the newest checkpoint's position
   */
  Progress(PrintWriter out, boolean terminal, AtomicLong rowsRead, AtomicLong diverted) {
    this.out = out;
    this.terminal = terminal;
    this.rowsRead = rowsRead;
    this.diverted = diverted;
    this.ticker = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread thread = new Thread(r, "lakecommit-progress");
      thread.setDaemon(true);
      return thread;
    });
    long period = terminal ? 1 : 10;
    ticker.scheduleAtFixedRate(this::tick, period, period, TimeUnit.SECONDS);
  }

  /** Shows a stream's lag (records behind its end offsets; negative: not known yet) in every progress line. */
  Progress lag(java.util.function.LongSupplier recordsBehind) {
    this.lag = recordsBehind;
    return this;
  }

  private String lagText() {
    java.util.function.LongSupplier supplier = lag;
    if (supplier == null) {
      return "";
    }
    long behind = supplier.getAsLong();
    return behind < 0 ? ", lag unknown" : String.format(", lag %,d records", behind);
  }

  @Override
  public void onStart(int attempt, long restoredCheckpointId, long recordCount) {
    baseRows = recordCount;
    divertedAtLastCheckpoint = diverted.get();
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

  /** One line per failed commit attempt (the clients' own retry logs are off unless {@code --verbose}). */
  @Override
  public void onCommitAttemptFailed(long checkpointId, int attempt, Throwable cause) {
    out.printf("%scommit of checkpoint %d: attempt %d failed, retrying: %s%n", terminal ? "\r" : "", checkpointId,
        attempt, LakecommitCommand.summary(cause));
    out.flush();
  }

  @Override
  public void onCheckpointComplete(long checkpointId, long recordCount) {
    checkpoint = checkpointId;
    long total = diverted.get();
    String divertedText = total == 0 ? "" : String.format(", %,d record(s) to dead-letter files (%,d in all)",
        total - Math.max(0, divertedAtLastCheckpoint), total);
    divertedAtLastCheckpoint = total;
    if (!terminal || total > 0) {
      out.printf("%scheckpoint %d complete: %,d rows%s%s; last commit %s%n", terminal ? "\r" : "", checkpointId,
          recordCount, divertedText, lagText(), lastCommit);
      out.flush();
    }
  }

  private void tick() {
    long rows = rowsRead.get();
    double seconds = Math.max(0.001, (System.nanoTime() - started) / 1e9);
    String line = String.format("%,d rows read (%,.0f rows/s)%s, checkpoint %d, last commit %s", baseRows + rows,
        rows / seconds, lagText(), checkpoint, lastCommit);
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
