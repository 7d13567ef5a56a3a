package dev.lakecommit.core.runtime;

import java.time.Duration;
import java.util.function.Supplier;
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
  private final Supplier<String> errorProbe;
  private final Thread thread;
  private volatile long lastProgressNanos = System.nanoTime();
  private volatile String phase = "starting";
  private volatile Throwable lastError;
  private volatile boolean stalled;
  private volatile String stalledDescription;
  private boolean closed;

  private StallWatchdog(Duration timeout, String jobName, Supplier<String> errorProbe, Runnable onStall) {
    this.timeout = timeout;
    this.jobName = jobName;
    this.errorProbe = errorProbe;
    if (timeout == null) {
      this.thread = null;
      return;
    }
    this.thread = new Thread(() -> watch(onStall), "lakecommit-stall-watchdog-" + jobName);
    thread.setDaemon(true);
    thread.start();
  }

  /**
   * Starts watching; with a null timeout nothing is watched.
   *
   * @param errorProbe asked for the last failure when the job saw none itself (may be null or return null)
   */
  static StallWatchdog start(Duration timeout, String jobName, Supplier<String> errorProbe, Runnable onStall) {
    return new StallWatchdog(timeout, jobName, errorProbe, onStall);
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
    String captured = stalledDescription;
    if (captured != null) {
      return captured;
    }
    Throwable error = lastError;
    String probed = error == null && errorProbe != null ? errorProbe.get() : null;
    String last = error != null ? error.toString()
        : probed != null ? probed
        : "none reported (a call may be hanging, or retrying inside a storage or catalog client)";
    return "made no progress for " + timeout.toSeconds() + " s (stall timeout) while " + phase + "; last error: "
        + last;
  }

  @Override
  public void close() {
    synchronized (this) {
      closed = true;
    }
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
          // Described before the interrupts: what they cause is not the reason of the stall.
          String description = describe();
          synchronized (this) {
            if (closed) {
              return;
            }
            stalledDescription = description;
            stalled = true;
            onStall.run();
          }
          LOG.warn("Job {} {}", jobName, description);
          return;
        }
      }
    } catch (InterruptedException e) {
      // closed
    }
  }
}
