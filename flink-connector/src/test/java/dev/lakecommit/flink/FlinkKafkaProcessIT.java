package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.KafkaBroker;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.hive.testing.EmbeddedPostgres;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.iceberg.Schema;
import org.apache.iceberg.flink.CatalogLoader;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.types.Types.LongType;
import org.apache.iceberg.types.Types.NestedField;
import org.apache.iceberg.types.Types.StringType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flink reading Kafka into Iceberg exactly once, on the cluster of real processes the process-level tests share
 * ({@link SharedProcesses}: a JobManager and two TaskManagers as child JVMs, RocksDB with incremental checkpoints
 * on local disk, jobs submitted through the REST endpoint), under SIGKILLs of TaskManager processes, a broker
 * stop/restart and an outage of the catalog, while a producer writes the topic; then the table is audited against
 * the topic by id and event time.
 *
 * <p>The job: {@code KafkaSource} (offsets from Flink's state only: no group offsets committed or read) → {@link
 * EventTimeRelease} → a stateless map → {@link LakecommitFlinkSink} → an Iceberg table in a JDBC catalog on
 * PostgreSQL, with aligned checkpoints. The faults, in a seeded order after the first (the seed is printed): the
 * first is a TaskManager kill aimed at a commit (the TaskManager running the committer, right after a checkpoint
 * completed; the log says whether the table had that checkpoint's commit yet); further kills of a TaskManager
 * running the job; broker stops of a few seconds; and catalog outages: PostgreSQL stopped right after a checkpoint
 * completed, so that its commit meets a catalog that does not answer, and started again seconds later (what a
 * user's catalog database does in a failover or a restart). Default build: 20,000 messages, the kill at a commit, 1
 * broker restart, 1 catalog outage; {@code -Plong}: 1,000,000 messages, 6 kills, 2 broker restarts, 2 outages.
 *
 * <p>Asserted: no duplicate, no loss, no row of an unknown id; a job restart per TaskManager kill; each catalog
 * outage met by the committer (failed commit attempts, retried or left pending, counted in the TaskManagers' logs,
 * which survive the restarts that reset the metrics); and an out-of-order rate (rows whose event time is below the
 * largest one an earlier snapshot committed) of at most DESIGN.md's 0.1 %.
 *
 * <p>What bounds the out-of-order rate: the Kafka source hands out each partition's fetched records as a batch, so
 * a checkpoint barrier cuts the partitions at event times up to about a second apart after a catch-up (4-12 % of
 * rows out of order measured without the release). {@link EventTimeRelease} holds each record until the watermark
 * (the lowest of the partitions' event times) passes it; with aligned checkpoints every release subtask has seen
 * the same watermarks when the barrier passes, so a snapshot holds exactly the rows at or below the watermark its
 * barrier followed, and every later row is above it: 0 out of order, whatever the restarts. With unaligned
 * checkpoints ({@link FlinkKafkaRescaleIT}'s third run) the barrier overtakes the records and watermarks in flight
 * to the release subtasks, so each subtask cuts at its own watermark: a row is then late by at most the spread of
 * the release subtasks' watermarks at the barrier, which is the event-time span of the data in flight between the
 * source and the release (network buffers; with watermark alignment, at most the alignment's drift plus that) —
 * measured 3 % of rows, at most 0.5 s late. The release does not bound that; only aligned checkpoints do.
 */
class FlinkKafkaProcessIT {
  static final String TABLE = "db.kafka_events";
  private static final String TOPIC = "events-process";
  private static final int PARTITIONS = 4;
  private static final String JOB_NAME = "kafka-events";
  static final String JOB_ID = "db.kafka_events-kafka-events";
  private static final Schema SCHEMA = new Schema(
      NestedField.required(1, "id", LongType.get()),
      NestedField.required(2, "event_time", LongType.get()),
      NestedField.optional(3, "payload", StringType.get()));
  static final RowType ROW_TYPE = RowType.of(
      new LogicalType[] {new BigIntType(false), new BigIntType(false), new VarCharType(VarCharType.MAX_LENGTH)},
      new String[] {"id", "event_time", "payload"});
  /** The Hive run's table, in the run's Hive database: the Iceberg table's columns, partitioned by event minute. */
  static final String HIVE_TABLE = "kafka_events";
  private static final Schema HIVE_SCHEMA = new Schema(
      NestedField.required(1, "id", LongType.get()),
      NestedField.required(2, "event_time", LongType.get()),
      NestedField.optional(3, "payload", StringType.get()),
      NestedField.optional(4, "event_minute", StringType.get()));
  static final RowType HIVE_ROW_TYPE = RowType.of(
      new LogicalType[] {new BigIntType(false), new BigIntType(false), new VarCharType(VarCharType.MAX_LENGTH),
          new VarCharType(VarCharType.MAX_LENGTH)},
      new String[] {"id", "event_time", "payload", "event_minute"});

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

  /**
   * {@code "<id>,<event time ms>"} → a row of the Hive table: {@link ToRow}'s columns and the event time's minute
   * (UTC, {@code yyyy-MM-dd-HH-mm}), the partition; stateless.
   */
  static final class ToHiveRow implements MapFunction<String, RowData> {
    private static final DateTimeFormatter MINUTE =
        DateTimeFormatter.ofPattern("yyyy-MM-dd-HH-mm").withZone(ZoneOffset.UTC);

    @Override
    public RowData map(String value) {
      int comma = value.indexOf(',');
      long eventTime = Long.parseLong(value.substring(comma + 1));
      return GenericRowData.of(Long.parseLong(value.substring(0, comma)), eventTime, StringData.fromString(value),
          StringData.fromString(MINUTE.format(Instant.ofEpochMilli(eventTime))));
    }
  }

  /** The Hive run's table: {@code database.kafka_events} of the metastore at {@code metastoreUri}. */
  static HiveSinkConfig hiveConfig(String metastoreUri, String database) {
    return HiveSinkConfig.builder()
        .metastoreUri(metastoreUri)
        .table(database + "." + HIVE_TABLE)
        .createTable(HIVE_SCHEMA, List.of("event_minute"))
        .build();
  }

  static IcebergSinkConfig config(Map<String, String> catalogProperties) {
    return IcebergSinkConfig.builder()
        .catalogProperties(catalogProperties)
        .table(TABLE)
        .createTable(SCHEMA, List.of())
        .tableProperties(Map.of("format-version", "2"))
        .build();
  }

  private enum Fault { KILL_AT_COMMIT, KILL, BROKER_RESTART, CATALOG_OUTAGE }

  @Test
  void kafkaToIcebergUnderTaskManagerKillsABrokerRestartAndACatalogOutage() throws Exception {
    // the kill at a commit, a broker restart and a catalog outage (a second kill is FlinkKafkaHiveProcessIT's)
    Result result = run(dir, TestScale.seed(), SinkUnderTest.LAKECOMMIT, TOPIC, "flink_kafka_process",
        new Faults(TestScale.pick(1, 6), TestScale.pick(1, 2), TestScale.pick(1, 2)));
    assertThat(result.topicMessages()).as("the topic holds every message once").isEqualTo(result.messages());
    LakeTableView.Audit audit = result.audit();
    assertThat(audit.duplicates()).as("duplicates: %s", audit).isZero();
    assertThat(audit.losses()).as("losses: %s", audit).isZero();
    assertThat(audit.unknown()).as("rows of no message: %s", audit).isZero();
    assertThat(audit.outOfOrderRate()).as("out-of-order rate (DESIGN.md: at most 0.1 %%): %s", audit)
        .isLessThanOrEqualTo(0.001);
    if (result.shortOfRows() != null) {
      throw result.shortOfRows();
    }
  }

  /**
   * The sink the job writes with, and where to: Lakecommit's into Iceberg, Iceberg's own {@code IcebergSink} (the
   * peer), or Lakecommit's into a Hive table ({@link FlinkKafkaHiveProcessIT}).
   */
  enum SinkUnderTest { LAKECOMMIT, ICEBERG_SINK, LAKECOMMIT_HIVE }

  /**
   * How many faults of each kind a run meets: TaskManager kills (the first aimed at a commit), broker restarts and
   * catalog (or metastore) outages.
   */
  record Faults(int kills, int brokerRestarts, int outages) {
    /** Every kind more than once: 2 kills, 1 broker restart and 1 outage; 6, 2 and 2 with {@code -Plong}. */
    static Faults all() {
      return new Faults(TestScale.pick(2, 6), TestScale.pick(1, 2), TestScale.pick(1, 2));
    }
  }

  /**
   * What a run left: the audit of its table against its topic, how many messages the topic holds (under
   * read_committed), and, if the table still lacked rows a minute after the job's end, that failure.
   */
  record Result(SinkUnderTest sink, long seed, long messages, long topicMessages, long restarts,
      LakeTableView.Audit audit, AssertionError shortOfRows) {
    @Override
    public String toString() {
      return String.format("%-12s seed %d: %s; job restarts %d; topic %d of %d messages%s", sink, seed, audit,
          restarts, topicMessages, messages, shortOfRows == null ? "" : "; " + shortOfRows.getMessage());
    }
  }

  /**
   * The scenario: a producer writes {@code topic} while the job reads it into an Iceberg table (in the JDBC
   * catalog of PostgreSQL database {@code database}) with {@code sink}, or for {@link SinkUnderTest#LAKECOMMIT_HIVE}
   * into a Hive table of Hive database {@code database} through a metastore this JVM serves (its data under {@code
   * dir}), under the seeded faults; the job is stopped with a drain once it has read the whole topic, and its table
   * audited against the topic. Asserts what the faults must have caused (a restart per kill; for Lakecommit's sink,
   * failed commit attempts during each catalog or metastore outage); the audit's figures are the caller's to
   * assert.
   */
  static Result run(Path dir, long seed, SinkUnderTest sink, String topicName, String database, Faults counts)
      throws Exception {
    long messages = TestScale.pick(20_000, 1_000_000);
    int kills = counts.kills();
    int brokerRestarts = counts.brokerRestarts();
    int outages = counts.outages();
    int rate = TestScale.pick(2_000, 8_000);
    Random random = new Random(seed);
    List<Fault> faults = new ArrayList<>();
    faults.addAll(Collections.nCopies(kills - 1, Fault.KILL));
    faults.addAll(Collections.nCopies(brokerRestarts, Fault.BROKER_RESTART));
    faults.addAll(Collections.nCopies(outages, Fault.CATALOG_OUTAGE));
    Collections.shuffle(faults, random);
    faults.add(0, Fault.KILL_AT_COMMIT);
    System.out.printf("FlinkKafkaProcessIT %s seed=%d (rerun with -Dlakecommit.seed=%d): %d messages at %d/s,"
        + " faults %s%n", sink, seed, seed, messages, rate, faults);

    SharedProcesses shared = SharedProcesses.get();
    KafkaBroker kafka = shared.kafka();
    FlinkProcessCluster cluster = shared.cluster();
    kafka.createTopic(topicName, PARTITIONS);
    TopicProducer producer = new TopicProducer(kafka.bootstrapServers(), topicName, PARTITIONS, messages, rate);
    Duration wait = Duration.ofMinutes(TestScale.pick(3, 20));
    long restarts;
    try (Lake lake = sink == SinkUnderTest.LAKECOMMIT_HIVE ? Lake.hive(dir, database)
        : Lake.iceberg(shared.postgres(), database, dir, sink)) {
      CommittedTable table = lake.table;
      String jobId = submit(cluster, kafka.bootstrapServers(), topicName, lake, sink);
      try {
        // the producer starts once the job runs, so that the faults meet a job that is reading and committing
        TaskManagerKills.awaitRunning(cluster, jobId, Duration.ofMinutes(3));
        producer.start();
        // The topic is written in segments, one per fault and one after: each fault comes when the table holds a
        // seeded share (20-60 %) of its segment, while the rest of the segment is still being produced and read.
        long segment = messages / (faults.size() + 1);
        for (int i = 0; i < faults.size(); i++) {
          producer.allowed.set((i + 1) * segment);
          long target = i * segment + (long) ((0.2 + 0.4 * random.nextDouble()) * segment);
          awaitCommittedRows(table, target, producer, wait);
          switch (faults.get(i)) {
            case KILL_AT_COMMIT -> killDuringCommit(cluster, jobId, lake);
            case KILL -> {
              TaskManagerKills.Kill kill =
                  TaskManagerKills.aim(cluster, jobId, running -> running.anyTaskManager(random));
              System.out.printf("FlinkKafkaProcessIT fault %d: SIGKILL of %s (running %d of the job's %d subtasks)"
                  + " at %d committed rows%n", i, kill.victim(), kill.before().on(kill.victim()).size(),
                  kill.before().subtasks().size(), table.committedRows());
              System.out.printf("FlinkKafkaProcessIT fault %d: job %s%n", i, kill.execute());
            }
            case BROKER_RESTART -> {
              long outage = 2_000 + random.nextInt(3_000);
              System.out.printf("FlinkKafkaProcessIT fault %d: broker stop for %d ms at %d committed rows%n", i,
                  outage, table.committedRows());
              kafka.stop();
              Thread.sleep(outage);   // the length of the outage, not synchronisation
              kafka.start();
            }
            case CATALOG_OUTAGE -> {
              // rows keep coming during the outage (into the next segment), so that there are commits to fail
              producer.allowed.set(Math.min(messages, (i + 2) * segment));
              catalogOutage(i, lake, cluster, jobId, 3_000 + random.nextInt(4_000), sink);
            }
          }
        }
        producer.allowed.set(messages);
        producer.join(Duration.ofMinutes(TestScale.pick(2, 20)));
        // Every message but the topic's end marks: the job has read the whole topic (see TopicProducer), so that the
        // drained stop below, which ends the sources where they are, leaves nothing unread; its final watermark
        // releases the end marks.
        try {
          awaitCommittedRows(table, messages - producer.finalMessages(), producer, wait);
        } catch (AssertionError peerShort) {
          if (sink != SinkUnderTest.ICEBERG_SINK) {
            throw peerShort;
          }
          // the peer's shortfall is its result: stop it as Lakecommit's job is stopped, and audit its table
          System.out.println("FlinkKafkaProcessIT " + sink + ": " + peerShort.getMessage());
        }
        // each kill's restart was seen in the job's deployment; Flink's own count must have them all too (polled:
        // the metric fetcher can lag, see TaskManagerKills.Kill#awaitRestart)
        long countDeadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while ((restarts = cluster.jobMetric(jobId, "numRestarts")) < kills && System.nanoTime() < countDeadline) {
          Thread.sleep(200);   // polling the REST endpoint
        }
        System.out.printf("FlinkKafkaProcessIT: job restarts %d%n", restarts);
        assertThat(restarts).as("every TaskManager kill restarted the job").isGreaterThanOrEqualTo(kills);
        cluster.post("/jobs/" + jobId + "/stop", Map.of("drain", true, "targetDirectory",
            dir.resolve("savepoints").toUri().toString()));
        assertThat(cluster.awaitTerminal(jobId, Duration.ofMinutes(2))).isEqualTo("FINISHED");
      } finally {
        producer.interrupt();
        cancelIfRunning(cluster, jobId);
      }
      // A table short of rows is reported by the audit below, after the topic's own count: whether the topic
      // lacks the rows (the producer) or the table does (the sink) is what tells the cause.
      AssertionError shortOfRows = null;
      try {
        awaitCommittedRows(table, messages, producer, Duration.ofMinutes(1));
      } catch (AssertionError e) {
        shortOfRows = e;
      }

      Map<Long, Long> topic = TopicProducer.readTopic(kafka.bootstrapServers(), topicName);
      LakeTableView.Audit audit = lake.audit(topic);
      Result result = new Result(sink, seed, messages, topic.size(), restarts, audit, shortOfRows);
      System.out.println("FlinkKafkaProcessIT audit: " + result);
      return result;
    }
  }

  /**
   * A run's target: its table as the test sees it ({@link #table}), what the job's sink is given, and the process
   * a catalog outage stops: PostgreSQL under the JDBC catalog (shared by the test JVM's runs), or the Hive Metastore
   * this run serves (started and closed with it). Closing it closes the view and a metastore of its own.
   */
  static final class Lake implements AutoCloseable {
    final CommittedTable table;
    /** Iceberg: the JDBC catalog's properties; Hive: empty. */
    final Map<String, String> catalog;
    /** Hive: the metastore and the database; Iceberg: null. */
    final HiveMetastoreServer hms;
    final String hiveDatabase;
    private final EmbeddedPostgres pg;
    /** Lakecommit's job id (its commits carry it); null for the peer, whose table holds only the peer's commits. */
    private final String jobId;

    private Lake(CommittedTable table, Map<String, String> catalog, HiveMetastoreServer hms, String hiveDatabase,
        EmbeddedPostgres pg, String jobId) {
      this.table = table;
      this.catalog = catalog;
      this.hms = hms;
      this.hiveDatabase = hiveDatabase;
      this.pg = pg;
      this.jobId = jobId;
    }

    /** An Iceberg table in a JDBC catalog on a new database {@code database} of {@code pg}, data under dir. */
    static Lake iceberg(EmbeddedPostgres pg, String database, Path dir, SinkUnderTest sink) {
      Map<String, String> catalog = Map.of(
          "type", "jdbc",
          "uri", pg.createDatabase(database),
          "jdbc.user", pg.user(),
          "jdbc.password", pg.password(),
          "jdbc.schema-version", "V1",
          "warehouse", dir.resolve("warehouse").toUri().toString());
      LakeTableView table = new LakeTableView(config(catalog));
      if (sink == SinkUnderTest.ICEBERG_SINK) {
        // Iceberg's sink writes into an existing table
        try {
          table.create(SCHEMA, Map.of("format-version", "2"));
        } catch (RuntimeException e) {
          closeQuietly(table, e);
          throw e;
        }
      }
      return new Lake(table, catalog, null, null, pg, sink == SinkUnderTest.LAKECOMMIT ? JOB_ID : null);
    }

    /**
     * A Hive table through a metastore on Derby that this JVM serves on 127.0.0.1 (the TaskManagers reach it by
     * its Thrift URI), in a new database {@code database} whose data lies under {@code dir}.
     */
    static Lake hive(Path dir, String database) throws Exception {
      HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby();
      try {
        IMetaStoreClient client = hms.newRetryingClient();
        try {
          client.createDatabase(new Database(database, "FlinkKafkaProcessIT",
              "file:" + dir.resolve("hive").resolve(database + ".db").toAbsolutePath(), new HashMap<>()));
        } finally {
          client.close();
        }
        // the sink's job id for job JOB_NAME: "<database>.<table>-<job name>"
        return new Lake(new HiveTableView(hms, database, HIVE_TABLE), Map.of(), hms, database, null,
            database + "." + HIVE_TABLE + "-" + JOB_NAME);
      } catch (Exception | Error e) {
        hms.close();
        throw e;
      }
    }

    private static void closeQuietly(CommittedTable table, RuntimeException failure) {
      try {
        table.close();
      } catch (IOException | RuntimeException e) {
        failure.addSuppressed(e);
      }
    }

    String catalogKind() {
      return hms != null ? "metastore" : "catalog";
    }

    void stopCatalog() {
      if (hms != null) {
        hms.stop();
      } else {
        pg.stop();
      }
    }

    void startCatalog() {
      if (hms != null) {
        hms.start();
      } else {
        pg.start();
      }
    }

    /** The last Flink checkpoint whose commit the table holds (Lakecommit's watermark is its own numbering). */
    long committedCheckpoint() {
      return jobId != null ? table.watermark(jobId) : ((LakeTableView) table).icebergFlinkCheckpoint();
    }

    /** The table audited against the topic (for Lakecommit's sink, the commits of its job). */
    LakeTableView.Audit audit(Map<Long, Long> topic) throws IOException {
      if (table instanceof HiveTableView hive) {
        return hive.audit(jobId, topic);
      }
      return LakeTableView.Audit.of(((LakeTableView) table).load(), jobId, topic);
    }

    @Override
    public void close() throws IOException {
      try {
        table.close();
      } finally {
        if (hms != null) {
          hms.close();
        }
      }
    }
  }

  private static String submit(FlinkProcessCluster cluster, String bootstrap, String topicName, Lake lake,
      SinkUnderTest sink) throws Exception {
    Map<String, String> catalog = lake.catalog;
    Configuration conf = processJob();
    // aligned: what bounds the out-of-order rate (see the class comment)
    conf.set(CheckpointingOptions.ENABLE_UNALIGNED, false);
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createRemoteEnvironment("127.0.0.1",
        cluster.restPort(), conf);
    env.setParallelism(2);
    KafkaSource<String> source = KafkaSource.<String>builder()
        .setBootstrapServers(bootstrap)
        .setTopics(topicName)
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
    // A reader per partition, aligned on the messages' event times (a reader ahead of the others waits), so that
    // the release holds fewer records.
    WatermarkStrategy<String> eventTime = WatermarkStrategy.<String>forMonotonousTimestamps()
        .withWatermarkAlignment("kafka-events", Duration.ofMillis(1), Duration.ofMillis(5));
    env.getConfig().setAutoWatermarkInterval(5);
    DataStream<String> released = env.fromSource(source, eventTime, "kafka").uid("kafka")
        .setParallelism(PARTITIONS)
        .rebalance()
        .transform("event-time release", Types.STRING, new EventTimeRelease()).uid("release");
    if (sink == SinkUnderTest.LAKECOMMIT_HIVE) {
      String metastoreUri = lake.hms.uri();
      String database = lake.hiveDatabase;
      released.map(new ToHiveRow()).uid("to-row").returns(InternalTypeInfo.of(HIVE_ROW_TYPE))
          .sinkTo(LakecommitFlinkSink.forRowData(HIVE_ROW_TYPE).hive(() -> hiveConfig(metastoreUri, database))
              .jobName(JOB_NAME).build()).uid("lakecommit-sink");
      return env.executeAsync("kafka-events-" + sink).getJobID().toString();
    }
    DataStream<RowData> rows = released.map(new ToRow()).uid("to-row").returns(InternalTypeInfo.of(ROW_TYPE));
    switch (sink) {
      case LAKECOMMIT -> rows.sinkTo(LakecommitFlinkSink.forRowData(ROW_TYPE).iceberg(() -> config(catalog))
          .jobName(JOB_NAME).build()).uid("lakecommit-sink");
      case ICEBERG_SINK -> {
        IcebergSinkConfig config = config(catalog);
        CatalogLoader loader = CatalogLoader.custom(config.catalogName(), catalog,
            new org.apache.hadoop.conf.Configuration(), "org.apache.iceberg.jdbc.JdbcCatalog");
        org.apache.iceberg.flink.sink.IcebergSink.forRowData(rows)
            .tableLoader(TableLoader.fromCatalog(loader, config.table()))
            .uidSuffix("iceberg-sink")
            .append();
      }
      default -> throw new IllegalArgumentException("Not an Iceberg sink: " + sink);
    }
    return env.executeAsync("kafka-events-" + sink).getJobID().toString();
  }

  /**
   * SIGKILL of the TaskManager running the committer (subtask 0 of the sink's committer vertex) right after the
   * job's next checkpoint completed, so that its commit is under way (or just about to start); then a replacement
   * TaskManager and the job's restart.
   */
  private static void killDuringCommit(FlinkProcessCluster cluster, String jobId, Lake lake) throws Exception {
    TaskManagerKills.Kill kill = TaskManagerKills.aim(cluster, jobId,
        running -> running.taskManagerOf("Committer", 0));
    long next = awaitNextCheckpoint(cluster, jobId);
    kill.fire();
    // the last Flink checkpoint whose commit the table holds: Lakecommit's watermark is its own numbering
    long watermark = lake.committedCheckpoint();
    TaskManagerKills.Restart restart = kill.awaitRestart();
    System.out.printf("FlinkKafkaProcessIT fault 0: SIGKILL of %s, the committer's TaskManager (running %d of the"
        + " job's %d subtasks), right after checkpoint %d completed; the table then held the job's commits up to %d"
        + " (%s); job %s%n", kill.victim(), kill.before().on(kill.victim()).size(), kill.before().subtasks().size(),
        next, watermark, watermark < next ? "killed before that checkpoint's commit was done"
            : "its commit was already done", restart);
  }

  /**
   * PostgreSQL, the catalog's database (for Hive: the metastore's Thrift server), stopped right after the job's next
   * checkpoint completed (its commit is starting) and started again {@code outageMs} later, or once a commit
   * attempt failed if none had by then. Asserts that the committer met the outage: commit attempts that failed
   * (the catalog did not answer), retried or left pending, counted in the TaskManagers' logs.
   */
  private static void catalogOutage(int fault, Lake lake, FlinkProcessCluster cluster, String jobId,
      long outageMs, SinkUnderTest sink) throws Exception {
    long rows = lake.table.committedRows();
    long failedBefore = failedCommitLogLines(cluster);
    long restarts = cluster.jobMetric(jobId, "numRestarts");
    long next = awaitNextCheckpoint(cluster, jobId);
    lake.stopCatalog();
    Thread.sleep(outageMs);   // the length of the outage, not synchronisation
    if (sink == SinkUnderTest.ICEBERG_SINK) {
      // the peer's failed attempts are not in Lakecommit's log lines: its outage is the drawn length
      lake.startCatalog();
      System.out.printf("FlinkKafkaProcessIT fault %d: catalog outage of %d ms from the completion of checkpoint %d"
          + " at %d committed rows, %d job restarts%n", fault, outageMs, next, rows,
          cluster.jobMetric(jobId, "numRestarts") - restarts);
      return;
    }
    // The outage lasts until a commit attempt met it (bounded): on a loaded machine the checkpoint whose commit
    // it aimed at can have been committed before the stop, and the next one come late.
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (failedCommitLogLines(cluster) == failedBefore && System.nanoTime() < deadline) {
      Thread.sleep(100);   // polling the TaskManagers' logs
    }
    lake.startCatalog();
    long failed = failedCommitLogLines(cluster) - failedBefore;
    System.out.printf("FlinkKafkaProcessIT fault %d: %s outage of %d ms from the completion of checkpoint %d"
        + " at %d committed rows: %d failed commit attempts (retried or left pending), %d job restarts%n", fault,
        lake.catalogKind(), outageMs, next, rows, failed, cluster.jobMetric(jobId, "numRestarts") - restarts);
    assertThat(failed).as("commit attempts that failed while the %s was down", lake.catalogKind()).isPositive();
  }

  /**
   * Lines of the TaskManagers' logs saying that a commit attempt failed: retried with backoff by the sink's retry
   * policy, or left pending by the committer for Flink to hand over again.
   */
  static long failedCommitLogLines(FlinkProcessCluster cluster) throws IOException {
    return cluster.taskManagerLogLines("RetryPolicy", "Retrying commit of")
        + cluster.taskManagerLogLines("LakecommitCommitter", "pending");
  }

  /** Polls (bounded) until a checkpoint of the job completes after the last completed one; returns its id. */
  static long awaitNextCheckpoint(FlinkProcessCluster cluster, String jobId) throws InterruptedException {
    long completed = completedCheckpoint(cluster, jobId);
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    long next;
    while ((next = completedCheckpoint(cluster, jobId)) <= completed) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("No checkpoint of job " + jobId + " completed after " + completed + " within 2"
            + " minutes");
      }
      Thread.sleep(20);   // polling the REST endpoint for the checkpoint's completion
    }
    return next;
  }

  /**
   * The settings of a job on the process cluster under kills: an exactly-once checkpoint a second, and restarts
   * enough for every kill. A kill counted 1 to 13 restarts (measured) before the job ran again, 12-58 s later, while
   * the replacement TaskManager started: one -Plong run's 6 kills counted 41 in all on a loaded machine; 100 leaves
   * too little.
   */
  static Configuration processJob() {
    Configuration conf = new Configuration();
    conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofSeconds(1));
    conf.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE, CheckpointingMode.EXACTLY_ONCE);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 500);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofSeconds(1));
    return conf;
  }

  /** Cancels the job unless it ended (a failed test must not leave it running on the shared cluster). */
  static void cancelIfRunning(FlinkProcessCluster cluster, String jobId) throws IOException {
    if (!List.of("FINISHED", "FAILED", "CANCELED").contains(cluster.jobStatus(jobId))) {
      cluster.cancel(jobId);
      cluster.awaitTerminal(jobId, Duration.ofMinutes(1));
    }
  }

  static long completedCheckpoint(FlinkProcessCluster cluster, String jobId) {
    try {
      return cluster.rest("/jobs/" + jobId + "/checkpoints").path("latest").path("completed").path("id").asLong(0);
    } catch (IOException e) {
      return 0;
    }
  }

  /**
   * Polls the table (bounded) until it holds {@code rows} rows; fails early if the producer failed. A read that
   * fails (the catalog coming back) counts as not there yet.
   */
  static void awaitCommittedRows(CommittedTable table, long rows, TopicProducer producer, Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    long seen = 0;
    while (true) {
      try {
        seen = table.committedRows();
      } catch (RuntimeException catalogNotAnswering) {
        seen = -1;
      }
      if (seen >= rows) {
        return;
      }
      producer.check();
      if (System.nanoTime() > deadline) {
        throw new AssertionError("The table holds " + seen + " rows after " + timeout + ", expected " + rows
            + " (producer sent " + producer.sent.get() + ")");
      }
      Thread.sleep(200);   // polling the table
    }
  }
}
