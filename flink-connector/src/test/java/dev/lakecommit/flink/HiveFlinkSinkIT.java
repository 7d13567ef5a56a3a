package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.hive.HiveSink;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.hadoop.HadoopInputFile;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.parquet.Parquet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Flink sink in a MiniCluster writing to a Hive table through an in-process metastore; the table's visible
 * files, partition by partition as the metastore lists them, read back with Iceberg's Parquet reader.
 */
class HiveFlinkSinkIT {
  private static final String DB = "lc";

  @RegisterExtension
  static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
      new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
          .build());

  static HiveMetastoreServer hms;

  @BeforeAll
  static void startMetastore() throws Exception {
    hms = HiveMetastoreServer.startOnDerby();
    IMetaStoreClient client = hms.newRetryingClient();
    try {
      client.createDatabase(new Database(DB, "flink tests", hms.warehouseLocation() + "/" + DB + ".db",
          new HashMap<>()));
    } finally {
      client.close();
    }
  }

  @AfterAll
  static void stopMetastore() {
    if (hms != null) {
      hms.close();
    }
  }

  static HiveSinkConfig config(String uri, String table) {
    return HiveSinkConfig.builder().metastoreUri(uri).table(DB + "." + table)
        .createTable(TestJobs.SCHEMA, List.of("part")).build();
  }

  /**
   * Two bounded jobs with the same job name (the second a fresh start), rate-limited (writers finishing apart)
   * then unthrottled, over skewed partitions.
   */
  @Test
  void boundedRunsEndWithExactlyTheInputRows() throws Exception {
    String uri = hms.uri();
    String table = "events";
    Set<Long> expected = new HashSet<>();
    for (int run = 0; run < 2; run++) {
      int parallelism = run == 0 ? 3 : 2;
      long rows = run == 0 ? 3_000 : 5_000;
      long from = run * 1_000_000L;
      StreamExecutionEnvironment env = TestJobs.environment(parallelism, 0);
      TestJobs.boundedRows(env, "hive-" + run, from, rows, run == 0 ? 1_500 : 0, parallelism)
          .sinkTo(LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE).hive(() -> config(uri, table))
              .jobName("flink-it").build())
          .uid("lakecommit-sink");
      env.execute("hive-" + run);
      expected.addAll(TestJobs.range(from, rows));

      TestJobs.Audit audit = TestJobs.Audit.of(readBack(table), expected);
      assertThat(audit.duplicates()).as("duplicates after run %s: %s", run, audit).isZero();
      assertThat(audit.losses()).as("losses after run %s: %s", run, audit).isZero();
      assertThat(audit.rows()).isEqualTo(expected.size());
    }
    IMetaStoreClient client = hms.newRetryingClient();
    try {
      assertThat(client.getTable(DB, table).getParameters())
          .containsKey(CommitId.WATERMARK_KEY_PREFIX + "lc.events-flink-it");
      assertThat(client.listPartitionNames(DB, table, (short) -1))
          .contains("part=hot", "part=p0", "part=p1", "part=p2", "part=p3", "part=p4");
    } finally {
      client.close();
    }
  }

  /**
   * Scenario 4 of issue 14 on Hive: the job stops with a savepoint, the table is dropped (with its data) and created
   * again under its name, and the job is restored from the savepoint: it fails naming both identities (create time,
   * location and the sink's table id) and the new table holds nothing: no partition, no watermark.
   */
  @Test
  void aRestoreAgainstATableCreatedAgainFails(@TempDir java.nio.file.Path savepoints) throws Exception {
    String uri = hms.uri();
    String table = "recreated";
    String jobId = "lc.recreated-flink-it";
    StreamExecutionEnvironment first = TestJobs.environment(2, 0);
    TestJobs.unboundedRows(first, "hive-recreated-1", 1_000_000, 400, 2)
        .sinkTo(LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE).hive(() -> config(uri, table))
            .jobName("flink-it").build())
        .uid("lakecommit-sink");
    JobClient job1 = first.executeAsync("hive-recreated-1");
    String savepoint;
    try {
      awaitWatermark(table, jobId, 2, Duration.ofMinutes(2));
    } finally {
      savepoint = job1.stopWithSavepoint(false, savepoints.toUri().toString(), SavepointFormatType.CANONICAL)
          .get(2, TimeUnit.MINUTES);
    }
    String oldIdentity = TestJobs.identity(SinkRecipe.hive(() -> config(uri, table)));
    IMetaStoreClient client = hms.newRetryingClient();
    try {
      client.dropTable(DB, table, true, false);
    } finally {
      client.close();
    }

    StreamExecutionEnvironment second = TestJobs.environment(2, 0, savepoint);
    TestJobs.unboundedRows(second, "hive-recreated-2", 1_000_000, 400, 2)
        .sinkTo(LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE).hive(() -> config(uri, table))
            .jobName("flink-it").build())
        .uid("lakecommit-sink");
    String newIdentity = TestJobs.identity(SinkRecipe.hive(() -> config(uri, table)));
    assertThat(newIdentity).isNotEqualTo(oldIdentity);
    assertThat(FlinkRestoreIT.failureOf(second.executeAsync("hive-recreated-2"), Duration.ofMinutes(2)))
        .contains("was made for another table than " + DB + "." + table + " is now (identity " + oldIdentity
            + ", now " + newIdentity + "; was the table dropped and created again?)");

    client = hms.newRetryingClient();
    try {
      assertThat(client.listPartitionNames(DB, table, (short) -1)).as("partitions of the new table").isEmpty();
      assertThat(client.getTable(DB, table).getParameters()).doesNotContainKey(CommitId.WATERMARK_KEY_PREFIX + jobId);
    } finally {
      client.close();
    }
    assertThat(readBack(table)).as("rows in the new table").isEmpty();
  }

  /** Polls (bounded) until the job's watermark in the table's parameters reaches {@code min}. */
  private static void awaitWatermark(String table, String jobId, long min, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    long seen = 0;
    while (System.nanoTime() < deadline) {
      IMetaStoreClient client = hms.newRetryingClient();
      try {
        String value = client.getTable(DB, table).getParameters().get(CommitId.WATERMARK_KEY_PREFIX + jobId);
        seen = value == null ? 0 : Long.parseLong(value);
      } catch (org.apache.hadoop.hive.metastore.api.NoSuchObjectException e) {
        seen = 0;
      } finally {
        client.close();
      }
      if (seen >= min) {
        return;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("Job " + jobId + " did not commit checkpoint " + min + " to " + table + " within "
        + timeout + " (watermark " + seen + ")");
  }

  /** Every row of every visible file of every partition the metastore lists. */
  private static List<Record> readBack(String table) throws Exception {
    Schema staged = ((HiveSink<?>) SinkRecipe.hive(() -> config(hms.uri(), table)).open(TestJobs.ROW_TYPE).sink())
        .schema();
    Configuration conf = new Configuration();
    List<Record> records = new ArrayList<>();
    IMetaStoreClient client = hms.newRetryingClient();
    try {
      for (Partition partition : client.listPartitions(DB, table, (short) -1)) {
        Path dir = new Path(partition.getSd().getLocation());
        FileSystem fs = dir.getFileSystem(conf);
        for (FileStatus file : fs.listStatus(dir)) {
          String name = file.getPath().getName();
          if (file.isDirectory() || name.startsWith(".") || name.startsWith("_")) {
            continue;
          }
          try (CloseableIterable<Record> rows = Parquet.read(HadoopInputFile.fromPath(file.getPath(), conf))
              .project(staged)
              .createReaderFunc(fileSchema -> GenericParquetReaders.buildReader(staged, fileSchema))
              .build()) {
            rows.forEach(r -> records.add(r.copy()));
          }
        }
      }
    } finally {
      client.close();
    }
    return records;
  }

  /** A Hive table only adds rows: a Flink SQL changelog fails the job naming the first row kind it cannot write. */
  @Test
  void aChangelogIsRefusedNamingTheRowKind() {
    String uri = hms.uri();
    StreamExecutionEnvironment env = TestJobs.environment(2, 0);
    FlinkChangelogIT.changelog(env, 1_000)
        .sinkTo(LakecommitFlinkSink.forRowData(FlinkChangelogIT.ROW_TYPE)
            .hive(() -> HiveSinkConfig.builder().metastoreUri(uri).table(DB + ".counts")
                .createTable(FlinkChangelogIT.SCHEMA, List.of()).build())
            .jobName("counts")
            .build())
        .uid("lakecommit-sink");

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> env.execute("changelog-hive"))
        .rootCause().isInstanceOf(IllegalArgumentException.class)
        .hasMessageMatching("(?s).*has row kind (UPDATE_BEFORE \\(-U\\)|DELETE \\(-D\\)), but Hive table"
            + " lc.counts only adds rows.*");
  }
}
