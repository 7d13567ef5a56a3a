package dev.lakecommit.core.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.Deletion;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsDeletes;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Records reach writers in batches that never cross a barrier, and back-pressure still bounds what is buffered. */
class WriterPoolTest {
  /** Remembers what it wrote per checkpoint; may hold its thread in {@code write} until released. */
  private static class Recording implements SinkWriter<Long, List<Long>, Long> {
    private final List<Long> open = new ArrayList<>();
    final List<List<Long>> prepared = new ArrayList<>();
    final CountDownLatch release;
    final CountDownLatch entered = new CountDownLatch(1);

    Recording(boolean hold) {
      this.release = new CountDownLatch(hold ? 1 : 0);
    }

    @Override
    public void write(Long record) {
      entered.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      open.add(record);
    }

    @Override
    public Optional<List<Long>> prepareCommit(long checkpointId) {
      prepared.add(List.copyOf(open));
      open.clear();
      return Optional.empty();
    }

    @Override
    public Long snapshotState(long checkpointId) {
      return checkpointId;
    }

    @Override
    public void abortPrepare() {}

    @Override
    public void close() {}
  }

  @Test
  void eachCheckpointHoldsExactlyTheRecordsSentBeforeItsBarrier() throws Exception {
    for (int capacity : new int[] {1, 4, 8, 100, 1024}) {
      for (long seed = 1; seed <= 5; seed++) {
        Random random = new Random(seed);
        List<Recording> writers = List.of(new Recording(false), new Recording(false), new Recording(false));
        WriterPool<Long, List<Long>, Long> pool = new WriterPool<>("job", new ArrayList<>(writers), capacity);
        pool.start();
        List<List<List<Long>>> expected = new ArrayList<>();
        writers.forEach(w -> expected.add(new ArrayList<>()));
        long next = 0;
        for (int checkpoint = 1; checkpoint <= 12; checkpoint++) {
          List<List<Long>> sent = new ArrayList<>();
          writers.forEach(w -> sent.add(new ArrayList<>()));
          int records = random.nextInt(4) == 0 ? 0 : random.nextInt(500);
          for (int i = 0; i < records; i++) {
            int writer = random.nextInt(writers.size());
            pool.send(writer, next);
            sent.get(writer).add(next++);
          }
          pool.checkpoint(checkpoint);
          for (int w = 0; w < writers.size(); w++) {
            expected.get(w).add(sent.get(w));
          }
        }
        pool.finish();
        for (int w = 0; w < writers.size(); w++) {
          assertThat(writers.get(w).prepared).as("capacity %d, seed %d, writer %d", capacity, seed, w)
              .isEqualTo(expected.get(w));
        }
      }
    }
  }

