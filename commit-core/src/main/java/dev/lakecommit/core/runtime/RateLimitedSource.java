package dev.lakecommit.core.runtime;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.TimeUnit;

/**
 * A source read at no more than a given number of records per second, the way Flink's rate-limited sources and
 * Spark's {@code rowsPerSecond} pace a job: a backfill that must not flood a catalog or a store, a test that needs
 * a run to last. Up to one second of records may come in a burst after the input was idle; otherwise the reader
 * waits before it returns a record that came too early. Positions, commit positions and polling are the wrapped
 * source's own, so pacing changes nothing in what a checkpoint holds.
 *
 * @param <T> records produced
 */
public final class RateLimitedSource<T> implements CheckpointedSource<T> {
  /** Waits shorter than this are not slept but carried to the next record, so a high rate costs no system call. */
  private static final long SHORTEST_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
  private static final long BURST_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** The clock and the wait a paced reader uses; tests replace both. */
  interface Clock {
    long nanoTime();

    void sleep(long nanos) throws InterruptedException;
  }

  private static final Clock SYSTEM = new Clock() {
    @Override
    public long nanoTime() {
      return System.nanoTime();
    }

    @Override
    public void sleep(long nanos) throws InterruptedException {
      TimeUnit.NANOSECONDS.sleep(nanos);
    }
  };

  private final CheckpointedSource<T> source;
  private final double recordsPerSecond;
  private final Clock clock;

  private RateLimitedSource(CheckpointedSource<T> source, double recordsPerSecond, Clock clock) {
    checkRate(recordsPerSecond);
    this.source = source;
    this.recordsPerSecond = recordsPerSecond;
    this.clock = clock;
  }

  /** Fails unless {@code recordsPerSecond} is a positive, finite number. */
  public static void checkRate(double recordsPerSecond) {
    if (!(recordsPerSecond > 0) || Double.isInfinite(recordsPerSecond)) {
      throw new IllegalArgumentException("Records per second must be a positive number: " + recordsPerSecond);
    }
  }

  /** {@code source} read at no more than {@code recordsPerSecond} records per second. */
  public static <T> CheckpointedSource<T> of(CheckpointedSource<T> source, double recordsPerSecond) {
    return new RateLimitedSource<>(source, recordsPerSecond, SYSTEM);
  }

  static <T> RateLimitedSource<T> of(CheckpointedSource<T> source, double recordsPerSecond, Clock clock) {
    return new RateLimitedSource<>(source, recordsPerSecond, clock);
  }

  @Override
  public SourceReader<T> open(byte[] position) throws IOException {
    return new PacedReader<>(source.open(position), new Pacer(clock, recordsPerSecond));
  }

  @Override
  public String commitPosition(byte[] position) {
    return source.commitPosition(position);
  }

  /** The earliest time of the next record; one per reader, used by the reader's thread. */
  static final class Pacer {
    private final Clock clock;
    private final long origin;
    private final double nanosPerRecord;
    /** Nanoseconds after {@link #origin}: the clock's values may be far from zero, a double's precision is not. */
    private double next;

    Pacer(Clock clock, double recordsPerSecond) {
      this.clock = clock;
      this.origin = clock.nanoTime();
      this.nanosPerRecord = TimeUnit.SECONDS.toNanos(1) / recordsPerSecond;
    }

    /** Waits until a record may be returned, then takes its slot. */
    void acquire() throws InterruptedIOException {
      long now = clock.nanoTime() - origin;
      // an idle input earns at most one second of records to catch up with
      next = Math.max(next, (double) now - BURST_NANOS);
      long wait = (long) (next - now);
      if (wait >= SHORTEST_WAIT_NANOS) {
        try {
          clock.sleep(wait);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          InterruptedIOException interrupted = new InterruptedIOException("Interrupted while pacing the input");
          interrupted.initCause(e);
          throw interrupted;
        }
      }
      next += nanosPerRecord;
    }
  }

  private static final class PacedReader<T> extends ForwardingSourceReader<T> {
    private final Pacer pacer;

    PacedReader(SourceReader<T> reader, Pacer pacer) {
      super(reader);
      this.pacer = pacer;
    }

    @Override
    protected void onRecord(T record) throws InterruptedIOException {
      pacer.acquire();
    }
  }
}
