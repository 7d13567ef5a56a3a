package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.lakecommit.core.testing.KafkaBroker;
import dev.lakecommit.core.testing.TestScale;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
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
        "id long, kind string, ts long", "--job-id", jobId, "--parallelism", "2"));
    if (!List.of(extra).contains("--checkpoint-interval")) {
      args.addAll(List.of("--checkpoint-interval", "1s"));
    }
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

  /** Starts the test's broker with a topic of {@code partitions} holding messages 0 to {@code messages} - 1. */
  private void startBrokerWith(String topic, int partitions, int messages) {
    broker = KafkaBroker.inProcess(dir.resolve("kafka"));
    broker.createTopic(topic, partitions);
    KafkaTopics.produce(broker, topic, 0, messages);
  }

  /** Waits until the tool has committed the whole topic, then stops it with SIGTERM (which commits, exit 0). */
  private void stopOnceCaughtUp(Process process, Path log, String topic) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (!caughtUp(topic)) {
      assertThat(System.nanoTime()).as("the tool caught up within 2 minutes").isLessThan(deadline);
      assertThat(process.isAlive()).as("%s", Files.readString(log)).isTrue();
    }
    process.destroy();
    assertThat(process.waitFor(2, TimeUnit.MINUTES)).isTrue();
  }

  @Test
  void sigkillsAndBrokerRestartsWhileStreamingLoseAndDuplicateNothing() throws Exception {
    long seed = TestScale.seed();
    int messages = TestScale.pick(40_000, 1_000_000);
    broker = KafkaBroker.inProcess(dir.resolve("kafka"));
    broker.createTopic("stream", 4);
    KafkaFaultLoop loop = new KafkaFaultLoop(dir, seed);
    loop.fault("broker-restart", () -> {
      broker.stop();
      loop.outage(loop.process());
      broker.start();
    });

    loop.run(broker, "stream", messages, command("stream", "stream-job", "--checkpoint-every-records", "20000"),
        TestScale.pick(2, 5), () -> caughtUp("stream"));

    JsonNode report = audit("stream");
    assertThat(report.get("sourceRows").asLong()).isEqualTo(messages);
    assertThat(report.get("duplicateKeys").asLong()).as("seed %s", seed).isZero();
    assertThat(report.get("lostKeys").asLong()).as("seed %s", seed).isZero();
    assertThat(report.get("outOfOrderRows").asDouble() / messages).as("seed %s: out-of-order rate", seed)
        .isLessThanOrEqualTo(0.001);
  }

  /** Whether the table's committed offsets reached the topic's end, as {@code status} tells. */
  private boolean caughtUp(String topic) {
    CliRun status = CliRun.of("status", "--table", "load.events", "--warehouse", dir.resolve("wh").toString(),
        "--json", "--input", "kafka://" + broker.bootstrapServers() + "/" + topic);
    return KafkaTopics.caughtUp(status.out());
  }

  /**
   * Two copies of the same bounded command started at once on one job, SIGKILLs among them: the newer copy fences
   * the older one (a conflict actually observed), and the table holds every message exactly once.
   */
  @Test
  void twoCopiesOnOneJobLoseAndDuplicateNothing() throws Exception {
    long seed = TestScale.seed();
    int messages = TestScale.pick(30_000, 1_000_000);
    broker = KafkaBroker.inProcess(dir.resolve("kafka"));
    broker.createTopic("twice", 3);
    KafkaTopics.produce(broker, "twice", 0, messages);

    KillLoop.Result result = new KillLoop(dir, "KafkaKillIT racing", seed)
        .runRacing(command("twice", "twice-job", "--until", "end", "--checkpoint-every-records", "3000"),
            TestScale.pick(2, 20), 500);

    System.out.printf("KafkaKillIT racing seed %d: %,d messages, %d runs, %d SIGKILLs%n", seed, messages,
        result.runs(), result.killed());
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

  /**
   * A broker outage while the tool works through a backlog: what it had read is committed once (the checkpoint in
   * flight and one more), not a few held-back records per checkpoint interval for the whole outage (ten commits of 2
   * records in this test before holding stopped at an outage); the tool says once that the broker does not answer and
   * once that it is back, with the outage's length, and none of the Kafka client's warnings per connection attempt
   * reach its log.
   */
  @Test
  void aBrokerOutageIsOneCommitAndTwoLines() throws Exception {
    int backlog = 200_000;
    startBrokerWith("quiet", 4, backlog);
    Path log = dir.resolve("quiet.log");
    Process process = new ProcessBuilder(command("quiet", "quiet-job")).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    String duringOutage;
    try {
      KillLoop.awaitOutput(process, log, "Committed checkpoint ");
      broker.stop();
      long stoppedNanos = System.nanoTime();
      long stoppedAt = Files.size(log);
      KillLoop.awaitOutput(process, log, "has not answered for");
      // The outage's length, not a wait for something to happen: 8 s from the stop (the tool notices after 3 s; five
      // checkpoint intervals more without a broker), 30 s in the long profile.
      long outageMillis = TestScale.pick(8_000, 30_000);
      process.waitFor(outageMillis - (System.nanoTime() - stoppedNanos) / 1_000_000, TimeUnit.MILLISECONDS);
      String upToRestart = Files.readString(log);
      duringOutage = upToRestart.substring((int) Math.min(stoppedAt, upToRestart.length()));
      broker.start();
      KillLoop.awaitOutput(process, log, "answers again after");
      KafkaTopics.produce(broker, "quiet", backlog, backlog + 2_000);
      stopOnceCaughtUp(process, log, "quiet");
    } finally {
      process.destroyForcibly();
    }
    String out = Files.readString(log);
    System.out.println("KafkaKillIT outage, the tool's warnings and outage lines: " + out.lines()
        .filter(line -> line.contains(" WARN ") || line.contains("answers again")).toList());
    assertThat(process.exitValue()).as(out).isZero();
    long commitsDuringOutage = java.util.regex.Pattern.compile("Committed checkpoint (\\d+) ").matcher(duringOutage)
        .results().map(match -> match.group(1)).distinct().count();
    System.out.println("KafkaKillIT outage: " + commitsDuringOutage + " commits while the broker was away: "
        + duringOutage.lines().filter(line -> line.contains(" complete: ")).toList());
    assertThat(commitsDuringOutage).as("what was read before the outage is one commit, not a trickle: %s",
        duringOutage).isLessThanOrEqualTo(2);
    assertThat(out.split("has not answered for", -1)).as(out).hasSize(2);
    assertThat(out.split("answers again after", -1)).as(out).hasSize(2);
    assertThat(out).as("the client's warnings stay at --verbose").doesNotContain("NetworkClient")
        .doesNotContain("could not be established");
    JsonNode report = audit("quiet");
    assertThat(report.get("sourceRows").asLong()).isEqualTo(backlog + 2_000);
    assertThat(report.get("duplicateKeys").asLong()).isZero();
    assertThat(report.get("lostKeys").asLong()).isZero();
    // a broker that shuts down answers with errors first: records held for a partition wait through that too
    assertThat(report.get("outOfOrderRows").asDouble() / (backlog + 2_000)).as("out-of-order rate")
        .isLessThanOrEqualTo(0.001);
  }

  /**
   * A run started while the broker is down: it waits for the broker, and its first commit comes within two
   * checkpoint intervals of the broker's return, with every message of the backlog once.
   */
  @Test
  void aRunStartedWhileTheBrokerIsDownCommitsWithinTwoIntervalsOfItsReturn() throws Exception {
    int backlog = 20_000;
    startBrokerWith("late", 2, backlog);
    broker.stop();
    Path log = dir.resolve("late.log");
    Duration interval = Duration.ofSeconds(3);
    Process process = new ProcessBuilder(command("late", "late-job", "--checkpoint-interval",
        interval.toSeconds() + "s"))
        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    long backAt;
    long committedAt;
    try {
      KillLoop.awaitOutput(process, log, "does not answer: the job waits for its brokers");
      assertThat(process.isAlive()).as("%s", Files.readString(log)).isTrue();
      broker.start();
      backAt = System.nanoTime();
      KillLoop.awaitOutput(process, log, "Committed checkpoint ");
      committedAt = System.nanoTime();
      assertThat(process.isAlive()).as("%s", Files.readString(log)).isTrue();
      stopOnceCaughtUp(process, log, "late");
    } finally {
      process.destroyForcibly();
    }
    String out = Files.readString(log);
    assertThat(process.exitValue()).as(out).isZero();
    System.out.printf("KafkaKillIT late start: first commit %.1f s after the broker was back%n",
        (committedAt - backAt) / 1e9);
    assertThat(Duration.ofNanos(committedAt - backAt)).as(out).isLessThanOrEqualTo(interval.multipliedBy(2));
    JsonNode report = audit("late");
    assertThat(report.get("sourceRows").asLong()).isEqualTo(backlog);
    assertThat(report.get("duplicateKeys").asLong()).isZero();
    assertThat(report.get("lostKeys").asLong()).isZero();
  }

  /**
   * Debezium change events ({@code --format debezium}: a snapshot, then creates, updates and deletes with tombstones,
   * in source transactions of 1 to 8 events with Debezium's transaction topic) applied by key in a bounded run that
   * is SIGKILLed at seeded moments — mostly just after a checkpoint, so in its commit too — and rerun with the same
   * command until it finishes: the table equals the source table, so every upsert and delete was applied once (a
   * delete applied again would remove a row written after it; an upsert lost or doubled would show as a wrong or a
   * second row), and every snapshot of the table after the source's snapshot shows the source table after whole
   * transactions ({@code --transaction-topic}), also those committed by runs that resumed after a kill.
   */
  @Test
  void debeziumChangesUnderSigkillsLeaveTheTableEqualToTheSourceTable() throws Exception {
    long seed = TestScale.seed();
    int changes = TestScale.pick(10_000, 300_000);
    broker = KafkaBroker.inProcess(dir.resolve("kafka"));
    broker.createTopic("dbz-customers", 3);
    broker.createTopic("dbz-customers.transaction", 1);
    DebeziumTopic source = new DebeziumTopic("dbz-customers", 3, changes / 10, seed);
    // the source table after each transaction, as hashes of its rows
    java.util.Set<Integer> states = new java.util.HashSet<>();
    Map<Long, String> snapshot;
    java.util.Properties properties = new java.util.Properties();
    properties.put("bootstrap.servers", broker.bootstrapServers());
    try (org.apache.kafka.clients.producer.KafkaProducer<String, String> producer =
        new org.apache.kafka.clients.producer.KafkaProducer<>(properties,
            new org.apache.kafka.common.serialization.StringSerializer(),
            new org.apache.kafka.common.serialization.StringSerializer())) {
      source.snapshot(producer, changes / 10);
      snapshot = source.model();
      states.add(snapshot.hashCode());
      java.util.Random sizes = new java.util.Random(seed);
      for (int produced = 0, t = 0; produced < changes; t++) {
        String id = "tx-" + t;
        DebeziumTopic.marker(producer, "dbz-customers.transaction", id, false, 0);
        source.transaction(id);
        int events = source.changes(producer, 1 + sizes.nextInt(8));
        DebeziumTopic.marker(producer, "dbz-customers.transaction", id, true, events);
        states.add(source.model().hashCode());
        produced += events;
      }
    }
    List<String> args = List.of("ingest", "--input", "kafka://" + broker.bootstrapServers()
        + "/dbz-customers,dbz-customers.transaction", "--format", "debezium", "--transaction-topic",
        "dbz-customers.transaction", "--table", "shop.customers", "--warehouse", dir.resolve("wh").toString(),
        "--schema", "id long not null, name string, qty int", "--upsert-key", "id", "--job-id", "customers-cdc",
        "--until", "end", "--checkpoint-every-records", "1000", "--parallelism", "2");
    KillLoop.Result result = new KillLoop(dir, "KafkaKillIT debezium", seed).run(
        KillLoop.command(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), args), TestScale.pick(2, 8), 1500);
    System.out.printf("KafkaKillIT debezium seed %d: %d runs, %d killed, resumed from checkpoints %s%n", seed,
        result.runs(), result.killed(), result.resumedFrom());
    assertThat(result.killed()).as("seed %s: runs killed", seed).isEqualTo(TestScale.pick(2, 8));
    assertThat(result.resumedFrom()).as("seed %s: runs resumed from checkpoints", seed).isNotEmpty();
    Map<Long, String> model = source.model();
    assertThat(DebeziumTopic.tableRows(dir.resolve("wh"))).as("seed %s", seed).isEqualTo(model);

    org.apache.iceberg.Table table = org.apache.iceberg.CatalogUtil.buildIcebergCatalog("lakecommit", Map.of(
        "type", "jdbc", "uri", "jdbc:sqlite:" + dir.resolve("wh").resolve("catalog.db").toAbsolutePath(),
        "warehouse", dir.resolve("wh").toUri().toString(), "jdbc.schema-version", "V1"),
        new org.apache.hadoop.conf.Configuration()).loadTable(
            org.apache.iceberg.catalog.TableIdentifier.of("shop", "customers"));
    List<org.apache.iceberg.Snapshot> snapshots = new ArrayList<>();
    table.snapshots().forEach(snapshots::add);
    int checked = 0;
    for (org.apache.iceberg.Snapshot at : snapshots) {
      Map<Long, String> rows = new java.util.TreeMap<>();
      try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.data.Record> read =
          org.apache.iceberg.data.IcebergGenerics.read(table).useSnapshot(at.snapshotId()).build()) {
        read.forEach(row -> rows.put((Long) row.getField("id"), row.getField("name") + "|" + row.getField("qty")));
      }
      if (!snapshot.entrySet().containsAll(rows.entrySet()) || rows.equals(snapshot)) {
        // after the source's snapshot (whose reads are no transaction)
        assertThat(states).as("seed %s: snapshot %s (checkpoint %s) shows whole transactions", seed,
            at.snapshotId(), at.summary().get(dev.lakecommit.core.CommitId.CHECKPOINT_ID_KEY))
            .contains(rows.hashCode());
        checked++;
      }
    }
    assertThat(checked).as("seed %s: snapshots after whole transactions", seed).isGreaterThan(10);
  }
}
