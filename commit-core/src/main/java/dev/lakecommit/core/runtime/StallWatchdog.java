package dev.lakecommit.core.runtime;

import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Notices a job that makes no progress: the coordinator reports each step forward (a record read, a checkpoint
 * persisted, a commit settled) and the failures it saw; when no step forward came for the stall timeout, the
 * watchdog runs its stall action once (the run interrupts its threads and fails with {@link #describe()}).
 * Without a timeout it only keeps the phase and the last error.
 */
final class StallWatchdog implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(StallWatchdog.class);

  private final Duration timeout;
  private final String jobName;
  private final Thread thread;
  private volatile long lastProgressNanos = System.nanoTime();
  private volatile String phase = "starting";
  private volatile Throwable lastError;
  private volatile boolean stalled;

  private StallWatchdog(Duration timeout, String jobName, Runnable onStall) {
    this.timeout = timeout;
    this.jobName = jobName;
    if (timeout == null) {
      this.thread = null;
      return;
    }
    this.thread = new Thread(() -> watch(onStall), "lakecommit-stall-watchdog-" + jobName);
    thread.setDaemon(true);
    thread.start();
  }

  /** Starts watching; with a null timeout nothing is watched. */
  static StallWatchdog start(Duration timeout, String jobName, Runnable onStall) {
    return new StallWatchdog(timeout, jobName, onStall);
  }

  /** A step forward (cheap: called per record). */
  void progressed() {
    lastProgressNanos = System.nanoTime();
  }

  /** A step forward into a new phase, e.g. "committing checkpoint 7". */
  void progressed(String newPhase) {
    this.phase = newPhase;
    lastProgressNanos = System.nanoTime();
  }

  /** The job entered a phase without having made progress (e.g. a retry of the same commit). */
  void phase(String newPhase) {
    this.phase = newPhase;
  }

  /** A failure the job rides out for now (e.g. a commit attempt that will be retried). */
  void error(Throwable cause) {
    this.lastError = cause;
  }

  boolean stalled() {
    return stalled;
  }

  /** What the job was doing and the last failure it saw. */
  String describe() {
    Throwable error = lastError;
    return "made no progress for " + timeout.toSeconds() + " s (stall timeout) while " + phase + "; last error: "
        + (error == null ? "none reported (a call may be hanging, or retrying inside a storage or catalog client)"
            : error.toString());
  }

  @Override
  public void close() {
    if (thread != null) {
      thread.interrupt();
    }
  }

  private void watch(Runnable onStall) {
    long tick = Math.max(10, Math.min(1000, timeout.toMillis() / 10));
    try {
      while (true) {
        Thread.sleep(tick);
        if (System.nanoTime() - lastProgressNanos >= timeout.toNanos()) {
          stalled = true;
          LOG.warn("Job {} {}", jobName, describe());
          onStall.run();
          return;
        }
      }
    } catch (InterruptedException e) {
      // closed
    }
  }
}
