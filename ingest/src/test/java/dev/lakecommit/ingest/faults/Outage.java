package dev.lakecommit.ingest.faults;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A bounded outage of a server (metastore, database), started from inside a commit: the storage hooks of the
 * commit path ({@link OutageFileIO}, {@link OutageFileSystem}) call {@link #reached} when a commit passes its
 * trigger point; on the n-th time the server is stopped right there, on the committer's thread, so the commit's
 * next call meets it down; it comes back on the same port after the outage's length.
 */
public final class Outage implements AutoCloseable {
  private static final AtomicReference<Outage> ARMED = new AtomicReference<>();

  private final String name;
  private final Runnable stop;
  private final Runnable start;
  private final Duration length;
  private final int triggerAt;
  private final AtomicInteger reached = new AtomicInteger();
  private final CountDownLatch down = new CountDownLatch(1);
  private final CountDownLatch up = new CountDownLatch(1);
  private final AtomicReference<Throwable> restartFailure = new AtomicReference<>();
  private volatile String where;
  private Thread restarter;

  private Outage(String name, Runnable stop, Runnable start, Duration length, int triggerAt) {
    this.name = name;
    this.stop = stop;
    this.start = start;
    this.length = length;
    this.triggerAt = triggerAt;
  }

  /** Arms an outage of {@code name} for the {@code triggerAt}-th time a commit reaches its trigger point. */
  public static Outage arm(String name, Runnable stop, Runnable start, Duration length, int triggerAt) {
    Outage outage = new Outage(name, stop, start, length, triggerAt);
    if (!ARMED.compareAndSet(null, outage)) {
      throw new IllegalStateException("Another outage is armed: " + ARMED.get().name);
    }
    return outage;
  }

  /** Called by the hooks at a trigger point (e.g. a new table metadata file, a staged file moved into place). */
  static void reached(String location) {
    Outage outage = ARMED.get();
    if (outage != null) {
      outage.hit(location);
    }
  }

  private void hit(String location) {
    if (reached.incrementAndGet() != triggerAt) {
      return;
    }
    where = location;
    stop.run();
    down.countDown();
    restarter = new Thread(() -> {
      try {
        // The outage itself: a bounded time the server is away.
        Thread.sleep(length.toMillis());
        start.run();
      } catch (Throwable t) {
        restartFailure.set(t);
      } finally {
        up.countDown();
      }
    }, "outage-restarter-" + name);
    restarter.setDaemon(true);
    restarter.start();
  }

  /** Whether the outage happened (the server was stopped inside a commit). */
  public boolean happened() {
    return down.getCount() == 0;
  }

  /** Where the commit was when the server went down. */
  public String where() {
    return where;
  }

  /** Waits until the server is back; fails if it could not be restarted. */
  public void awaitBack(Duration timeout) throws InterruptedException {
    if (!up.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new IllegalStateException(name + " did not come back within " + timeout);
    }
    Throwable failure = restartFailure.get();
    if (failure != null) {
      throw new IllegalStateException("Could not restart " + name, failure);
    }
  }

  @Override
  public void close() throws InterruptedException {
    ARMED.compareAndSet(this, null);
    if (happened()) {
      awaitBack(length.plusMinutes(2));
    }
  }

  @Override
  public String toString() {
    return "Outage{" + name + ", " + length + ", at trigger " + triggerAt + " of " + reached.get()
        + (where == null ? "" : ", at " + Objects.toString(where)) + "}";
  }
}
