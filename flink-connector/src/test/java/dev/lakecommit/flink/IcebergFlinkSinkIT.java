package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Flink sink in a MiniCluster writing to an Iceberg table in a Hadoop catalog; every run ends with exactly
 * the input rows, read back by Iceberg's generic reader.
 */
class IcebergFlinkSinkIT {
  @RegisterExtension
  static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
      new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
          .build());

  @TempDir
  static Path dir;

  static IcebergSinkConfig config(String warehouse, String table) {
    return configBuilder(warehouse, table).build();
  }

  /** The tests' table: a format-v2 table of {@link TestJobs#SCHEMA} partitioned by {@code part}, created if missing. */
  static IcebergSinkConfig.Builder configBuilder(String warehouse, String table) {
    return IcebergSinkConfig.builder()
        .catalogProperties(Map.of("type", "hadoop", "warehouse", warehouse))
        .table(table)
        .createTable(TestJobs.SCHEMA, List.of("part"))
        .tableProperties(Map.of("format-version", "2"));
  }

  static LakecommitFlinkSink sink(String warehouse, String table, String jobName) {
    return LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE)
        .iceberg(() -> config(warehouse, table))
        .jobName(jobName)
        .build();
  }

  static Table load(String warehouse, String table) {
    Catalog catalog = CatalogUtil.buildIcebergCatalog("check", Map.of("type", "hadoop", "warehouse", warehouse),
        new org.apache.hadoop.conf.Configuration());
    return catalog.loadTable(TableIdentifier.parse(table));
  }

  static TestJobs.Audit audit(String warehouse, String table, Set<Long> expected) throws Exception {
    try (CloseableIterable<Record> records = IcebergGenerics.read(load(warehouse, table)).build()) {
      return TestJobs.Audit.of(records, expected);
    }
  }

  /**
   * Bounded jobs, one after another with the same job name on the same table (each a fresh start: the sink must
   * number its checkpoints above what the previous runs committed), alternating unthrottled and rate-limited
   * runs at parallelism 2-4, over skewed partitions.
   */
  @Test
  void boundedRunsEndWithExactlyTheInputRows() throws Exception {
    String warehouse = dir.resolve("bounded").toString();
    String table = "db.bounded";
    int runs = TestScale.pick(5, 50);
    Set<Long> expected = new HashSet<>();
    for (int run = 0; run < runs; run++) {
      int parallelism = 2 + run % 3;
      boolean rateLimited = run % 2 == 1;
      long rows = rateLimited ? 3_000 : 10_000;
      long from = run * 1_000_000L;
      String name = "bounded-" + run;
      StreamExecutionEnvironment env = TestJobs.environment(parallelism, 0);
      TestJobs.boundedRows(env, name, from, rows, rateLimited ? 600 : 0, parallelism)
          .sinkTo(sink(warehouse, table, "bounded")).uid("lakecommit-sink");
      env.execute(name);
      expected.addAll(TestJobs.range(from, rows));

      TestJobs.Audit audit = audit(warehouse, table, expected);
      assertThat(audit.duplicates()).as("duplicates after run %s: %s", run, audit).isZero();
      assertThat(audit.losses()).as("losses after run %s: %s", run, audit).isZero();
      assertThat(audit.rows()).isEqualTo(expected.size());
      if (rateLimited) {
        Map<Integer, Long> finished = TestJobs.FINISHED.get(name);
        long spread = finished.values().stream().mapToLong(Long::longValue).max().getAsLong()
            - finished.values().stream().mapToLong(Long::longValue).min().getAsLong();
        assertThat(Duration.ofNanos(spread)).as("writers finishing apart in run %s", run)
            .isGreaterThan(Duration.ofMillis(300));
      }
    }
    Table t = load(warehouse, table);
    long watermark = Long.parseLong(t.properties().get(CommitId.WATERMARK_KEY_PREFIX + "db.bounded-bounded"));
    long snapshots = 0;
    for (Snapshot snapshot : t.snapshots()) {
      snapshots++;
    }
    assertThat(snapshots).as("one snapshot per checkpoint with data, at least one per run")
        .isGreaterThanOrEqualTo(runs);
    assertThat(watermark).as("checkpoint ids keep growing across fresh starts").isGreaterThanOrEqualTo(runs);
  }

  /** An unbounded job with an operator that throws at random rows; Flink restarts it from its checkpoints. */
  @Test
  void unboundedJobWithRandomFailuresEndsWithExactlyTheInputRows() throws Exception {
    long seed = TestScale.seed();
    System.out.println("IcebergFlinkSinkIT.unboundedJobWithRandomFailures seed=" + seed
        + " (rerun with -Dlakecommit.seed=" + seed + ")");
    String warehouse = dir.resolve("chaos").toString();
    String table = "db.chaos";
    int parallelism = 3;
    long rows = TestScale.pick(6_000, 30_000);
    StreamExecutionEnvironment env = TestJobs.environment(parallelism, 20);
    int before = TestJobs.Chaos.THROWN.get();
    TestJobs.unboundedRows(env, rows, 2_000, parallelism)
        .map(new TestJobs.Chaos(seed, 2, (int) (rows / parallelism))).uid("chaos")
        .returns(org.apache.flink.table.runtime.typeutils.InternalTypeInfo.of(TestJobs.ROW_TYPE))
        .sinkTo(sink(warehouse, table, "chaos")).uid("lakecommit-sink");
    JobClient job = env.executeAsync("chaos");
    Set<Long> expected = TestJobs.range(0, rows);
    try {
      awaitAll(warehouse, table, expected, Duration.ofMinutes(3), "seed " + seed);
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
    TestJobs.Audit audit = audit(warehouse, table, expected);
    assertThat(TestJobs.Chaos.THROWN.get() - before).as("injected failures (seed %s)", seed).isPositive();
    assertThat(audit.duplicates()).as("duplicates (seed %s): %s", seed, audit).isZero();
    assertThat(audit.losses()).as("losses (seed %s): %s", seed, audit).isZero();
  }

  /** Stop with a savepoint part-way, then start a new job from the savepoint with the same job id. */
  @Test
  void restartFromSavepointEndsWithExactlyTheInputRows() throws Exception {
    String warehouse = dir.resolve("savepoint").toString();
    String table = "db.savepoint";
    int parallelism = 3;
    // Long enough that the stop comes before the end of the input even when commits show late (a loaded machine).
    long rows = TestScale.pick(20_000, 60_000);
    double rate = 1_000;
    Set<Long> expected = TestJobs.range(0, rows);

    StreamExecutionEnvironment first = TestJobs.environment(parallelism, 0);
    TestJobs.unboundedRows(first, rows, rate, parallelism)
        .sinkTo(sink(warehouse, table, "savepoint")).uid("lakecommit-sink");
    JobClient job = first.executeAsync("before-savepoint");
    long committed = awaitRows(warehouse, table, expected, rows / 10, Duration.ofMinutes(2));
    long stopping = System.nanoTime();
    String savepoint = job.stopWithSavepoint(false, dir.resolve("savepoints").toUri().toString(),
        SavepointFormatType.CANONICAL).get(2, TimeUnit.MINUTES);
    TestJobs.Audit atStop = audit(warehouse, table, expected);
    System.out.printf("Savepoint test: %s rows committed when stopping, %s at the savepoint %s (stop took %s ms)%n",
        committed, atStop.rows(), savepoint, (System.nanoTime() - stopping) / 1_000_000);
    assertThat(committed).isPositive();
    assertThat(atStop.losses()).as("the first job stopped before the end of the input").isPositive();
    assertThat(atStop.duplicates()).isZero();

    StreamExecutionEnvironment second = TestJobs.environment(parallelism, 0, savepoint);
    TestJobs.unboundedRows(second, rows, rate, parallelism)
        .sinkTo(sink(warehouse, table, "savepoint")).uid("lakecommit-sink");
    JobClient resumed = second.executeAsync("from-savepoint");
    try {
      awaitAll(warehouse, table, expected, Duration.ofMinutes(2), "savepoint " + savepoint);
    } finally {
      resumed.cancel().get(1, TimeUnit.MINUTES);
    }
    TestJobs.Audit audit = audit(warehouse, table, expected);
    assertThat(audit.duplicates()).as("duplicates: %s", audit).isZero();
    assertThat(audit.losses()).as("losses: %s", audit).isZero();
  }

  /** Batch execution, no checkpoints: everything is committed once, at the end of the input. */
  @Test
  void batchJobWithoutCheckpointsCommitsOnceAtTheEnd() throws Exception {
    String warehouse = dir.resolve("batch").toString();
    String table = "db.batch";
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setRuntimeMode(org.apache.flink.api.common.RuntimeExecutionMode.BATCH);
    env.setParallelism(2);
    TestJobs.boundedRows(env, "batch", 0, 2_000, 0, 2)
        .sinkTo(sink(warehouse, table, "batch")).uid("lakecommit-sink");
    env.execute("batch");
    TestJobs.Audit audit = audit(warehouse, table, TestJobs.range(0, 2_000));
    assertThat(audit.duplicates()).isZero();
    assertThat(audit.losses()).isZero();
    Table t = load(warehouse, table);
    assertThat(t.snapshots()).hasSize(1);
    assertThat(t.currentSnapshot().summary()).containsEntry(CommitId.JOB_ID_KEY, "db.batch-batch")
        .containsEntry(CommitId.CHECKPOINT_ID_KEY, "1");
  }

  /**
   * 40 partitions in no order through writers with 4 open files, with Flink's object reuse on (the writer sees one
   * reused view of each row): the writers hold copies of the records of partitions without an open file and write
   * them grouped, so the job's files stay few, and every row lands once.
   */
  @Test
  void morePartitionsThanOpenFilesGiveFewFilesAndExactlyTheInputRows() throws Exception {
    String warehouse = dir.resolve("wide").toString();
    String table = "db.wide";
    long rows = 20_000;
    StreamExecutionEnvironment env = TestJobs.environment(2, 0);
    env.getConfig().enableObjectReuse();
    env.fromSequence(0, rows - 1).map(new WideRow()).returns(
        org.apache.flink.table.runtime.typeutils.InternalTypeInfo.of(TestJobs.ROW_TYPE))
        .sinkTo(LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE)
            .iceberg(() -> configBuilder(warehouse, table).maxOpenFiles(4).build())
            .jobName("wide")
            .build()).uid("lakecommit-sink");
    env.execute("wide");

    TestJobs.Audit audit = audit(warehouse, table, TestJobs.range(0, rows));
    assertThat(audit.duplicates()).as("%s", audit).isZero();
    assertThat(audit.losses()).as("%s", audit).isZero();
    Table t = load(warehouse, table);
    long files = 0;
    long checkpoints = 0;
    for (Snapshot snapshot : t.snapshots()) {
      files += Long.parseLong(snapshot.summary().getOrDefault("added-data-files", "0"));
      checkpoints++;
    }
    System.out.printf("IcebergFlinkSinkIT wide: %,d rows, %d commits, %d files%n", rows, checkpoints, files);
    // Per writer and checkpoint: the 40 partitions' first files and 16 reopened ones before a writer holds
    // records, then one file per partition and flush (the flush at the checkpoint). Closing and reopening files
    // instead made one file for about every row.
    assertThat(files).isLessThanOrEqualTo(checkpoints * 2 * (40 + 16 + 40)).isLessThan(rows / 10);
  }

  /** Row {@code id} in partition {@code q<0..39>}, scattered. */
  private static final class WideRow implements org.apache.flink.api.common.functions.MapFunction<Long,
      org.apache.flink.table.data.RowData> {
    @Override
    public org.apache.flink.table.data.RowData map(Long id) {
      return org.apache.flink.table.data.GenericRowData.of(id,
          org.apache.flink.table.data.StringData.fromString("q" + Math.floorMod(id * 7919, 40)),
          org.apache.flink.table.data.StringData.fromString("row-" + id));
    }
  }

  /** The README's job, run as it is printed there. */
  @Test
  void readmeExampleWritesItsRows() throws Exception {
    String warehouse = dir.resolve("readme").toString();
    ReadmeExample.run(warehouse);
    TestJobs.Audit audit = audit(warehouse, "demo.users", TestJobs.range(1, 1_000));
    assertThat(audit.rows()).isEqualTo(1_000);
    assertThat(audit.duplicates()).isZero();
    assertThat(audit.losses()).isZero();
  }

  /**
   * Polls (bounded) until the table holds every expected id. A poll that reads a snapshot which a maintenance round
   * expires meanwhile (expiry with no minimum age deletes that snapshot's compacted-away files under the read) is
   * polled again; a file missing for good fails at the deadline with that error as the cause.
   */
  static void awaitAll(String warehouse, String table, Set<Long> expected, Duration timeout, String what)
      throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    TestJobs.Audit audit = null;
    RuntimeException expired = null;
    while (System.nanoTime() < deadline) {
      try {
        audit = tableExists(warehouse, table) ? audit(warehouse, table, expected) : null;
        expired = null;
      } catch (org.apache.iceberg.exceptions.NotFoundException e) {
        expired = e;
      } catch (org.apache.iceberg.exceptions.RuntimeIOException e) {
        // Parquet's vectored read meets the deleted file as NoSuchFileException, which Iceberg wraps so
        if (!(e.getCause() instanceof java.nio.file.NoSuchFileException)) {
          throw e;
        }
        expired = e;
      }
      if (expired == null && audit != null && audit.losses() == 0) {
        return;
      }
      Thread.sleep(250);
    }
    throw new AssertionError("Not all rows committed within " + timeout + " (" + what + "): " + audit, expired);
  }

  /** Polls (bounded) until the table holds at least {@code min} rows; returns how many it holds. */
  static long awaitRows(String warehouse, String table, Set<Long> expected, long min, Duration timeout)
      throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (tableExists(warehouse, table)) {
        long rows = audit(warehouse, table, expected).rows();
        if (rows >= min) {
          return rows;
        }
      }
      Thread.sleep(100);
    }
    throw new AssertionError("Fewer than " + min + " rows committed within " + timeout);
  }

  static boolean tableExists(String warehouse, String table) {
    return CatalogUtil.buildIcebergCatalog("check", Map.of("type", "hadoop", "warehouse", warehouse),
        new org.apache.hadoop.conf.Configuration()).tableExists(TableIdentifier.parse(table));
  }
}