  /** A writer that does not take records makes the reader wait after its queue's capacity (plus one batch). */
  @Test
  void aWriterThatDoesNotKeepUpStopsTheReaderAfterTheQueueCapacity() throws Exception {
    for (int capacity : new int[] {4, 64, 1024}) {
      Recording stuck = new Recording(true);
      WriterPool<Long, List<Long>, Long> pool = new WriterPool<>("job", new ArrayList<>(List.of(stuck)), capacity);
      pool.start();
      AtomicLong accepted = new AtomicLong();
      Thread reader = new Thread(() -> {
        try {
          for (long i = 0; i < 10 * capacity + 1000; i++) {
            pool.send(0, i);
            accepted.incrementAndGet();
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, "reader");
      reader.start();
      assertThat(stuck.entered.await(30, TimeUnit.SECONDS)).isTrue();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      // the reader waits in the queue's offer (a timed wait) with its count settled: at least the capacity, since
      // it may still show waiting from before the stuck writer took its batch (seen: 63 of 64, a wake-up pending)
      while (!(reader.getState() == Thread.State.TIMED_WAITING && waitsToQueue(reader)
          && accepted.get() >= capacity)) {
        assertThat(System.nanoTime()).as("the reader never waited").isLessThan(deadline);
        Thread.onSpinWait();
      }
      long held = accepted.get();
      int batch = WriterPool.batchSize(capacity);
      // queued, being filled, and the batch the writer holds; the record being sent waits
      assertThat(held).as("capacity %d", capacity).isGreaterThanOrEqualTo(capacity).isLessThanOrEqualTo(capacity + batch);
      stuck.release.countDown();
      reader.join(TimeUnit.SECONDS.toMillis(30));
      assertThat(accepted.get()).isEqualTo(10L * capacity + 1000);
      pool.finish();
      assertThat(stuck.open).hasSize(10 * capacity + 1000);
    }
  }

  private static boolean waitsToQueue(Thread thread) {
    for (StackTraceElement frame : thread.getStackTrace()) {
      if (frame.getMethodName().equals("offer") && frame.getClassName().endsWith("ArrayBlockingQueue")) {
        return true;
      }
    }
    return false;
  }

  /**
   * A writer that swallows the interrupt while it writes (some file system clients do): {@code stop} still ends its
   * thread, which takes nothing more from its queue.
   */
  @Test
  void stopEndsAWriterThatSwallowedTheInterrupt() throws Exception {
    List<Long> written = new java.util.concurrent.CopyOnWriteArrayList<>();
    Recording swallowing = new Recording(false) {
      @Override
      public void write(Long record) {
        written.add(record);
        entered.countDown();
        try {
          new CountDownLatch(1).await();
        } catch (InterruptedException e) {
          // swallowed: the flag is cleared and the writer returns as if nothing happened
        }
      }
    };
    WriterPool<Long, List<Long>, Long> pool = new WriterPool<>("swallow", new ArrayList<>(List.of(swallowing)), 4);
    pool.start();
    pool.send(0, 1L);
    pool.send(0, 2L);
    assertThat(swallowing.entered.await(1, TimeUnit.MINUTES)).isTrue();
    pool.send(0, 3L);
    pool.stop();
    assertThat(Thread.getAllStackTraces().keySet()).as("live threads after stop")
        .noneMatch(thread -> thread.getName().equals("lakecommit-writer-swallow-0") && thread.isAlive());
    assertThat(written).containsExactly(1L);
  }

  /** A change stream's delete: a {@link Deletion} with the key of the row. */
  private record Gone(long key) implements Deletion {}

  /** Writes of a target that only adds rows, in the order the writer got them. */
  private static class Appending implements SinkWriter<Object, List<String>, Long> {
    final List<String> seen = new ArrayList<>();

    @Override
    public void write(Object record) {
      seen.add("write " + record);
    }

    @Override
    public Optional<List<String>> prepareCommit(long checkpointId) {
      return Optional.of(List.copyOf(seen));
    }

    @Override
    public Long snapshotState(long checkpointId) {
      return checkpointId;
    }

    @Override
    public void abortPrepare() {}

    @Override
    public void close() {}
  }

  /** Writes and deletes of a keyed target, in the order the writer got them. */
  private static final class Keyed extends Appending implements SupportsDeletes<Object> {
    @Override
    public void delete(Object record) {
      seen.add("delete " + ((Gone) record).key());
    }
  }

  @Test
  void deletionsReachTheWriterAsDeletesInTheirPlaceAndAnAppendOnlyWriterRefusesThem() throws Exception {
    for (int capacity : new int[] {1, 1024}) {
      Keyed keyed = new Keyed();
      WriterPool<Object, List<String>, Long> pool = new WriterPool<>("job", List.of(keyed), capacity);
      pool.start();
      pool.send(0, 1L);
      pool.send(0, new Gone(1));
      pool.send(0, 2L);
      assertThat(pool.checkpoint(1).get(0).info()).as("capacity %s", capacity)
          .contains(List.of("write 1", "delete 1", "write 2"));
      pool.finish();
    }

    WriterPool<Object, List<String>, Long> pool = new WriterPool<>("job", List.of(new Appending()), 1);
    pool.start();
    pool.send(0, new Gone(7));
    assertThatThrownBy(() -> pool.checkpoint(1)).isInstanceOf(JobFailedException.class)
        .hasMessageContaining("Gone[key=7] is a delete, but the job's writers only add rows");
    pool.stop();
  }
}
