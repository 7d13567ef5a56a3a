package dev.lakecommit.core.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.testing.RangeSource;
import java.io.InterruptedIOException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Pacing on a clock that moves only when the reader waits (or the test says time passed): counted, not timed. */
class RateLimitedSourceTest {
  /** A clock whose time moves by the waits asked of it and by {@link #pass}. */
  private static final class ManualClock implements RateLimitedSource.Clock {
    long now = 1_000_000_000_000L;
    long slept;
    int sleeps;

    @Override
    public long nanoTime() {
      return now;
    }

    @Override
    public void sleep(long nanos) {
      assertThat(nanos).as("a wait").isPositive();
      now += nanos;
      slept += nanos;
      sleeps++;
    }

    void pass(long nanos) {
      now += nanos;
    }
  }

  private static long read(CheckpointedSource.SourceReader<Long> reader, int records) throws Exception {
    long last = -1;
    for (int i = 0; i < records; i++) {
      last = reader.next();
    }
    return last;
  }

  @Test
  void readsNoFasterThanTheRateAndWaitsInSteps() throws Exception {
    ManualClock clock = new ManualClock();
    CheckpointedSource<Long> source = RateLimitedSource.of(new RangeSource(10_000), 1_000, clock);

    try (CheckpointedSource.SourceReader<Long> reader = source.open(null)) {
      assertThat(read(reader, 5_000)).isEqualTo(4_999);
    }

    // record n may come at n ms: the 5,000th at 4.999 s
    assertThat(clock.slept).isBetween(TimeUnit.MILLISECONDS.toNanos(4_998), TimeUnit.MILLISECONDS.toNanos(4_999));
    // waits under a millisecond are carried, not slept: about one wait per record here, never more
    assertThat(clock.sleeps).isBetween(2_500, 5_000);
  }

  @Test
  void aHighRateWaitsRarely() throws Exception {
    ManualClock clock = new ManualClock();
    CheckpointedSource<Long> source = RateLimitedSource.of(new RangeSource(100_000), 1_000_000, clock);

    try (CheckpointedSource.SourceReader<Long> reader = source.open(null)) {
      read(reader, 100_000);
    }

    assertThat(clock.slept).isBetween(TimeUnit.MILLISECONDS.toNanos(98), TimeUnit.MILLISECONDS.toNanos(100));
    assertThat(clock.sleeps).as("waits of at least 1 ms each").isBetween(1, 100);
  }

  @Test
  void anIdleInputCatchesUpByAtMostOneSecondOfRecords() throws Exception {
    ManualClock clock = new ManualClock();
    CheckpointedSource<Long> source = RateLimitedSource.of(new RangeSource(10_000), 1_000, clock);

    try (CheckpointedSource.SourceReader<Long> reader = source.open(null)) {
      read(reader, 100);
      clock.pass(TimeUnit.SECONDS.toNanos(60));
      int before = clock.sleeps;
      read(reader, 1_000);
      assertThat(clock.sleeps).as("a second's burst without a wait").isEqualTo(before);
      long sleptBefore = clock.slept;
      read(reader, 500);
      assertThat(clock.slept - sleptBefore).as("then paced again")
          .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(498));
    }
  }

  @Test
  void positionsAreTheSourcesOwnSoAPacedReaderResumesExactly() throws Exception {
    ManualClock clock = new ManualClock();
    CheckpointedSource<Long> source = RateLimitedSource.of(new RangeSource(1_000), 100, clock);
    byte[] position;
    try (CheckpointedSource.SourceReader<Long> reader = source.open(null)) {
      read(reader, 300);
      position = reader.position();
      try (CheckpointedSource.SourceReader<Long> unpaced = new RangeSource(1_000).open(null)) {
        read(unpaced, 300);
        assertThat(position).isEqualTo(unpaced.position());
      }
    }
    try (CheckpointedSource.SourceReader<Long> reader = source.open(position)) {
      assertThat(reader.next()).isEqualTo(300L);
      read(reader, 699);
      assertThat(reader.next()).isNull();
      assertThat(reader.ended()).isTrue();
    }
  }

  @Test
  void anInterruptedWaitEndsTheReadAsAnInterruptedIoError() throws Exception {
    RateLimitedSource.Clock interrupting = new RateLimitedSource.Clock() {
      @Override
      public long nanoTime() {
        return 0;
      }

      @Override
      public void sleep(long nanos) throws InterruptedException {
        throw new InterruptedException("stop");
      }
    };
    CheckpointedSource<Long> source = RateLimitedSource.of(new RangeSource(10), 1, interrupting);

    try (CheckpointedSource.SourceReader<Long> reader = source.open(null)) {
      assertThat(reader.next()).isZero();
      assertThatThrownBy(reader::next).isInstanceOf(InterruptedIOException.class);
      assertThat(Thread.interrupted()).as("the interrupt is kept").isTrue();
    }
  }

  @Test
  void aRateThatIsNotPositiveIsRefused() {
    assertThatThrownBy(() -> RateLimitedSource.of(new RangeSource(1), 0)).hasMessageContaining("positive");
    assertThatThrownBy(() -> RateLimitedSource.of(new RangeSource(1), Double.NaN)).hasMessageContaining("positive");
  }
}
