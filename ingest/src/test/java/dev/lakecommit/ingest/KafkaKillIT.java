package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.lakecommit.core.testing.KafkaBroker;
import dev.lakecommit.core.testing.TestScale;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The exactly-once audit of a Kafka stream: messages with unique ids and event times produced while the tool runs
 * unbounded in its own process; the tool is killed with SIGKILL and the broker stopped and restarted at random
 * moments (seeded); at the end SIGTERM, and {@code verify} against the topic must show a duplicate rate of 0, a loss
 * rate of 0 and an out-of-order rate of at most 0.1 %. Plus two copies of the tool on one job (fencing).
 */
class KafkaKillIT {
  @TempDir Path dir;
  private KafkaBroker broker;

  @AfterEach
  void stopBroker() {
    if (broker != null) {
      broker.close();
    }
  }

  private List<String> command(String topic, String jobId, String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", "kafka://" + broker.bootstrapServers() + "/"
        + topic, "--table", "load.events", "--warehouse", dir.resolve("wh").toString(), "--schema",
        "id long, kind string, ts long", "--job-id", jobId, "--parallelism", "2", "--checkpoint-interval", "1s"));
    args.addAll(List.of(extra));
    return KillLoop.command(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), args);
  }

  private JsonNode audit(String topic) throws Exception {
    CliRun verify = CliRun.of("verify", "--source", "kafka://" + broker.bootstrapServers() + "/" + topic,
        "--table", "load.events", "--warehouse", dir.resolve("wh").toString(), "--key", "id", "--event-time", "ts",
        "--schema", "id long, kind string, ts long", "--json");
    System.out.println("KafkaKillIT audit: " + verify.out().replaceAll("\\s+", " "));
    assertThat(verify.exitCode()).as("%s", verify).isZero();
    return new ObjectMapper().readTree(verify.out());
  }

  @Test
  void sigkillsAndBrokerRestartsWhileStreamingLoseAndDuplicateNothing() throws Exception {
    long seed = TestScale.seed();
    Random random = new Random(seed);
    int messages = TestScale.pick(40_000, 1_000_000);
    int kills = TestScale.pick(3, 9);
    int brokerRestarts = TestScale.pick(1, 3);
    System.out.printf("KafkaKillIT seed %d: %,d messages, %d SIGKILLs, %d broker restarts%n", seed, messages, kills,
        brokerRestarts);
    broker = KafkaBroker.inProcess(dir.resolve("kafka"));
    broker.createTopic("stream", 4);

    // The producer writes transactions of 200 while the test holds no fault; a broker restart waits for the
    // transaction in flight (the producer's own exactly-once is not under test here).
    ReentrantLock betweenTransactions = new ReentrantLock();
    AtomicLong produced = new AtomicLong();
    AtomicReference<Throwable> producerFailure = new AtomicReference<>();
    // About 2,000 messages a second, so that the faults land while the stream flows.
    Thread producer = new Thread(() -> {
      try {
        KafkaProducer<String, String> writer = null;
        for (long id = 0; id < messages; id += 200) {
          Thread.sleep(100); // pacing of the load, not synchronisation
          betweenTransactions.lock();
          try {
            if (writer == null) {
              writer = KafkaTopics.producer(broker, "stream-writer");
            }
            KafkaTopics.produce(writer, "stream", id, Math.min(messages, id + 200), 200, false);
            produced.set(Math.min(messages, id + 200));
          } finally {
            betweenTransactions.unlock();
          }
        }
        writer.close();
      } catch (Throwable e) {
        producerFailure.set(e);
      }
    }, "producer");
    producer.start();

    List<String> command = command("stream", "stream-job", "--checkpoint-every-records", "20000");
    int run = 0;
    Process process = null;
    Path log = null;
    List<String> faults = new ArrayList<>();
    for (int i = 0; i < kills; i++) {
      faults.add("sigkill");
    }
    for (int i = 0; i < brokerRestarts; i++) {
      faults.add(1 + random.nextInt(faults.size()), "broker");
    }
    try {
      for (String fault : faults) {
        if (process == null || !process.isAlive()) {
          log = dir.resolve("run-" + ++run + ".log");
          process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        }
        // past start-up, then a random moment (in a commit, between checkpoints, while catching up)
        KillLoop.awaitOutput(process, log, "Ingesting ");
        process.waitFor(500 + random.nextInt(3000), TimeUnit.MILLISECONDS);
        if (fault.equals("sigkill")) {
          process.destroyForcibly().waitFor();
          System.out.printf("KafkaKillIT: SIGKILL of run %d at %,d messages produced%n", run, produced.get());
        } else {
          betweenTransactions.lock();
          try {
            broker.stop();
            System.out.printf("KafkaKillIT: broker stopped at %,d messages produced%n", produced.get());
            process.waitFor(1000 + random.nextInt(3000), TimeUnit.MILLISECONDS); // the outage lasts this long
            broker.start();
          } finally {
            betweenTransactions.unlock();
          }
        }
      }
      producer.join(TimeUnit.MINUTES.toMillis(5));
      assertThat(producerFailure.get()).as("the producer").isNull();
      assertThat(produced.get()).isEqualTo(messages);
      if (!process.isAlive()) {
        log = dir.resolve("run-" + ++run + ".log");
        process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      }
      awaitCaughtUp(process, log);
      process.destroy(); // SIGTERM: the current checkpoint is committed, exit 0
      assertThat(process.waitFor(2, TimeUnit.MINUTES)).isTrue();
      assertThat(process.exitValue()).as("seed %s: %s", seed, Files.readString(log)).isZero();
    } finally {
      if (process != null) {
        process.destroyForcibly();
      }
    }

    JsonNode report = audit("stream");
    assertThat(report.get("sourceRows").asLong()).isEqualTo(messages);
    assertThat(report.get("duplicateKeys").asLong()).as("seed %s", seed).isZero();
    assertThat(report.get("lostKeys").asLong()).as("seed %s", seed).isZero();
    assertThat(report.get("outOfOrderRows").asDouble() / messages).as("seed %s: out-of-order rate", seed)
        .isLessThanOrEqualTo(0.001);
  }

  /** Waits (bounded) until the table's committed offsets reach the topic's end, as {@code status} tells. */
  private void awaitCaughtUp(Process process, Path log) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (true) {
      CliRun status = CliRun.of("status", "--table", "load.events", "--warehouse", dir.resolve("wh").toString(),
          "--json", "--input", "kafka://" + broker.bootstrapServers() + "/stream");
      if (status.out().contains("\"total-lag\" : 0")) {
        return;
      }
      assertThat(process.isAlive()).as(Files.readString(log)).isTrue();
      assertThat(System.nanoTime()).as("caught up within 3 minutes: %s", status).isLessThan(deadline);
      process.waitFor(500, TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Two copies of the same bounded command started at once on one job, SIGKILLs among them: the newer copy fences
   * the older one (a conflict actually observed), and the table holds every message exactly once.
   */
  @Test
  void twoCopiesOnOneJobLoseAndDuplicateNothing() throws Exception {
    long seed = TestScale.seed();
    int messages = TestScale.pick(30_000, 300_000);
    broker = KafkaBroker.inProcess(dir.resolve("kafka"));
    broker.createTopic("twice", 3);
    KafkaTopics.produce(broker, "twice", 0, messages);

    KillLoop.Result result = new KillLoop(dir, "KafkaKillIT racing", seed)
        .runRacing(command("twice", "twice-job", "--until", "end", "--checkpoint-every-records", "3000"),
            TestScale.pick(2, 20), 500);

    String logs = "";
    for (int run = 1; run <= result.runs(); run++) {
      logs += Files.readString(dir.resolve("run-" + run + ".log"));
    }
    JsonNode report = audit("twice");
    assertThat(report.get("sourceRows").asLong()).isEqualTo(messages);
    assertThat(report.get("duplicateKeys").asLong()).as("seed %s", seed).isZero();
    assertThat(report.get("lostKeys").asLong()).as("seed %s", seed).isZero();
    assertThat(logs).as("a copy was fenced by the newer one (seed %s)", seed).containsAnyOf("fenced",
        "running twice");
  }
}
