package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.testing.KafkaBroker;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.Types.LongType;
import org.apache.iceberg.types.Types.NestedField;
import org.apache.iceberg.types.Types.StringType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flink reading Kafka into Iceberg exactly once, on a cluster of real processes ({@link FlinkProcessCluster}: a
 * JobManager and two TaskManagers as child JVMs, RocksDB with incremental checkpoints on local disk, the job
 * submitted through the REST endpoint), under SIGKILLs of TaskManager processes and a broker stop/restart while a
 * producer writes the topic; then the table is audited against the topic by id and event time.
 *
 * <p>The job: {@code KafkaSource} (offsets from Flink's state only: no group offsets committed or read) → a stateless
 * map → {@link LakecommitFlinkSink} → an Iceberg table in a Hadoop catalog. The first TaskManager kill is aimed at
 * a commit: it hits the TaskManager running the committer right after a checkpoint completed (the log says whether
 * the table had that checkpoint's commit yet); the others come at seeded moments of the run (the seed is printed).
 * Default build: 20,000 messages, 2 TaskManager kills, 1 broker restart; {@code -Plong}: 1,000,000 messages,
 * 6 kills, 2 broker restarts.
 *
 * <p>Asserted: no duplicate, no loss, no row of an unknown id, and a job restart per TaskManager kill. The
 * out-of-order rate (rows whose event time is below the largest one an earlier snapshot committed) is printed, not
 * asserted: it is not within DESIGN.md's 0.1 % yet. The Kafka source hands out each partition's fetched records as
 * a batch, so a checkpoint barrier cuts the partitions at event times up to about a second apart after a catch-up
 * (measured 4-12 % out of order on a loaded machine, 47 % without split alignment and small fetches). The
 * settings below (one reader of all partitions with split-level watermark alignment, small fetches and polls)
 * reduce it; bounding it needs more (for example a reader that orders across partitions by timestamp, as the
 * ingest tool's does).
 */
class FlinkKafkaProcessIT {
  private static final String TOPIC = "events";
  static final String TABLE = "db.kafka_events";
  private static final String JOB_NAME = "kafka-events";
  static final String JOB_ID = "db.kafka_events-kafka-events";
  private static final Schema SCHEMA = new Schema(
      NestedField.required(1, "id", LongType.get()),
      NestedField.required(2, "event_time", LongType.get()),
      NestedField.optional(3, "payload", StringType.get()));
  static final RowType ROW_TYPE = RowType.of(
      new LogicalType[] {new BigIntType(false), new BigIntType(false), new VarCharType(VarCharType.MAX_LENGTH)},
      new String[] {"id", "event_time", "payload"});

  @TempDir
  Path dir;

  /** {@code "<id>,<event time ms>"} → a row; stateless. */
  static final class ToRow implements MapFunction<String, RowData> {
    @Override
    public RowData map(String value) {
      int comma = value.indexOf(',');
      return GenericRowData.of(Long.parseLong(value.substring(0, comma)),
          Long.parseLong(value.substring(comma + 1)), StringData.fromString(value));
    }
  }

  static IcebergSinkConfig config(String warehouse) {
    return IcebergSinkConfig.builder()
        .catalogProperties(Map.of("type", "hadoop", "warehouse", warehouse))
        .table(TABLE)
        .createTable(SCHEMA, List.of())
        .tableProperties(Map.of("format-version", "2"))
        .build();
  }

  @Test
  void kafkaToIcebergUnderTaskManagerKillsAndABrokerRestart() throws Exception {
    long seed = TestScale.seed();
    long messages = TestScale.pick(20_000, 1_000_000);
    int kills = TestScale.pick(2, 6);
    int brokerRestarts = TestScale.pick(1, 2);
    int rate = TestScale.pick(2_000, 8_000);
    System.out.printf("FlinkKafkaProcessIT seed=%d (rerun with -Dlakecommit.seed=%d): %d messages at %d/s, %d"
        + " TaskManager kills, %d broker restarts%n", seed, seed, messages, rate, kills, brokerRestarts);
    Random random = new Random(seed);
    String warehouse = dir.resolve("warehouse").toString();

    try (KafkaBroker kafka = KafkaBroker.childJvm(dir.resolve("kafka"));
        FlinkProcessCluster cluster = new FlinkProcessCluster(dir.resolve("flink"), 2, Map.of(
            "state.backend.type", "rocksdb",
            "execution.checkpointing.incremental", "true",
            "execution.checkpointing.dir", dir.resolve("checkpoints").toUri().toString(),
            "restart-strategy.type", "fixed-delay",
            "restart-strategy.fixed-delay.attempts", "100",
            "restart-strategy.fixed-delay.delay", "1 s"))) {
      cluster.start(2);
      kafka.createTopic(TOPIC, 4);
      Producer producer = new Producer(kafka.bootstrapServers(), messages, rate);
      JobClient job = submit(cluster, kafka.bootstrapServers(), warehouse);
      String jobId = job.getJobID().toString();
      try {
        // the producer starts once the job runs, so that the faults meet a job that is reading and committing
        runningTaskManagers(cluster, jobId, Duration.ofMinutes(3));
        producer.start();
        // The topic is written in segments, one per fault and one after: each fault comes when the table holds a
        // seeded share (20-60 %) of its segment, while the rest of the segment is still being produced and read.
        int faults = kills + brokerRestarts;
        long segment = messages / (faults + 1);
        // which of the faults are broker restarts: seeded, never the first (the first kill aims at a commit)
        List<Integer> brokerAt = new ArrayList<>();
        while (brokerAt.size() < brokerRestarts) {
          int i = 1 + random.nextInt(faults - 1);
          if (!brokerAt.contains(i)) {
            brokerAt.add(i);
          }
        }
        for (int i = 0; i < faults; i++) {
          producer.allowed.set((i + 1) * segment);
          long target = i * segment + (long) ((0.2 + 0.4 * random.nextDouble()) * segment);
          awaitCommittedRows(warehouse, target, producer, Duration.ofMinutes(TestScale.pick(3, 20)));
          if (brokerAt.contains(i)) {
            long outage = 2_000 + random.nextInt(3_000);
            System.out.printf("FlinkKafkaProcessIT fault %d: broker stop for %d ms at %d committed rows%n", i,
                outage, committedRows(warehouse));
            kafka.stop();
            Thread.sleep(outage);   // the length of the outage, not synchronisation
            kafka.start();
          } else if (i == 0) {
            killDuringCommit(cluster, jobId, warehouse);
          } else {
            List<String> busy = runningTaskManagers(cluster, jobId, Duration.ofMinutes(2));
            String victim = busy.get(random.nextInt(busy.size()));
            System.out.printf("FlinkKafkaProcessIT fault %d: SIGKILL of %s at %d committed rows%n", i, victim,
                committedRows(warehouse));
            long restarts = cluster.jobMetric(jobId, "numRestarts");
            cluster.kill(victim);
            cluster.startTaskManager();
            awaitRestart(cluster, jobId, restarts);
          }
        }
        producer.allowed.set(messages);
        producer.join(Duration.ofMinutes(TestScale.pick(2, 20)));
        awaitCommittedRows(warehouse, messages, producer, Duration.ofMinutes(TestScale.pick(3, 20)));
        long restarts = cluster.jobMetric(jobId, "numRestarts");
        System.out.printf("FlinkKafkaProcessIT: job restarts %d%n", restarts);
        assertThat(restarts).as("every TaskManager kill hit the job (one slot of it on each TaskManager)")
            .isGreaterThanOrEqualTo(kills);
      } finally {
        producer.interrupt();
        job.cancel().get(1, TimeUnit.MINUTES);
      }

      Map<Long, Long> topic = readTopic(kafka.bootstrapServers());
      Audit audit = Audit.of(IcebergFlinkSinkIT.load(warehouse, TABLE), JOB_ID, topic);
      System.out.println("FlinkKafkaProcessIT audit: " + audit);
      assertThat(topic).as("the topic holds every message once").hasSize((int) messages);
      assertThat(audit.duplicates()).as("duplicates: %s", audit).isZero();
      assertThat(audit.losses()).as("losses: %s", audit).isZero();
      assertThat(audit.unknown()).as("rows of no message: %s", audit).isZero();
      // Out-of-order is reported, not asserted: this job does not meet DESIGN.md's 0.1 % yet (see the class comment).
    }
  }

  private static JobClient submit(FlinkProcessCluster cluster, String bootstrap, String warehouse)
      throws Exception {
    Configuration conf = new Configuration();
    conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofSeconds(1));
    conf.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE, CheckpointingMode.EXACTLY_ONCE);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 100);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofSeconds(1));
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createRemoteEnvironment("127.0.0.1",
        cluster.restPort(), conf);
    env.setParallelism(2);
    KafkaSource<String> source = KafkaSource.<String>builder()
        .setBootstrapServers(bootstrap)
        .setTopics(TOPIC)
        .setGroupId("lakecommit-it")
        // a first start reads from the beginning; restarts take positions from Flink's state, never reset
        .setStartingOffsets(StateOnlyOffsets.firstStart())
        .setValueOnlyDeserializer(new SimpleStringSchema())
        // positions live in Flink's checkpoints only (auto.offset.reset=none: see StateOnlyOffsets)
        .setProperty("enable.auto.commit", "false")
        .setProperty("commit.offsets.on.checkpoint", "false")
        // small fetches, so that a catch-up interleaves the partitions instead of draining one at a time
        .setProperty("max.partition.fetch.bytes", "2048")
        .setProperty("max.poll.records", "20")
        .build();
    // One reader of all partitions, which holds back a partition ahead of the others (split-level watermark
    // alignment on the messages' event times), so that a checkpoint cuts the partitions at closer event times (it
    // reduces the out-of-order rate; it does not bound it: see the class comment).
    WatermarkStrategy<String> eventTime = WatermarkStrategy.<String>forMonotonousTimestamps()
        .withWatermarkAlignment("kafka-events", Duration.ofMillis(1), Duration.ofMillis(5));
    env.getConfig().setAutoWatermarkInterval(5);
    env.fromSource(source, eventTime, "kafka").uid("kafka").setParallelism(1)
        .rebalance()
        .map(new ToRow()).uid("to-row").returns(InternalTypeInfo.of(ROW_TYPE))
        .sinkTo(LakecommitFlinkSink.forRowData(ROW_TYPE).iceberg(() -> config(warehouse)).jobName(JOB_NAME)
            .build()).uid("lakecommit-sink");
    return env.executeAsync("kafka-events");
  }

  /**
   * SIGKILL of the TaskManager running the committer right after the job's next checkpoint completed, so that its
   * commit is under way (or just about to start); then a replacement TaskManager.
   */
  private static void killDuringCommit(FlinkProcessCluster cluster, String jobId, String warehouse)
      throws Exception {
    runningTaskManagers(cluster, jobId, Duration.ofMinutes(2));
    String committerTm = committerTaskManager(cluster, jobId);
    long completed = completedCheckpoint(cluster, jobId);
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    long next;
    while ((next = completedCheckpoint(cluster, jobId)) <= completed && System.nanoTime() < deadline) {
      Thread.sleep(20);   // polling the REST endpoint for the checkpoint's completion
    }
    String victim = committerTm != null ? committerTm : cluster.liveTaskManagers().get(0);
    long restarts = cluster.jobMetric(jobId, "numRestarts");
    cluster.kill(victim);
    long watermark = watermark(warehouse);
    System.out.printf("FlinkKafkaProcessIT fault 0: SIGKILL of %s (committer: %s) right after checkpoint %d"
        + " completed; the table then held the job's commits up to %d (%s)%n", victim, committerTm, next, watermark,
        watermark < next ? "killed before that checkpoint's commit was done" : "its commit was already done");
    cluster.startTaskManager();
    awaitRestart(cluster, jobId, restarts);
  }

  /** Polls (bounded) until the job restarted after {@code before} restarts and all its subtasks run again. */
  static void awaitRestart(FlinkProcessCluster cluster, String jobId, long before) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
    while (cluster.jobMetric(jobId, "numRestarts") <= before) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("Job " + jobId + " did not restart within 3 minutes of a TaskManager kill");
      }
      Thread.sleep(100);   // polling the REST endpoint
    }
    runningTaskManagers(cluster, jobId, Duration.ofMinutes(3));
  }

  /**
   * Polls (bounded) until every subtask of the job runs; returns the TaskManagers running them, sorted (so that a
   * seeded choice among them is repeatable).
   */
  static List<String> runningTaskManagers(FlinkProcessCluster cluster, String jobId, Duration timeout)
      throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      java.util.TreeSet<String> busy = new java.util.TreeSet<>();
      boolean allRunning = true;
      for (JsonNode vertex : cluster.rest("/jobs/" + jobId).path("vertices")) {
        for (JsonNode subtask : cluster.rest("/jobs/" + jobId + "/vertices/" + vertex.path("id").asText())
            .path("subtasks")) {
          allRunning &= subtask.path("status").asText().equals("RUNNING");
          busy.add(subtask.path("taskmanager-id").asText("?"));
        }
      }
      if (allRunning && !busy.isEmpty()) {
        return new ArrayList<>(busy);
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("Job " + jobId + " not running on all its subtasks within " + timeout);
      }
      Thread.sleep(100);   // polling the REST endpoint
    }
  }

  /** The TaskManager running subtask 0 of the sink's committer, or null if the REST answer does not say. */
  private static String committerTaskManager(FlinkProcessCluster cluster, String jobId) throws IOException {
    for (JsonNode vertex : cluster.rest("/jobs/" + jobId).path("vertices")) {
      if (vertex.path("name").asText().contains("Committer")) {
        for (JsonNode subtask : cluster.rest("/jobs/" + jobId + "/vertices/" + vertex.path("id").asText())
            .path("subtasks")) {
          if (subtask.path("subtask").asInt() == 0 && subtask.hasNonNull("taskmanager-id")) {
            return subtask.path("taskmanager-id").asText();
          }
        }
      }
    }
    return null;
  }

  static long completedCheckpoint(FlinkProcessCluster cluster, String jobId) {
    try {
      return cluster.rest("/jobs/" + jobId + "/checkpoints").path("latest").path("completed").path("id").asLong(0);
    } catch (IOException e) {
      return 0;
    }
  }

  static long watermark(String warehouse) {
    if (!IcebergFlinkSinkIT.tableExists(warehouse, TABLE)) {
      return 0;
    }
    String value = IcebergFlinkSinkIT.load(warehouse, TABLE).properties().get(CommitId.WATERMARK_KEY_PREFIX + JOB_ID);
    return value == null ? 0 : Long.parseLong(value);
  }

  static long committedRows(String warehouse) {
    if (!IcebergFlinkSinkIT.tableExists(warehouse, TABLE)) {
      return 0;
    }
    Snapshot current = IcebergFlinkSinkIT.load(warehouse, TABLE).currentSnapshot();
    return current == null ? 0 : Long.parseLong(current.summary().getOrDefault("total-records", "0"));
  }

  /** Polls the table (bounded) until it holds {@code rows} rows; fails early if the producer failed. */
  static void awaitCommittedRows(String warehouse, long rows, Producer producer, Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    long seen;
    while ((seen = committedRows(warehouse)) < rows) {
      producer.check();
      if (System.nanoTime() > deadline) {
        throw new AssertionError("The table holds " + seen + " rows after " + timeout + ", expected " + rows
            + " (producer sent " + producer.sent.get() + ")");
      }
      Thread.sleep(200);   // polling the table
    }
  }

  /** Every message of the topic: id → event time (read_committed, from the beginning to the end offsets). */
  static Map<Long, Long> readTopic(String bootstrap) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
    Map<Long, Long> byId = new HashMap<>();
    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
      List<TopicPartition> partitions = consumer.partitionsFor(TOPIC).stream()
          .map(p -> new TopicPartition(TOPIC, p.partition())).toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
      long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
      while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError("Cannot read topic " + TOPIC + " to its end " + end);
        }
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
          String v = record.value();
          int comma = v.indexOf(',');
          Long previous = byId.put(Long.parseLong(v.substring(0, comma)), Long.parseLong(v.substring(comma + 1)));
          if (previous != null) {
            throw new AssertionError("The topic holds message " + v + " twice");
          }
        }
      }
    }
    return byId;
  }

  /** Sends {@code "<id>,<send time ms>"} for ids 0..count-1 at about {@code rate} per second, idempotently. */
  static final class Producer extends Thread {
    final AtomicLong sent = new AtomicLong();
    /** The producer sends ids below this only; raised by the test. */
    final AtomicLong allowed = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final String bootstrap;
    private final long count;
    private final int rate;

    Producer(String bootstrap, long count, int rate) {
      super("kafka-test-producer");
      setDaemon(true);
      this.bootstrap = bootstrap;
      this.count = count;
      this.rate = rate;
    }

    @Override
    public void run() {
      Properties props = new Properties();
      props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
      props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
      props.put(ProducerConfig.ACKS_CONFIG, "all");
      props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
      props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "300000");
      props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "300000");
      try (KafkaProducer<String, String> producer =
          new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
        long due = System.nanoTime();
        for (long id = 0; id < count; id++) {
          while (id >= allowed.get()) {
            Thread.sleep(20);   // held back by the test until its next fault is due
            due = System.nanoTime();
          }
          due += 1_000_000_000L / rate;
          long wait = due - System.nanoTime();
          if (wait > 0) {
            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));   // rate limiting
          }
          long now = System.currentTimeMillis();
          producer.send(new ProducerRecord<>(TOPIC, null, now, Long.toString(id), id + "," + now),
              (metadata, e) -> {
                if (e != null) {
                  failure.compareAndSet(null, e);
                }
              });
          sent.incrementAndGet();
          if (failure.get() != null) {
            return;
          }
        }
        producer.flush();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException e) {
        failure.compareAndSet(null, e);
      }
    }

    void check() {
      Throwable e = failure.get();
      if (e != null) {
        throw new AssertionError("The test producer failed after " + sent.get() + " messages", e);
      }
    }

    void join(Duration timeout) throws InterruptedException {
      join(timeout.toMillis());
      if (isAlive()) {
        throw new AssertionError("The test producer did not finish within " + timeout + " (" + sent.get() + " of "
            + count + " sent)");
      }
      check();
    }
  }

  /**
   * The table against the topic: duplicates (rows beyond the first of an id), losses (ids of the topic not in the
   * table), rows of ids the topic never held, and out-of-order rows (event time below the largest event time that
   * an earlier snapshot of the job committed) — each snapshot's added data files read in commit order.
   */
  record Audit(long rows, long snapshots, long duplicates, long losses, long unknown, long outOfOrder,
      long maxLatenessMs) {
    double outOfOrderRate() {
      return rows == 0 ? 0 : (double) outOfOrder / rows;
    }

    @Override
    public String toString() {
      return String.format("rows %d in %d snapshots; duplicates %d (rate %.6f), losses %d (rate %.6f), unknown %d,"
              + " out of order %d (rate %.6f, at most %d ms behind)", rows, snapshots, duplicates, rows == 0 ? 0.0 : (double) duplicates
              / rows, losses, (double) losses / Math.max(1, rows - duplicates + losses), unknown, outOfOrder,
          outOfOrderRate(), maxLatenessMs);
    }

    static Audit of(Table table, String jobId, Map<Long, Long> topic) throws IOException {
      List<Snapshot> order = new ArrayList<>();
      for (Snapshot s = table.currentSnapshot(); s != null;
          s = s.parentId() == null ? null : table.snapshot(s.parentId())) {
        order.add(0, s);
      }
      Map<Long, Integer> seen = new HashMap<>();
      long rows = 0;
      long outOfOrder = 0;
      long unknown = 0;
      long committedMax = Long.MIN_VALUE;
      long snapshots = 0;
      long maxLateness = 0;
      for (Snapshot snapshot : order) {
        if (!jobId.equals(snapshot.summary().get(CommitId.JOB_ID_KEY))) {
          continue;
        }
        snapshots++;
        long snapshotMax = committedMax;
        for (DataFile file : snapshot.addedDataFiles(table.io())) {
          try (CloseableIterable<Record> records = Parquet.read(table.io().newInputFile(file.location()))
              .project(table.schema())
              .createReaderFunc(fileSchema -> GenericParquetReaders.buildReader(table.schema(), fileSchema))
              .build()) {
            for (Record record : records) {
              rows++;
              long id = (Long) record.getField("id");
              long eventTime = (Long) record.getField("event_time");
              seen.merge(id, 1, Integer::sum);
              if (!topic.containsKey(id)) {
                unknown++;
              }
              if (eventTime < committedMax) {
                outOfOrder++;
                maxLateness = Math.max(maxLateness, committedMax - eventTime);
              }
              snapshotMax = Math.max(snapshotMax, eventTime);
            }
          }
        }
        System.out.printf("FlinkKafkaProcessIT snapshot %d (%s): event times up to %d, %d rows out of order so far%n",
            snapshot.snapshotId(), snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY), snapshotMax, outOfOrder);
        committedMax = snapshotMax;
      }
      long duplicates = seen.values().stream().mapToLong(n -> n - 1).sum();
      long losses = topic.keySet().stream().filter(id -> !seen.containsKey(id)).count();
      return new Audit(rows, snapshots, duplicates, losses, unknown, outOfOrder, maxLateness);
    }
  }
}
