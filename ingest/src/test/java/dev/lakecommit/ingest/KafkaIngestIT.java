package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.KafkaBroker;
import dev.lakecommit.core.testing.LoopbackPorts;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code lakecommit ingest --input kafka://...} against a real Kafka broker (KRaft, in this JVM): read_committed,
 * offsets in the checkpoint and in the table, resume exactly, retention gaps, new partitions, SIGTERM.
 */
class KafkaIngestIT {
  @TempDir static Path brokerDir;
  static KafkaBroker broker;
  @TempDir Path dir;

  @BeforeAll
  static void startBroker() {
    broker = KafkaBroker.inProcess(brokerDir);
  }

  @AfterAll
  static void stopBroker() {
    if (broker != null) {
      broker.close();
    }
  }

  private String input(String topic) {
    return "kafka://" + broker.bootstrapServers() + "/" + topic;
  }

  private List<String> ingest(String topic, String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input(topic), "--table", "load.events",
        "--warehouse", dir.resolve("wh").toString(), "--schema", "id long, kind string, ts long",
        "--checkpoint-every-records", "300", "--parallelism", "2"));
    args.addAll(List.of(extra));
    return args;
  }

  private CliRun verify(String topic) {
    return CliRun.of("verify", "--source", input(topic), "--table", "load.events", "--warehouse",
        dir.resolve("wh").toString(), "--key", "id", "--json");
  }

  private static String offsets(Map<TopicPartition, Long> end) {
    return end.entrySet().stream().sorted(Map.Entry.comparingByKey(
        java.util.Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition)))
        .map(e -> e.getKey().topic() + ":" + e.getKey().partition() + "=" + e.getValue())
        .collect(java.util.stream.Collectors.joining(","));
  }

  private static String scrape(int port) throws Exception {
    java.net.http.HttpResponse<String> response = java.net.http.HttpClient.newHttpClient().send(
        java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).isEqualTo(200);
    return response.body();
  }

  /**
   * JSON messages are read straight into records while they are clean ASCII objects, the others the map's way: a run
   * that reads every message the map's way gives the same table, the same dead letters and the same stop at a field
   * the schema lacks. Messages of every kind: plain, not ASCII, cut, an array, a duplicate key, a value that does not
   * fit, spread over lines, a value after the object, nulls.
   */
  @Test
  void jsonMessagesOfEveryKindLandAsTheMapsWayLandsThem() throws Exception {
    String topic = "mixed";
    broker.createTopic(topic, 1);
    List<String> values = List.of("{\"id\": 1, \"kind\": \"a\", \"ts\": 10}", "{\"id\": 2, \"kind\": \"\u00e9t\u00e9\"}",
        "{\"id\": 3, \"kind\":", "[1, 2]", "{\"id\": 4, \"id\": 5}", "{\"id\": 6, \"ts\": \"soon\"}",
        "{\n  \"id\": 7,\n  \"kind\": \"pretty\"\n}", "{\"id\": 8} x", "{\"id\": 9, \"kind\": null, \"ts\": 90}  ",
        "{\"id\": 10, \"ts\": 1e3}", "{\"id\": 11, \"kind\": 12.50, \"ts\": -3}");
    try (KafkaProducer<String, String> producer = KafkaTopics.producer(broker, "mixed-writer")) {
      KafkaTopics.inTransaction(producer, () -> values.forEach(value ->
          producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>(topic, 0, null, value))));
    }
    List<String> outcomes = new ArrayList<>();
    for (boolean direct : new boolean[] {true, false}) {
      String table = "direct" + direct;
      dev.lakecommit.ingest.source.SourceSwitches.directJson(direct);
      try {
        List<String> args = new ArrayList<>(ingest(topic, "--until", "end", "--bad-records",
            dir.resolve("dead-" + direct).toString()));
        args.set(args.indexOf("load.events"), "load." + table);
        CliRun run = CliRun.of(args.toArray(String[]::new));
        assertThat(run.exitCode()).as("%s", run).isEqualTo(4);
        StringBuilder outcome = new StringBuilder(run.out().replaceAll("snapshot \\d+|job \\S+", "")).append('\n');
        org.apache.iceberg.Table loaded = org.apache.iceberg.CatalogUtil.buildIcebergCatalog("lakecommit", Map.of(
            "type", "jdbc", "uri", "jdbc:sqlite:" + dir.resolve("wh/catalog.db").toAbsolutePath(),
            "warehouse", dir.resolve("wh").toUri().toString(), "jdbc.schema-version", "V1"),
            new org.apache.hadoop.conf.Configuration()).loadTable(
                org.apache.iceberg.catalog.TableIdentifier.of("load", table));
        List<String> rows = new ArrayList<>();
        try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.data.Record> read =
            org.apache.iceberg.data.IcebergGenerics.read(loaded).select("id", "kind", "ts").build()) {
          read.forEach(r -> rows.add(r.getField("id") + "|" + r.getField("kind") + "|" + r.getField("ts")));
        }
        rows.sort(null);
        outcome.append(rows).append('\n');
        try (java.util.stream.Stream<Path> dead = Files.walk(dir.resolve("dead-" + direct))) {
          for (Path file : dead.filter(Files::isRegularFile).sorted().toList()) {
            outcome.append(Files.readString(file).replaceAll("\"job[^,]*,", ""));
          }
        }
        broker.createTopic(topic + "-" + direct, 1);
        try (KafkaProducer<String, String> producer = KafkaTopics.producer(broker, "mixed-" + direct)) {
          KafkaTopics.inTransaction(producer, () -> producer.send(
              new org.apache.kafka.clients.producer.ProducerRecord<>(topic + "-" + direct, 0, null,
                  "{\"id\": 12, \"extra\": 1}")));
        }
        CliRun unknown = CliRun.of(ingest(topic + "-" + direct, "--until", "end").toArray(String[]::new));
        outcome.append(unknown.exitCode()).append(' ').append((unknown.out() + unknown.err())
            .replace(topic + "-" + direct, "TOPIC").replaceAll("\\s+", " "));
        outcomes.add(outcome.toString().replace(table, "TABLE").replace("dead-" + direct, "DEAD")
            .replaceAll("job \\S+|in \\d+ ms", ""));
      } finally {
        dev.lakecommit.ingest.source.SourceSwitches.directJson(true);
      }
    }
    assertThat(outcomes.get(0)).isEqualTo(outcomes.get(1)).contains("Column 'extra'")
        .contains("1|a|10", "2|\u00e9t\u00e9|null", "7|pretty|null", "9|null|90", "11|12.50|-3");
  }

  /** Synchronous and pipelined commits: the offsets in the table are those of the checkpoint each commit made. */
  @ParameterizedTest(name = "--max-uncommitted-checkpoints {0}")
  @ValueSource(strings = {"0", "2"})
  void boundedRunsReadOnlyCommittedRecordsAndResumeExactly(String uncommitted) throws Exception {
    String topic = "orders-" + uncommitted;
    broker.createTopic(topic, 3);
    try (KafkaProducer<String, String> producer = KafkaTopics.producer(broker, "orders-writer-" + uncommitted)) {
      KafkaTopics.produce(producer, topic, 0, 1_000, 100, false);
      KafkaTopics.produce(producer, topic, 5_000, 5_200, 100, true);
    }

    CliRun first = CliRun.of(
        ingest(topic, "--until", "end", "--max-uncommitted-checkpoints", uncommitted).toArray(String[]::new));
    assertThat(first.exitCode()).as("%s", first).isZero();
    assertThat(first.out()).contains("Committed 1,000 rows");

    // The table alone tells where the job stands: its offsets are the topic's end offsets.
    CliRun status = CliRun.of("status", "--table", "load.events", "--warehouse", dir.resolve("wh").toString(),
        "--json", "--input", input(topic));
    assertThat(status.exitCode()).as("%s", status).isZero();
    assertThat(status.out()).contains("\"total-lag\" : 0");
    CliRun again = CliRun.of(
        ingest(topic, "--until", "end", "--max-uncommitted-checkpoints", uncommitted).toArray(String[]::new));
    assertThat(again.exitCode()).as("%s", again).isZero();
    assertThat(again.out()).contains("Nothing new to commit");

    KafkaTopics.produce(broker, topic, 1_000, 1_500);
    CliRun third = CliRun.of(
        ingest(topic, "--until", "end", "--max-uncommitted-checkpoints", uncommitted).toArray(String[]::new));
    assertThat(third.exitCode()).as("%s", third).isZero();
    assertThat(third.out()).contains("Committed 500 rows");
    String plain = CliRun.of("status", "--table", "load.events", "--warehouse", dir.resolve("wh").toString())
        .out();
    assertThat(plain).contains("committed offsets " + offsets(broker.endOffsets(topic)));

    CliRun verify = verify(topic);
    assertThat(verify.exitCode()).as("%s", verify).isZero();
    assertThat(verify.out()).contains("\"sourceRows\" : 1500").contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");
  }

  /**
   * A Kafka job starts its consumer while its table opens (so that a restart reads sooner); a job whose table never
   * opens closes that consumer: no client is left behind in the process (the clients' registered MBeans counted).
   */
  @Test
  void theConsumerStartedWhileTheTableOpensIsClosedWhenTheTableFails() throws Exception {
    broker.createTopic("early", 2);
    KafkaTopics.produce(broker, "early", 0, 10);
    java.nio.file.Path notADirectory = java.nio.file.Files.writeString(dir.resolve("not-a-directory"), "x");
    CliRun failed = CliRun.of("ingest", "--input", input("early"), "--table", "load.events", "--warehouse",
        notADirectory.resolve("wh").toString(), "--schema", "id long, kind string, ts long", "--until", "end");
    assertThat(failed.exitCode()).as("%s", failed).isNotZero();
    assertThat(consumers()).as("Kafka consumers left in this process").isEmpty();

    CliRun ran = CliRun.of(ingest("early", "--until", "end").toArray(String[]::new));
    assertThat(ran.exitCode()).as("%s", ran).isZero();
    assertThat(consumers()).as("Kafka consumers left in this process").isEmpty();
  }

  private static java.util.Set<javax.management.ObjectName> consumers() throws Exception {
    return java.lang.management.ManagementFactory.getPlatformMBeanServer()
        .queryNames(new javax.management.ObjectName("kafka.consumer:type=app-info,*"), null);
  }

  @Test
  void offsetsDeletedByRetentionStopTheJobUnlessTheGapIsAccepted() throws Exception {
    broker.createTopic("clicks", 2);
    KafkaTopics.produce(broker, "clicks", 0, 400);
    assertThat(CliRun.of(ingest("clicks", "--until", "end").toArray(String[]::new)).exitCode()).isZero();
    KafkaTopics.produce(broker, "clicks", 400, 800);
    TopicPartition first = new TopicPartition("clicks", 0);
    long end = broker.endOffsets("clicks").get(first);
    broker.deleteRecordsBefore("clicks", 0, end);

    CliRun refused = CliRun.of(ingest("clicks", "--until", "end").toArray(String[]::new));
    assertThat(refused.exitCode()).as("%s", refused).isEqualTo(3);
    assertThat(refused.err() + refused.out()).contains("Kafka partition clicks-0")
        .contains("no longer in the topic").contains("--on-lost-offsets skip");

    CliRun skipped = CliRun.of(ingest("clicks", "--until", "end", "--on-lost-offsets", "skip")
        .toArray(String[]::new));
    assertThat(skipped.exitCode()).as("%s", skipped).isZero();
    assertThat(skipped.out()).containsPattern("[0-9,]+ record\\(s\\) were deleted by retention");
    CliRun verify = verify("clicks");
    // What is still in the topic is in the table exactly once; the deleted records were reported, not hidden.
    assertThat(verify.out()).contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
  }

  /**
   * Backpressure, proven by counting: every commit is slow (a delay at the catalog boundary) and the producer is far
   * ahead (the whole backlog is in the topic before the job starts), yet the records read from Kafka that no
   * completed checkpoint holds never exceed what the configuration allows — the records of one checkpoint plus the
   * reader's buffer (3 x max.poll.records - 1) — and the buffer's bytes stay under fetch.max.bytes plus one poll.
   */
  @Test
  void aSlowCommitSlowsReadingInsteadOfGrowingWhatIsHeld() throws Exception {
    int messages = 12_000;
    int perCheckpoint = 1_000;
    int maxPollRecords = 100;
    int fetchMaxBytes = 4_096;
    broker.createTopic("backlog", 3);
    KafkaTopics.produce(broker, "backlog", 0, messages);
    long largest = 0;
    for (long id = 0; id < messages; id++) {
      largest = Math.max(largest, Long.toString(id).length() + KafkaTopics.value(id).length());
    }
    Path wh = dir.resolve("slow-wh");
    Files.createDirectories(wh);
    dev.lakecommit.ingest.faults.SlowCommitFileIO.delay(java.time.Duration.ofMillis(150));
    CliRun run;
    try {
      run = CliRun.of("ingest", "--input", input("backlog"), "--table", "load.backlog", "-C", "type=jdbc", "-C",
          "uri=jdbc:sqlite:" + wh.resolve("catalog.db"), "-C", "jdbc.schema-version=V1", "-C", "warehouse="
          + wh.toUri(), "-C", "io-impl=" + dev.lakecommit.ingest.faults.SlowCommitFileIO.class.getName(),
          "--checkpoint-dir", dir.resolve("slow-checkpoints").toString(), "--schema", "id long, kind string, ts long",
          "--checkpoint-every-records", Integer.toString(perCheckpoint), "--parallelism", "2", "--until", "end",
          "-K", "max.poll.records=" + maxPollRecords, "-K", "fetch.max.bytes=" + fetchMaxBytes);
    } finally {
      dev.lakecommit.ingest.faults.SlowCommitFileIO.off();
    }
    assertThat(run.exitCode()).as("%s", run).isZero();
    assertThat(run.out()).contains(String.format("Committed %,d rows", messages));
    java.util.regex.Matcher held = java.util.regex.Pattern.compile("Read ahead of the completed checkpoints: at most"
        + " ([0-9,]+) records; the reader's buffer at most ([0-9,]+) records, ([0-9,]+) bytes").matcher(run.out());
    assertThat(held.find()).as("%s", run).isTrue();
    long inFlight = Long.parseLong(held.group(1).replace(",", ""));
    long buffered = Long.parseLong(held.group(2).replace(",", ""));
    long bufferedBytes = Long.parseLong(held.group(3).replace(",", ""));
    // a checkpoint is taken at its 1,000th record and completes before the next read: all of it was held then
    assertThat(inFlight).isGreaterThanOrEqualTo(perCheckpoint)
        .isLessThanOrEqualTo(perCheckpoint + 3L * maxPollRecords - 1);
    assertThat(buffered).isPositive().isLessThanOrEqualTo(3L * maxPollRecords - 1);
    assertThat(bufferedBytes).isPositive().isLessThanOrEqualTo(fetchMaxBytes + maxPollRecords * largest);
    // every checkpoint's commit (and the run's epoch claim) met the delay; the backlog was far beyond the bound
    assertThat(dev.lakecommit.ingest.faults.SlowCommitFileIO.delayed()).isGreaterThanOrEqualTo(messages
        / perCheckpoint);
    assertThat(messages).isGreaterThan(5 * (perCheckpoint + 3 * maxPollRecords));

    CliRun verify = CliRun.of("verify", "--source", input("backlog"), "--table", "load.backlog", "-C", "type=jdbc",
        "-C", "uri=jdbc:sqlite:" + wh.resolve("catalog.db"), "-C", "jdbc.schema-version=V1", "-C", "warehouse="
        + wh.toUri(), "--key", "id", "--json");
    assertThat(verify.exitCode()).as("%s", verify).isZero();
    assertThat(verify.out()).contains("\"sourceRows\" : " + messages).contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");
  }

  /**
   * {@code --group-id}: the offsets of each table commit are mirrored to the consumer group, for monitoring; the
   * group is never read back — reset to 0 by someone else, it changes nothing about where the job resumes.
   */
  @Test
  void committedOffsetsAreMirroredToTheConsumerGroupButNeverReadBack() throws Exception {
    broker.createTopic("mirrored", 2);
    KafkaTopics.produce(broker, "mirrored", 0, 500);
    CliRun first = CliRun.of(ingest("mirrored", "--until", "end", "--group-id", "lake-monitor")
        .toArray(String[]::new));
    assertThat(first.exitCode()).as("%s", first).isZero();
    Map<TopicPartition, Long> end = broker.endOffsets("mirrored");
    assertThat(groupOffsets("lake-monitor")).isEqualTo(end);

    Map<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> reset = new java.util.HashMap<>();
    end.keySet().forEach(partition -> reset.put(partition, new org.apache.kafka.clients.consumer.OffsetAndMetadata(0)));
    broker.admin().alterConsumerGroupOffsets("lake-monitor", reset).all().get(30, TimeUnit.SECONDS);
    KafkaTopics.produce(broker, "mirrored", 500, 600);
    CliRun second = CliRun.of(ingest("mirrored", "--until", "end", "--group-id", "lake-monitor")
        .toArray(String[]::new));
    assertThat(second.exitCode()).as("%s", second).isZero();
    assertThat(second.out()).contains("Committed 100 rows");
    assertThat(groupOffsets("lake-monitor")).isEqualTo(broker.endOffsets("mirrored"));
    CliRun verify = verify("mirrored");
    assertThat(verify.out()).contains("\"sourceRows\" : 600").contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");
  }

  private static Map<TopicPartition, Long> groupOffsets(String group) throws Exception {
    Map<TopicPartition, Long> offsets = new java.util.HashMap<>();
    broker.admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS)
        .forEach((partition, offset) -> offsets.put(partition, offset.offset()));
    return offsets;
  }

  /** Avro values in binary and single-object encoding, read with the writer schema given as a file. */
  @Test
  void avroValuesAreReadWithTheSchemaFile() throws Exception {
    broker.createTopic("avro-orders", 2);
    org.apache.avro.Schema schema = new org.apache.avro.Schema.Parser().parse("{\"type\": \"record\", \"name\":"
        + " \"Order\", \"fields\": [{\"name\": \"id\", \"type\": \"long\"}, {\"name\": \"item\", \"type\":"
        + " [\"null\", \"string\"]}, {\"name\": \"state\", \"type\": {\"type\": \"enum\", \"name\": \"State\","
        + " \"symbols\": [\"NEW\", \"PAID\"]}}]}");
    Path avsc = Files.writeString(dir.resolve("order.avsc"), schema.toString(true));
    java.util.Properties properties = new java.util.Properties();
    properties.put("bootstrap.servers", broker.bootstrapServers());
    org.apache.avro.message.BinaryMessageEncoder<org.apache.avro.generic.GenericRecord> singleObject =
        new org.apache.avro.message.BinaryMessageEncoder<>(org.apache.avro.generic.GenericData.get(), schema);
    try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(properties,
        new org.apache.kafka.common.serialization.StringSerializer(),
        new org.apache.kafka.common.serialization.ByteArraySerializer())) {
      for (long id = 0; id < 300; id++) {
        org.apache.avro.generic.GenericRecord order = new org.apache.avro.generic.GenericData.Record(schema);
        order.put("id", id);
        order.put("item", id % 5 == 0 ? null : "item-" + id);
        order.put("state", new org.apache.avro.generic.GenericData.EnumSymbol(schema.getField("state").schema(),
            id % 2 == 0 ? "NEW" : "PAID"));
        byte[] value;
        if (id % 3 == 0) {
          value = singleObject.encode(order).array();
        } else {
          java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
          org.apache.avro.io.BinaryEncoder encoder = org.apache.avro.io.EncoderFactory.get().binaryEncoder(bytes, null);
          new org.apache.avro.generic.GenericDatumWriter<org.apache.avro.generic.GenericRecord>(schema)
              .write(order, encoder);
          encoder.flush();
          value = bytes.toByteArray();
        }
        producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>("avro-orders", Long.toString(id), value));
      }
    }
    String topic = "kafka://" + broker.bootstrapServers() + "/avro-orders";
    CliRun run = CliRun.of("ingest", "--input", topic, "--format", "avro", "--avro-schema", avsc.toString(),
        "--table", "load.orders", "--warehouse", dir.resolve("wh").toString(), "--until", "end",
        "--kafka-metadata", "partition,offset");
    assertThat(run.exitCode()).as("%s", run).isZero();
    assertThat(run.out()).contains("Committed 300 rows");
    CliRun verify = CliRun.of("verify", "--source", topic, "--format", "avro", "--avro-schema", avsc.toString(),
        "--table", "load.orders", "--warehouse", dir.resolve("wh").toString(), "--key", "id", "--json");
    assertThat(verify.exitCode()).as("%s", verify).isZero();
    assertThat(verify.out()).contains("\"sourceRows\" : 300").contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");
  }

  /**
   * The tool as a user runs it: unbounded in its own process. A partition added while it runs is read; SIGTERM
   * commits the current checkpoint and exits 0; a rerun continues exactly.
   */
  @ParameterizedTest(name = "--max-uncommitted-checkpoints {0}")
  @ValueSource(strings = {"0", "2"})
  void unboundedJobReadsNewPartitionsAndCommitsOnSigterm(String uncommitted) throws Exception {
    String topic = "events-" + uncommitted;
    broker.createTopic(topic, 2);
    KafkaTopics.produce(broker, topic, 0, 600);
    int metricsPort = LoopbackPorts.reserve();
    List<String> command = KillLoop.command(List.of("-XX:TieredStopAtLevel=1"), ingest(topic,
        "--checkpoint-interval", "1s", "--partition-discovery-interval", "1s", "--job-id", "events-job",
        "--metrics-port", Integer.toString(metricsPort), "--metrics-host", "127.0.0.1",
        "--max-uncommitted-checkpoints", uncommitted));
    Path log = dir.resolve("run-1.log");
    Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    try {
      KillLoop.awaitOutput(process, log, "complete: 600 rows");
      broker.addPartitions(topic, 3);
      KafkaTopics.produce(broker, topic, 600, 900);
      KillLoop.awaitOutput(process, log, "complete: 900 rows");
      assertThat(Files.readString(log)).contains("Reading new Kafka partition " + topic + "-2");
      String metrics = scrape(metricsPort);
      assertThat(metrics).contains("lakecommit_committed_records_total{job=\"events-job\"} 900.0")
          .contains("lakecommit_commit_latency_quantile_seconds{job=\"events-job\",quantile=\"0.99\"}")
          .contains("lakecommit_commit_latency_seconds_bucket{job=\"events-job\",le=")
          .contains("lakecommit_pending_checkpoints{job=\"events-job\"} 0.0")
          .contains("lakecommit_kafka_lag_records{job=\"events-job\",partition=\"2\",topic=\"" + topic + "\"}");
      KafkaTopics.produce(broker, topic, 900, 1_000);
      process.destroy(); // SIGTERM
      assertThat(process.waitFor(2, TimeUnit.MINUTES)).isTrue();
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + "\n--- the tool's output:\n" + Files.readString(log), e);
    } finally {
      process.destroyForcibly();
    }
    assertThat(process.exitValue()).as(Files.readString(log)).isZero();
    assertThat(Files.readString(log)).contains("SIGTERM: committing the current checkpoint");
    // Every checkpoint persisted before the stop is committed: the newest one holds no pending commit.
    CliRun status = CliRun.of("status", "--table", "load.events", "--warehouse",
        dir.resolve("wh").toString(), "--job-id", "events-job", "--json");
    assertThat(status.exitCode()).as("%s", status).isZero();
    assertThat(status.out()).contains("\"pending-checkpoints\" : [ ]");

    KafkaTopics.produce(broker, topic, 1_000, 1_100);
    CliRun rerun = CliRun.of(ingest(topic, "--until", "end", "--job-id", "events-job").toArray(String[]::new));
    assertThat(rerun.exitCode()).as("%s", rerun).isZero();
    CliRun verify = verify(topic);
    assertThat(verify.exitCode()).as("%s", verify).isZero();
    assertThat(verify.out()).contains("\"sourceRows\" : 1100").contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");
  }

  /**
   * Two topics into a table per topic ({@code --route-by kafka_topic}): each message once in its topic's table, each
   * checkpoint one atomic cut over both, the job's offsets in each table; a rerun commits nothing new.
   */
  @Test
  void aTablePerTopicEachMessageOnceAndTheOffsetsInEveryTable() throws Exception {
    broker.createTopic("routed-eu", 2);
    broker.createTopic("routed-us", 1);
    KafkaTopics.produce(broker, "routed-eu", 0, 700);
    KafkaTopics.produce(broker, "routed-us", 1000, 1400);
    String[] args = {"ingest", "--input", input("routed-eu,routed-us"), "--table", "shop.${kafka_topic}",
        "--route-by", "kafka_topic", "--kafka-metadata", "topic", "--warehouse", dir.resolve("wh").toString(),
        "--schema", "id long, kind string, ts long", "--checkpoint-every-records", "300", "--parallelism", "2",
        "--job-id", "routed", "--until", "end"};

    CliRun first = CliRun.of(args);
    assertThat(first.exitCode()).as("%s", first).isZero();
    assertThat(first.out()).contains("one atomic commit per cut").contains("Committed 1,100 rows");
    org.apache.iceberg.catalog.Catalog catalog = org.apache.iceberg.CatalogUtil.buildIcebergCatalog("lakecommit",
        Map.of("type", "jdbc", "uri", "jdbc:sqlite:" + dir.resolve("wh/catalog.db").toAbsolutePath(), "warehouse",
            dir.resolve("wh").toUri().toString(), "jdbc.schema-version", "V1"),
        new org.apache.hadoop.conf.Configuration());
    Map<String, long[]> expected = Map.of("routed-eu", new long[] {0, 700}, "routed-us", new long[] {1000, 1400});
    for (Map.Entry<String, long[]> topic : expected.entrySet()) {
      org.apache.iceberg.Table table = catalog.loadTable(org.apache.iceberg.catalog.TableIdentifier.of("shop",
          topic.getKey()));
      List<Long> ids = new ArrayList<>();
      try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.data.Record> rows =
          org.apache.iceberg.data.IcebergGenerics.read(table).build()) {
        rows.forEach(row -> {
          assertThat(row.getField("kafka_topic")).isEqualTo(topic.getKey());
          ids.add((Long) row.getField("id"));
        });
      }
      assertThat(ids).as(topic.getKey()).doesNotHaveDuplicates()
          .hasSize((int) (topic.getValue()[1] - topic.getValue()[0]))
          .allMatch(id -> id >= topic.getValue()[0] && id < topic.getValue()[1]);
      assertThat(table.properties()).containsKey(dev.lakecommit.core.CommitId.sourcePositionKey(
          dev.lakecommit.core.JobId.of("routed")));
    }

    CliRun again = CliRun.of(args);
    assertThat(again.exitCode()).as("%s", again).isZero();
    assertThat(again.out()).contains("Nothing new to commit");
  }

  /** The table's rows as {@code id -> "name|qty"}. */
  private Map<Long, String> customers() throws Exception {
    return DebeziumTopic.tableRows(dir.resolve("wh"));
  }

  /**
   * {@code --format debezium}: a table that follows a source table's change events — a snapshot, then creates,
   * updates and deletes in random order, bare and in the JSON converter's schema envelope, deletes with the full
   * row, with the key only, and with no {@code before} (the message key says which row), each followed by a
   * tombstone — equals the model of the source after each bounded run, the second resuming at the first's offsets
   * with several changes of one key in a checkpoint. A truncate stops the job naming its message (nothing of the
   * run committed), or goes to the dead letters.
   */
  @Test
  void debeziumChangeEventsKeepTheTableEqualToTheSourceTable() throws Exception {
    broker.createTopic("dbz-customers", 2);
    DebeziumTopic source = new DebeziumTopic("dbz-customers", 2, 100, 42);
    java.util.Properties properties = new java.util.Properties();
    properties.put("bootstrap.servers", broker.bootstrapServers());
    List<String> ingest = List.of("ingest", "--input", input("dbz-customers"), "--format", "debezium",
        "--table", "shop.customers", "--warehouse", dir.resolve("wh").toString(), "--schema",
        "id long not null, name string, qty int", "--upsert-key", "id", "--until", "end",
        "--checkpoint-every-records", "40", "--parallelism", "2");
    Map<Long, String> model;
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties,
        new org.apache.kafka.common.serialization.StringSerializer(),
        new org.apache.kafka.common.serialization.StringSerializer())) {
      for (int round = 0; round < 2; round++) {
        if (round == 0) {
          source.snapshot(producer, 60);
        }
        source.changes(producer, round == 0 ? 240 : 200);
        producer.flush();
        CliRun run = CliRun.of(ingest.toArray(String[]::new));
        assertThat(run.exitCode()).as("round %s: %s", round, run).isZero();
        assertThat(customers()).as("round %s", round).isEqualTo(source.model());
      }
      model = new java.util.TreeMap<>(source.model());
      producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>("dbz-customers", 1, "{\"id\":1}",
          "{\"before\":null,\"after\":{\"id\":1,\"name\":\"changed\",\"qty\":1},\"op\":\"u\"}"));
      producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>("dbz-customers", 0, null,
          "{\"before\":null,\"after\":null,\"op\":\"t\"}"));
      producer.flush();
    }
    CliRun truncate = CliRun.of(ingest.toArray(String[]::new));
    assertThat(truncate.exitCode()).as("%s", truncate).isNotZero();
    assertThat(truncate.err()).contains("Kafka dbz-customers partition 0 offset")
        .contains("a Debezium truncate event (op 't')");
    assertThat(customers()).as("nothing of the stopped run").isEqualTo(model);

    List<String> diverting = new ArrayList<>(ingest);
    diverting.addAll(List.of("--bad-records", dir.resolve("dead").toString()));
    CliRun diverted = CliRun.of(diverting.toArray(String[]::new));
    assertThat(diverted.exitCode()).as("%s", diverted).isEqualTo(4);
    model.put(1L, "changed|1");
    assertThat(customers()).isEqualTo(model);
    try (java.util.stream.Stream<Path> dead = Files.walk(dir.resolve("dead"))) {
      assertThat(dead.filter(Files::isRegularFile).map(file -> {
        try {
          return Files.readString(file);
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }).collect(java.util.stream.Collectors.joining())).contains("truncate");
    }

    CliRun keyless = CliRun.of("ingest", "--input", input("dbz-customers"), "--format", "debezium", "--table",
        "shop.customers", "--warehouse", dir.resolve("wh").toString(), "--until", "end");
    assertThat(keyless.exitCode()).isNotZero();
    assertThat(keyless.err()).contains("--format debezium").contains("--upsert-key");
  }

  /**
   * Debezium change events of two source tables keyed by different columns, interleaved in one topic, with a table
   * per source table ({@code --route-by source.table}): each table's columns and key are sampled from its events, and
   * each table equals its source table after each of two runs (the second resuming at the first's offsets). A column
   * the source table gains mid-stream stops the job naming it, and a run with {@code --add-new-columns} adds it.
   * Options that do not fit are usage errors naming them.
   */
  @Test
  void debeziumChangeEventsOfSeveralSourceTablesKeepATablePerSourceTable() throws Exception {
    broker.createTopic("dbz-shop", 2);
    DebeziumTopic customers = new DebeziumTopic("dbz-shop", 2, 60, 7, "customers", "id");
    DebeziumTopic orders = new DebeziumTopic("dbz-shop", 2, 80, 8, "orders", "order_id");
    Path warehouse = dir.resolve("wh");
    List<String> ingest = List.of("ingest", "--input", input("dbz-shop"), "--format", "debezium", "--route-by",
        "source.table", "--table", "shop.${source.table}", "--warehouse", warehouse.toString(), "--until", "end",
        "--checkpoint-every-records", "50", "--parallelism", "2");
    java.util.Properties properties = new java.util.Properties();
    properties.put("bootstrap.servers", broker.bootstrapServers());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties,
        new org.apache.kafka.common.serialization.StringSerializer(),
        new org.apache.kafka.common.serialization.StringSerializer())) {
      for (int round = 0; round < 2; round++) {
        if (round == 0) {
          customers.snapshot(producer, 30);
          orders.snapshot(producer, 40);
        }
        for (int batch = 0; batch < 30; batch++) {
          customers.changes(producer, 4);
          orders.changes(producer, 5);
        }
        producer.flush();
        CliRun run = CliRun.of(ingest.toArray(String[]::new));
        assertThat(run.exitCode()).as("round %s: %s", round, run).isZero();
        assertThat(run.out()).contains("Source tables sampled: customers[id], orders[order_id]");
        assertThat(DebeziumTopic.tableRows(warehouse, "shop.customers", "id")).as("round %s", round)
            .isEqualTo(customers.model());
        assertThat(DebeziumTopic.tableRows(warehouse, "shop.orders", "order_id")).as("round %s", round)
            .isEqualTo(orders.model());
      }

      // The source table gains a column while a job streams: the job stops naming the source table, the column and
      // the option. A run without the option samples the events at the job's position, sees the column and stops
      // naming the table; with --add-new-columns it adds the column in the cut that commits its first rows.
      List<String> streaming = new ArrayList<>(ingest);
      streaming.removeAll(List.of("--until", "end"));
      streaming.addAll(List.of("--checkpoint-interval", "1s"));
      Path log = dir.resolve("dbz-streaming.log");
      Process process = new ProcessBuilder(KillLoop.command(List.of("-XX:TieredStopAtLevel=1"), streaming))
          .redirectErrorStream(true).redirectOutput(log.toFile()).start();
      Map<Long, String> before;
      try {
        for (int batch = 0; batch < 10; batch++) {
          customers.changes(producer, 4);
          orders.changes(producer, 5);
        }
        producer.flush();
        before = customers.model();
        // the job has committed every event so far: it streams on, waiting for more
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
        while (!DebeziumTopic.tableRows(warehouse, "shop.customers", "id").equals(before)
            || !DebeziumTopic.tableRows(warehouse, "shop.orders", "order_id").equals(orders.model())) {
          assertThat(process.isAlive()).as("the job streams").isTrue();
          assertThat(System.nanoTime()).as("the job caught up within a minute").isLessThan(deadline);
          Thread.sleep(200);
        }
        customers.addColumn("email");
        for (int batch = 0; batch < 10; batch++) {
          customers.changes(producer, 4);
          orders.changes(producer, 5);
        }
        producer.flush();
        assertThat(process.waitFor(2, TimeUnit.MINUTES)).as("the job stopped").isTrue();
      } finally {
        process.destroyForcibly();
      }
      String out = Files.readString(log);
      assertThat(process.exitValue()).as(out).isEqualTo(3);
      assertThat(out).contains("Column 'email' of source table 'customers'").contains("--add-new-columns");
      assertThat(DebeziumTopic.tableRows(warehouse, "shop.customers", "id")).isEqualTo(before);
      CliRun stopped = CliRun.of(ingest.toArray(String[]::new));
      assertThat(stopped.exitCode()).as("%s", stopped).isEqualTo(2);
      assertThat(stopped.err()).contains("shop.customers has no column 'email'").contains("--add-new-columns");
      List<String> adding = new ArrayList<>(ingest);
      adding.add("--add-new-columns");
      CliRun added = CliRun.of(adding.toArray(String[]::new));
      assertThat(added.exitCode()).as("%s", added).isZero();
      assertThat(DebeziumTopic.tableRows(warehouse, "shop.customers", "id")).isEqualTo(customers.model())
          .as("rows with the new column").isNotEqualTo(before);
      assertThat(DebeziumTopic.tableRows(warehouse, "shop.orders", "order_id")).isEqualTo(orders.model());
    }

    List<String> byTopic = new ArrayList<>(ingest);
    byTopic.set(byTopic.indexOf("source.table"), "kafka_topic");
    byTopic.set(byTopic.indexOf("shop.${source.table}"), "shop.${kafka_topic}");
    CliRun topic = CliRun.of(byTopic.toArray(String[]::new));
    assertThat(topic.exitCode()).as("%s", topic).isEqualTo(2);
    assertThat(topic.err()).contains("--route-by kafka_topic").contains("source.table");
    List<String> withSchema = new ArrayList<>(ingest);
    withSchema.addAll(List.of("--schema", "id long not null, name string"));
    CliRun schema = CliRun.of(withSchema.toArray(String[]::new));
    assertThat(schema.exitCode()).as("%s", schema).isEqualTo(2);
    assertThat(schema.err()).contains("--schema");
  }

  /**
   * Debezium change events of source transactions over two tables, with Debezium's transaction topic
   * ({@code --transaction-topic}), a checkpoint due every 20 records and transactions of 2 to 8 events: every cut of
   * the job's two tables after the snapshot equals the source tables after some number of whole transactions, and the
   * last cut equals them after all; a rerun (resuming between two transactions) goes on the same way.
   */
  @Test
  void debeziumTransactionsStayWholeInEveryCut() throws Exception {
    broker.createTopic("dbz-tx", 2);
    broker.createTopic("dbz-tx.transaction", 1);
    DebeziumTopic customers = new DebeziumTopic("dbz-tx", 2, 40, 11, "customers", "id");
    DebeziumTopic orders = new DebeziumTopic("dbz-tx", 2, 50, 12, "orders", "order_id");
    Path warehouse = dir.resolve("wh");
    List<String> ingest = List.of("ingest", "--input", input("dbz-tx,dbz-tx.transaction"), "--format", "debezium",
        "--transaction-topic", "dbz-tx.transaction", "--route-by", "source.table", "--table", "shop.${source.table}",
        "--warehouse", warehouse.toString(), "--until", "end", "--checkpoint-every-records", "20", "--parallelism",
        "2");
    // the source tables after the snapshot and after each transaction: what a cut may show
    List<List<Map<Long, String>>> states = new ArrayList<>();
    java.util.Random random = new java.util.Random(5);
    java.util.Properties properties = new java.util.Properties();
    properties.put("bootstrap.servers", broker.bootstrapServers());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties,
        new org.apache.kafka.common.serialization.StringSerializer(),
        new org.apache.kafka.common.serialization.StringSerializer())) {
      customers.snapshot(producer, 20);
      orders.snapshot(producer, 25);
      states.add(List.of(customers.model(), orders.model()));
      for (int round = 0; round < 2; round++) {
        for (int t = 0; t < 20; t++) {
          String id = "tx-" + round + "-" + t;
          DebeziumTopic.marker(producer, "dbz-tx.transaction", id, false, 0);
          customers.transaction(id);
          orders.transaction(id);
          int events = customers.changes(producer, 1 + random.nextInt(4)) + orders.changes(producer,
              1 + random.nextInt(4));
          DebeziumTopic.marker(producer, "dbz-tx.transaction", id, true, events);
          states.add(List.of(customers.model(), orders.model()));
        }
        producer.flush();
        CliRun run = CliRun.of(ingest.toArray(String[]::new));
        assertThat(run.exitCode()).as("round %s: %s", round, run).isZero();
        assertThat(DebeziumTopic.tableRows(warehouse, "shop.customers", "id")).isEqualTo(customers.model());
        assertThat(DebeziumTopic.tableRows(warehouse, "shop.orders", "order_id")).isEqualTo(orders.model());
      }
    }
    org.apache.iceberg.catalog.Catalog catalog = org.apache.iceberg.CatalogUtil.buildIcebergCatalog("lakecommit",
        Map.of("type", "jdbc", "uri", "jdbc:sqlite:" + warehouse.resolve("catalog.db").toAbsolutePath(),
            "warehouse", warehouse.toUri().toString(), "jdbc.schema-version", "V1"),
        new org.apache.hadoop.conf.Configuration());
    org.apache.iceberg.Table customersTable = catalog.loadTable(org.apache.iceberg.catalog.TableIdentifier.of("shop", "customers"));
    org.apache.iceberg.Table ordersTable = catalog.loadTable(org.apache.iceberg.catalog.TableIdentifier.of("shop", "orders"));
    java.util.SortedSet<Long> checkpoints = new java.util.TreeSet<>();
    for (org.apache.iceberg.Table table : List.of(customersTable, ordersTable)) {
      table.snapshots().forEach(snapshot -> checkpoints.add(Long.parseLong(
          snapshot.summary().get(dev.lakecommit.core.CommitId.CHECKPOINT_ID_KEY))));
    }
    int afterTransactions = 0;
    for (long checkpoint : checkpoints) {
      List<Map<Long, String>> cut = List.of(rowsAt(customersTable, "id", checkpoint),
          rowsAt(ordersTable, "order_id", checkpoint));
      // the snapshot's reads are no transaction: a cut may end inside it
      boolean inSnapshot = states.get(0).get(0).entrySet().containsAll(cut.get(0).entrySet())
          && states.get(0).get(1).entrySet().containsAll(cut.get(1).entrySet());
      if (!inSnapshot || cut.equals(states.get(0))) {
        assertThat(states).as("cut %s shows the source tables after whole transactions", checkpoint).contains(cut);
        afterTransactions++;
      }
    }
    assertThat(afterTransactions).as("cuts after whole transactions").isGreaterThan(8);
  }

  /** A table's rows (key to "name|qty") at its newest snapshot of a checkpoint at or below {@code checkpoint}. */
  private static Map<Long, String> rowsAt(org.apache.iceberg.Table table, String keyColumn, long checkpoint)
      throws java.io.IOException {
    org.apache.iceberg.Snapshot at = null;
    for (org.apache.iceberg.Snapshot snapshot : table.snapshots()) {
      long id = Long.parseLong(snapshot.summary().get(dev.lakecommit.core.CommitId.CHECKPOINT_ID_KEY));
      if (id <= checkpoint && (at == null || snapshot.sequenceNumber() > at.sequenceNumber())) {
        at = snapshot;
      }
    }
    Map<Long, String> rows = new java.util.TreeMap<>();
    if (at == null) {
      return rows;
    }
    try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.data.Record> read =
        org.apache.iceberg.data.IcebergGenerics.read(table).useSnapshot(at.snapshotId()).build()) {
      for (org.apache.iceberg.data.Record row : read) {
        rows.put(((Number) row.getField(keyColumn)).longValue(), row.getField("name") + "|" + row.getField("qty"));
      }
    }
    return rows;
  }
}
