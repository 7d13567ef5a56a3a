package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.KafkaBroker;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The stream audit's schedule: a producer writes {@code messages} ids (about 2,000 a second, transactions of 200)
 * while the tool runs unbounded in its own process, and faults of the given kinds hit at seeded random moments —
 * SIGKILL of the tool is built in, every other kind is an action the test gives (a broker restart, a metastore
 * outage, a window of S3 errors). A {@link #fault} runs between the producer's transactions (the producer's own
 * exactly-once is not under test); a {@link #faultWhileProducing} runs while records keep coming, for a fault that
 * only lands while the tool has work (S3 errors hit nothing while it idles). The i-th of n faults is due once
 * i/(n+1) of the messages are produced; the producer does not run more than half a slot (messages/(n+1)/2) past
 * a fault's due point before that fault began, so that at least half a slot of the stream, and a whole slot
 * during a fault that runs while producing, comes after every fault: the tool has work during and after each one.
 * At the end the tool must catch up and exit 0 on SIGTERM.
 */
final class KafkaFaultLoop {
  static final String SIGKILL = "sigkill";

  private final Path dir;
  private final long seed;
  private final Random random;
  private final Map<String, Runnable> actions = new LinkedHashMap<>();
  private final Set<String> whileProducing = new HashSet<>();
  private final ReentrantLock betweenTransactions = new ReentrantLock();

  KafkaFaultLoop(Path dir, long seed) {
    this.dir = dir;
    this.seed = seed;
    this.random = new Random(seed);
  }

  /**
   * A kind of fault run between the producer's transactions: {@code action} injects it and ends it (an outage of a
   * random length).
   */
  KafkaFaultLoop fault(String kind, Runnable action) {
    actions.put(kind, action);
    return this;
  }

  /** A kind of fault run while the producer goes on, so that the tool has records to write during it. */
  KafkaFaultLoop faultWhileProducing(String kind, Runnable action) {
    whileProducing.add(kind);
    return fault(kind, action);
  }

  /**
   * Waits until {@code condition} holds, restarting the tool if it ended by itself (as {@link #run} does), and
   * fails naming {@code what} if it does not hold within {@code bound} — a bound on a broken run, not a timing.
   */
  void awaitWhileRunning(BooleanSupplier condition, Duration bound, Supplier<String> what) {
    long deadline = System.nanoTime() + bound.toNanos();
    try {
      while (!condition.getAsBoolean()) {
        assertThat(System.nanoTime()).as("seed %s: %s within %s", seed, what.get(), bound).isLessThan(deadline);
        ensureRunning(command);
        current.waitFor(100, TimeUnit.MILLISECONDS); // a poll interval, not synchronisation
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A random outage length, 1 to 4 s, waited on the given process (a bounded wait, not synchronisation). */
  void outage(Process process) {
    try {
      process.waitFor(1000 + random.nextInt(3000), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** A bounded wait on the tool's process (a poll interval). */
  void pause(long millis) {
    try {
      current.waitFor(millis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private List<String> command;
  private Process current;
  private int runs;
  private Path log;
  private boolean killed;

  /** Starts the tool again if it is not running: after a SIGKILL, or after it ended by itself. */
  private void ensureRunning(List<String> command) throws IOException {
    if (current != null && current.isAlive()) {
      return;
    }
    reportEndedByItself();
    log = dir.resolve("run-" + ++runs + ".log");
    current = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    killed = false;
  }

  /**
   * A run that was not killed but ended (an outage it gave up on) is restarted as a supervisor would; the output
   * says so, with its exit code and last line, since a restart like that is not one of the injected faults.
   */
  private void reportEndedByItself() throws IOException {
    if (current == null || killed) {
      return;
    }
    List<String> lines = Files.readAllLines(log);
    System.out.printf("KafkaFaultLoop seed %d: run %d ended by itself with exit %d: %s%n", seed, runs,
        current.exitValue(), lines.isEmpty() ? "" : lines.get(lines.size() - 1));
  }

  /** The tool's process now running (for an outage's length). */
  Process process() {
    return current;
  }

  /** The message count at which the {@code i}-th (from 0) of {@code n} faults is due: (i+1)/(n+1) of them. */
  private static long due(long messages, int n, int i) {
    return messages * (i + 1) / (n + 1);
  }

  /**
   * Runs the schedule: {@code perKind} faults of each kind (SIGKILL plus the given ones) in a seeded order, spread
   * over the stream (the i-th of n once i/(n+1) of the messages are produced, the tool running in between), while
   * {@code messages} are produced to {@code topic}; then waits until {@code caughtUp} says the table holds the topic's
   * end offsets, sends SIGTERM and checks the exit code 0.
   */
  void run(KafkaBroker broker, String topic, long messages, List<String> command, int perKind,
      Supplier<Boolean> caughtUp) throws Exception {
    List<String> faults = new ArrayList<>();
    for (int i = 0; i < perKind; i++) {
      faults.add(SIGKILL);
      faults.addAll(actions.keySet());
    }
    Collections.shuffle(faults, random);
    this.command = List.copyOf(command);
    System.out.printf("KafkaFaultLoop seed %d: %,d messages, faults %s%n", seed, messages, faults);
    AtomicLong produced = new AtomicLong();
    AtomicReference<Throwable> producerFailure = new AtomicReference<>();
    // a broker restart may outlast the client's own timeouts: the writer aborts and re-sends, or retries a commit
    TransactionalBatches writer = new TransactionalBatches(broker, topic + "-writer", Duration.ofMinutes(5));
    // the producer waits half a slot past a fault's due point until that fault began: work for the tool after it
    long halfSlot = messages / (faults.size() + 1) / 2;
    List<CountDownLatch> began = new ArrayList<>();
    for (int i = 0; i < faults.size(); i++) {
      began.add(new CountDownLatch(1));
    }
    Thread producer = new Thread(() -> {
      try (writer) {
        int next = 0;
        for (long id = 0; id < messages; id += 200) {
          while (next < faults.size() && id >= due(messages, faults.size(), next) + halfSlot) {
            if (!began.get(next).await(1, TimeUnit.HOURS)) {
              throw new IllegalStateException("Fault " + next + " did not begin within an hour");
            }
            next++;
          }
          Thread.sleep(100); // pacing of the load, not synchronisation
          betweenTransactions.lock();
          try {
            writer.commit(topic, id, Math.min(messages, id + 200));
            produced.set(Math.min(messages, id + 200)); // only a batch whose commit returned counts
          } finally {
            betweenTransactions.unlock();
          }
        }
      } catch (Throwable e) {
        producerFailure.set(e);
      }
    }, "producer");
    producer.start();
    long begin = System.nanoTime();
    // 2,000 messages a second at best; a loaded machine gets up to 1 ms a message, plus 10 minutes
    long producerBound = TimeUnit.MINUTES.toNanos(10) + TimeUnit.MILLISECONDS.toNanos(messages);
    try {
      for (int i = 0; i < faults.size(); i++) {
        String fault = faults.get(i);
        // spread over the stream: the i-th of n faults once i/(n+1) of the messages are in, the tool running
        long due = due(messages, faults.size(), i);
        while (produced.get() < due && producer.isAlive()) {
          assertThat(System.nanoTime() - begin).as("seed %s: %,d messages produced in time", seed, due)
              .isLessThan(producerBound);
          ensureRunning(command);
          current.waitFor(200, TimeUnit.MILLISECONDS); // a poll interval, not synchronisation
        }
        ensureRunning(command);
        // past start-up, then a random moment (in a commit, between checkpoints, while catching up)
        KillLoop.awaitOutput(current, log, "Ingesting ");
        current.waitFor(500 + random.nextInt(3000), TimeUnit.MILLISECONDS);
        began.get(i).countDown();
        if (fault.equals(SIGKILL)) {
          current.destroyForcibly().waitFor();
          killed = true;
        } else if (whileProducing.contains(fault)) {
          actions.get(fault).run();
        } else {
          betweenTransactions.lock();
          try {
            actions.get(fault).run();
          } finally {
            betweenTransactions.unlock();
          }
        }
        System.out.printf("KafkaFaultLoop seed %d: %s in run %d at %,d messages produced, %d s in%n", seed, fault,
            runs, produced.get(), TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - begin));
      }
      ensureRunning(command);
      producer.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(producerBound - (System.nanoTime() - begin))));
      System.out.printf("KafkaFaultLoop seed %d: %s; %,d messages in %d s%n", seed, writer, produced.get(),
          TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - begin));
      assertThat(producerFailure.get()).as("seed %s: the producer", seed).isNull();
      assertThat(produced.get()).as("seed %s: messages produced", seed).isEqualTo(messages);
      ensureRunning(command);
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
      while (!caughtUp.get()) {
        assertThat(current.isAlive()).as("seed %s: %s", seed, Files.readString(log)).isTrue();
        assertThat(System.nanoTime()).as("seed %s: caught up within 10 minutes", seed).isLessThan(deadline);
        current.waitFor(500, TimeUnit.MILLISECONDS);
      }
      System.out.printf("KafkaFaultLoop seed %d: caught up after %d s in %d runs%n", seed,
          TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - begin), runs);
      current.destroy(); // SIGTERM: the current checkpoint is committed, exit 0
      assertThat(current.waitFor(2, TimeUnit.MINUTES)).isTrue();
      assertThat(current.exitValue()).as("seed %s: %s", seed, Files.readString(log)).isZero();
    } finally {
      began.forEach(CountDownLatch::countDown);
      if (current != null) {
        current.destroyForcibly();
      }
      producer.interrupt();
    }
  }
}
