package dev.lakecommit.core.runtime;

import dev.lakecommit.core.Deletion;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsDeletes;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * N writer threads, each fed by a bounded queue (a full queue blocks the reader: back-pressure). A checkpoint is
 * an aligned barrier: it is queued behind every record read before it, so each writer prepares exactly the
 * records of its checkpoint.
 *
 * <p>Records go to a writer in batches of up to {@value #MAX_BATCH} (a quarter of the queue capacity, if smaller):
 * one hand-over, and at most one wake-up of a waiting writer, per batch instead of per record. A batch is handed
 * over when full, and before a barrier or the end, so a batch never crosses a checkpoint. At most the queue capacity
 * of records is buffered per writer, the batch being filled included.
 */
final class WriterPool<IN, C, S> {
  private static final Logger LOG = LoggerFactory.getLogger(WriterPool.class);
  private static final Object END = new Object();
  private static final long POLL_MILLIS = 50;
  static final int MAX_BATCH = 64;

  /** What one writer returned for a checkpoint. */
  record Prepared<C, S>(Optional<C> info, S state) {}

  private record Barrier<C, S>(long checkpointId, CompletableFuture<Prepared<C, S>> done) {}

  /** Records handed to a writer together, in reading order. */
  private record Batch(List<Object> records) {}

  private final String jobName;
  private final List<SinkWriter<IN, C, S>> writers;
  private final List<BlockingQueue<Object>> queues = new ArrayList<>();
  private final List<CompletableFuture<Void>> failures = new ArrayList<>();
  private final List<Thread> threads = new ArrayList<>();
  private final int batchSize;
  /** Per writer, the batch being filled (by the reading thread only). */
  private final List<List<Object>> filling = new ArrayList<>();

  WriterPool(String jobName, List<SinkWriter<IN, C, S>> writers, int queueCapacity) {
    this.jobName = jobName;
    this.writers = writers;
    this.batchSize = batchSize(queueCapacity);
    // queued batches and the one being filled hold at most queueCapacity records
    int slots = batchSize == 1 ? queueCapacity : Math.max(1, queueCapacity / batchSize - 1);
    for (int i = 0; i < writers.size(); i++) {
      queues.add(new ArrayBlockingQueue<>(slots));
      filling.add(new ArrayList<>(batchSize));
      failures.add(new CompletableFuture<>());
      int index = i;
      Thread thread = new Thread(() -> work(index), "lakecommit-writer-" + jobName + "-" + i);
      thread.setDaemon(true);
      threads.add(thread);
    }
  }

  int size() {
    return writers.size();
  }

  /** Records per hand-over for a queue of {@code queueCapacity} records: 1 below 8, 64 from 256 on. */
  static int batchSize(int queueCapacity) {
    return Math.max(1, Math.min(MAX_BATCH, queueCapacity / 4));
  }

  void start() {
    threads.forEach(Thread::start);
  }

  /** Queues a record for a writer, waiting while its queue is full; fails if that writer failed. */
  void send(int writer, IN record) throws InterruptedException {
    if (batchSize == 1) {
      put(writer, record);
      return;
    }
    rethrowIfFailed(writer);
    List<Object> batch = filling.get(writer);
    batch.add(record);
    if (batch.size() >= batchSize) {
      handOver(writer);
    }
  }

  /** Queues the batch being filled for {@code writer}, if it holds any record. */
  private void handOver(int writer) throws InterruptedException {
    List<Object> batch = filling.get(writer);
    if (!batch.isEmpty()) {
      filling.set(writer, new ArrayList<>(batchSize));
      put(writer, new Batch(batch));
    }
  }

  /** Queues a barrier behind every record sent so far and waits for all writers to prepare. */
  List<Prepared<C, S>> checkpoint(long checkpointId) throws InterruptedException {
    List<CompletableFuture<Prepared<C, S>>> done = new ArrayList<>();
    for (int i = 0; i < writers.size(); i++) {
      CompletableFuture<Prepared<C, S>> future = new CompletableFuture<>();
      done.add(future);
      handOver(i);
      put(i, new Barrier<>(checkpointId, future));
    }
    List<Prepared<C, S>> prepared = new ArrayList<>();
    for (int i = 0; i < writers.size(); i++) {
      try {
        // get(), not join(): a stalled job interrupts the coordinator here
        CompletableFuture.anyOf(done.get(i), failures.get(i)).exceptionally(t -> null).get();
      } catch (ExecutionException e) {
        throw new IllegalStateException("unreachable: failures are mapped to null", e);
      }
      rethrowIfFailed(i);
      try {
        prepared.add(done.get(i).get());
      } catch (ExecutionException e) {
        throw new IllegalStateException("unreachable: barrier failures are reported as writer failures", e);
      }
    }
    return prepared;
  }

  /** Ends the input: every writer stops after what was queued. */
  void finish() throws InterruptedException {
    for (int i = 0; i < writers.size(); i++) {
      handOver(i);
      put(i, END);
    }
    for (int i = 0; i < threads.size(); i++) {
      threads.get(i).join();
      rethrowIfFailed(i);
    }
  }

  /**
   * Stops the threads without letting them take anything more from their queues: each queue is emptied and left
   * with the end mark, which a writer that swallowed the interrupt (some file system clients do) takes next.
   */
  void stop() throws InterruptedException {
    for (BlockingQueue<Object> queue : queues) {
      queue.clear();
      queue.offer(END);
    }
    threads.forEach(Thread::interrupt);
    for (Thread thread : threads) {
      thread.join(TimeUnit.SECONDS.toMillis(30));
    }
  }

  /** Interrupts the writer threads (a stalled job), without waiting for them. */
  void interrupt() {
    threads.forEach(Thread::interrupt);
  }

  List<SinkWriter<IN, C, S>> writers() {
    return writers;
  }

  private void put(int writer, Object item) throws InterruptedException {
    BlockingQueue<Object> queue = queues.get(writer);
    rethrowIfFailed(writer);
    while (!queue.offer(item, POLL_MILLIS, TimeUnit.MILLISECONDS)) {
      rethrowIfFailed(writer);
    }
  }

  private void rethrowIfFailed(int writer) {
    CompletableFuture<Void> failure = failures.get(writer);
    if (!failure.isCompletedExceptionally()) {
      return;
    }
    Throwable cause = failure.handle((v, t) -> t).join();
    if (cause instanceof Error error) {
      throw error;
    }
    throw new JobFailedException(
        "Writer " + writer + " of job " + jobName + " failed: " + cause.getMessage(), cause);
  }

  /** A row to the writer's {@code write}, a {@link Deletion} to its {@code delete}. */
  @SuppressWarnings("unchecked")
  private static <IN> void write(SinkWriter<IN, ?, ?> writer, Object record) throws IOException {
    if (!(record instanceof Deletion)) {
      writer.write((IN) record);
    } else if (writer instanceof SupportsDeletes<?> deletes) {
      ((SupportsDeletes<IN>) deletes).delete((IN) record);
    } else {
      throw new IllegalArgumentException("Record " + record + " is a delete, but the job's writers only add rows: "
          + "deletes need a keyed target (an Iceberg table in upsert mode)");
    }
  }

  @SuppressWarnings("unchecked")
  private void work(int index) {
    SinkWriter<IN, C, S> writer = writers.get(index);
    BlockingQueue<Object> queue = queues.get(index);
    try {
      while (true) {
        Object item = queue.take();
        if (item == END) {
          return;
        }
        if (item instanceof Batch batch) {
          for (Object record : batch.records()) {
            write(writer, record);
          }
        } else if (item instanceof Barrier<?, ?> barrier) {
          long id = barrier.checkpointId();
          Optional<C> info = writer.prepareCommit(id);
          S state = writer.snapshotState(id);
          ((Barrier<C, S>) barrier).done().complete(new Prepared<>(info, state));
        } else {
          write(writer, item);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failures.get(index).completeExceptionally(e);
    } catch (Throwable t) {
      LOG.debug("Writer {} of job {} failed", index, jobName, t);
      failures.get(index).completeExceptionally(t);
    }
  }
}
