package dev.lakecommit.spark;

import static dev.lakecommit.spark.SparkTestSupport.SCHEMA;
import static dev.lakecommit.spark.SparkTestSupport.icebergIds;
import static dev.lakecommit.spark.SparkTestSupport.range;
import static dev.lakecommit.spark.SparkTestSupport.rows;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.udf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.FilterFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batch writes to Iceberg tables (Hadoop catalog and JDBC catalog on SQLite) from a local[2] session with task
 * retries on: one snapshot per write id, reruns commit nothing, a failing first task attempt leaves nothing behind.
 * Tables are read back with Iceberg's generic reader and with Spark through Iceberg's Spark catalog.
 */
class IcebergBatchWriteIT {
  /** Times the flaky function below threw; the session runs in this JVM (local mode). */
  static final AtomicInteger FAILURES = new AtomicInteger();
  /** Gates of the concurrent-save test, shared with its tasks (local mode: one JVM). */
  static final AtomicReference<CountDownLatch> A_STAGING = new AtomicReference<>();
  static final AtomicReference<CountDownLatch> B_STAGING = new AtomicReference<>();
  static final AtomicReference<CountDownLatch> A_DONE = new AtomicReference<>();

  @TempDir
  static Path dir;

  static SparkSession spark;
  static Map<String, String> hadoop;
  static Map<String, String> jdbc;

  @BeforeAll
  static void start() {
    Path warehouse = dir.resolve("hadoop-wh");
    hadoop = SparkTestSupport.hadoopCatalog(warehouse);
    jdbc = Map.of("type", "jdbc", "uri", "jdbc:sqlite:" + dir.resolve("catalog.db"),
        "warehouse", dir.resolve("jdbc-wh").toUri().toString());
    spark = SparkTestSupport.session("IcebergBatchWriteIT", warehouse, Map.of(
        "spark.sql.catalog.ice.cache-enabled", "false",
        "spark.sql.catalog.icejdbc", "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.icejdbc.type", "jdbc",
        "spark.sql.catalog.icejdbc.uri", jdbc.get("uri"),
        "spark.sql.catalog.icejdbc.warehouse", jdbc.get("warehouse"),
        "spark.sql.catalog.icejdbc.cache-enabled", "false"));
  }

  @AfterAll
  static void stop() {
    if (spark != null) {
      spark.stop();
    }
  }

  static SerializableSupplier<IcebergSinkConfig> config(Map<String, String> catalog, String table) {
    // The catalog name matters to a JDBC catalog (it scopes tables): the same name as Spark's catalog.
    String name = catalog.get("type").equals("jdbc") ? "icejdbc" : "ice";
    return () -> IcebergSinkConfig.builder().catalogName(name).catalogProperties(catalog).table(table)
        .createTable(SCHEMA, List.of("bucket")).build();
  }

  @Test
  void writeCommitsOneSnapshotAndARerunOfTheSameWriteIdCommitsNothing() throws IOException {
    String table = "db.events";
    WriteResult first = LakecommitSpark.write(rows(spark, 0, 3_000, 4)).iceberg(config(hadoop, table))
        .writeId("load-1").save();

    assertThat(first.status()).isEqualTo(WriteResult.Status.COMMITTED);
    assertThat(first.records()).isEqualTo(3_000);
    Table loaded = SparkTestSupport.load(hadoop, table);
    assertThat(icebergIds(loaded)).containsExactlyInAnyOrderElementsOf(range(0, 3_000));
    assertThat(snapshots(loaded)).hasSize(1);
    Snapshot snapshot = loaded.currentSnapshot();
    assertThat(snapshot.summary()).containsEntry(CommitId.JOB_ID_KEY, "load-1")
        .containsEntry(CommitId.CHECKPOINT_ID_KEY, "1");
    assertThat(sparkIds("ice." + table)).containsExactlyInAnyOrderElementsOf(range(0, 3_000));

    // The same write id again, even with other rows: the table already holds (load-1, 1).
    WriteResult rerun = LakecommitSpark.write(rows(spark, 10_000, 500, 2)).iceberg(config(hadoop, table))
        .writeId("load-1").save();
    assertThat(rerun.status()).isEqualTo(WriteResult.Status.ALREADY_COMMITTED);
    loaded.refresh();
    assertThat(snapshots(loaded)).hasSize(1);
    assertThat(icebergIds(loaded)).hasSize(3_000);

    // A new write id appends.
    WriteResult second = LakecommitSpark.write(rows(spark, 3_000, 1_000, 3)).iceberg(config(hadoop, table))
        .writeId("load-2").save();
    assertThat(second.status()).isEqualTo(WriteResult.Status.COMMITTED);
    assertThat(icebergIds(loaded)).containsExactlyInAnyOrderElementsOf(range(0, 4_000));
    assertThat(sparkIds("ice." + table)).containsExactlyInAnyOrderElementsOf(range(0, 4_000));
    assertThat(snapshots(loaded)).hasSize(2);
  }

  @Test
  void aTaskFailingOnItsFirstAttemptIsRetriedAndOnlyTheSuccessfulAttemptIsCommitted() throws IOException {
    String table = "db.flaky";
    FAILURES.set(0);
    // Partition 1 fails after staging 150 rows on its first attempt; Spark retries it (local[2,4]).
    UserDefinedFunction failOnce = udf((UDF1<Long, Long>) id -> {
      TaskContext task = TaskContext.get();
      if (task.partitionId() == 1 && task.attemptNumber() == 0 && id % 1_000 == 150) {
        FAILURES.incrementAndGet();
        throw new IllegalStateException("injected failure of the first attempt of partition 1 at id " + id);
      }
      return id;
    }, DataTypes.LongType).asNondeterministic();
    Dataset<Row> data = rows(spark, 0, 4_000, 4).withColumn("id", failOnce.apply(col("id")));

    WriteResult result = LakecommitSpark.write(data).iceberg(config(hadoop, table)).writeId("flaky-1").save();

    assertThat(FAILURES.get()).isEqualTo(1);
    assertThat(result.status()).isEqualTo(WriteResult.Status.COMMITTED);
    assertThat(result.records()).isEqualTo(4_000);
    Table loaded = SparkTestSupport.load(hadoop, table);
    assertThat(icebergIds(loaded)).containsExactlyInAnyOrderElementsOf(range(0, 4_000));
    assertThat(sparkIds("ice." + table)).containsExactlyInAnyOrderElementsOf(range(0, 4_000));

    // Nothing of the failed attempt is left in the staging prefix: every data file there is in the table.
    Set<String> committed = new HashSet<>();
    try (CloseableIterable<FileScanTask> tasks = loaded.newScan().planFiles()) {
      tasks.forEach(t -> committed.add(Path.of(java.net.URI.create(t.file().location())).toString()));
    }
    Path prefix = Path.of(java.net.URI.create(loaded.location())).resolve("data/lakecommit/flaky-1/ckpt-1");
    List<String> staged;
    try (Stream<Path> walk = Files.walk(prefix)) {
      staged = walk.filter(p -> p.toString().endsWith(".parquet")).map(Path::toString).collect(Collectors.toList());
    }
    assertThat(staged).isNotEmpty().allMatch(committed::contains);
  }

  /**
   * Two {@code save()} of one write id at once (DESIGN.md rule 10): A starts, stages part of its rows and waits
   * until B's task runs, which is after B claimed its epoch (and deleted what A had staged); B's task waits until A
   * is done. A's commit is refused as fenced; then B commits. One snapshot, every row once, and nothing that either
   * staged is left outside the table. Without epochs, A would commit the files that B's start deleted.
   */
  @Test
  void twoSavesOfOneWriteIdAtOnceCommitOnceAndTheEarlierIsFenced() throws Exception {
    String table = "db.racing";
    String writeId = "race-1";
    A_STAGING.set(new CountDownLatch(1));
    B_STAGING.set(new CountDownLatch(1));
    A_DONE.set(new CountDownLatch(1));
    UserDefinedFunction gateA = udf((UDF1<Long, Long>) id -> {
      if (id == 0) {
        A_STAGING.get().countDown();
      } else if (id == 200) {
        await(B_STAGING.get(), "B's task");
      }
      return id;
    }, DataTypes.LongType).asNondeterministic();
    UserDefinedFunction gateB = udf((UDF1<Long, Long>) id -> {
      if (id == 0) {
        B_STAGING.get().countDown();
        await(A_DONE.get(), "A's save");
      }
      return id;
    }, DataTypes.LongType).asNondeterministic();
    // One partition each: A's task and B's task hold the session's two task slots at once.
    Dataset<Row> dataA = rows(spark, 0, 400, 1).withColumn("id", gateA.apply(col("id")));
    Dataset<Row> dataB = rows(spark, 0, 400, 1).withColumn("id", gateB.apply(col("id")));

    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      Future<WriteResult> a = threads.submit(() -> {
        try {
          return LakecommitSpark.write(dataA).iceberg(config(hadoop, table)).writeId(writeId).save();
        } finally {
          A_DONE.get().countDown();
        }
      });
      await(A_STAGING.get(), "A's task");
      Future<WriteResult> b = threads.submit(
          () -> LakecommitSpark.write(dataB).iceberg(config(hadoop, table)).writeId(writeId).save());

      Throwable aFailure = catchThrowable(() -> a.get(3, TimeUnit.MINUTES));
      WriteResult bResult = b.get(3, TimeUnit.MINUTES);

      assertThat(aFailure).as("the earlier save").isInstanceOf(ExecutionException.class);
      assertThat(aFailure.getCause()).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("fenced").hasMessageContaining("checkpoint 1 of job race-1")
          .hasMessageContaining("db.racing").hasMessageContaining("epoch 2");
      assertThat(bResult.status()).isEqualTo(WriteResult.Status.COMMITTED);
      assertThat(bResult.records()).isEqualTo(400);
    } finally {
      threads.shutdownNow();
    }
    Table loaded = SparkTestSupport.load(hadoop, table);
    assertThat(snapshots(loaded)).hasSize(1);
    assertThat(icebergIds(loaded)).containsExactlyInAnyOrderElementsOf(range(0, 400));
    assertThat(sparkIds("ice." + table)).containsExactlyInAnyOrderElementsOf(range(0, 400));
    assertThat(loaded.properties()).containsEntry(CommitId.watermarkKey(JobId.of(writeId)), "1");
    assertThat(RunEpoch.parse(JobId.of(writeId), loaded.properties().get(RunEpoch.key(JobId.of(writeId)))).epoch())
        .isEqualTo(2);
    assertThat(stagedParquet(loaded, writeId)).isNotEmpty().allMatch(committedFiles(loaded)::contains)
        .allMatch(path -> path.contains("-e2-"));

    // A rerun afterwards finds the write committed: no claim, no Spark job.
    WriteResult rerun = LakecommitSpark.write(rows(spark, 0, 400, 1)).iceberg(config(hadoop, table))
        .writeId(writeId).save();
    assertThat(rerun.status()).isEqualTo(WriteResult.Status.ALREADY_COMMITTED);
    assertThat(RunEpoch.parse(JobId.of(writeId), SparkTestSupport.load(hadoop, table).properties()
        .get(RunEpoch.key(JobId.of(writeId)))).epoch()).isEqualTo(2);
  }

  private static void await(CountDownLatch latch, String what) {
    try {
      if (!latch.await(2, TimeUnit.MINUTES)) {
        throw new IllegalStateException("Timed out waiting for " + what);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted waiting for " + what, e);
    }
  }

  private static Set<String> committedFiles(Table table) throws IOException {
    Set<String> committed = new HashSet<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(t -> committed.add(Path.of(java.net.URI.create(t.file().location())).toString()));
    }
    return committed;
  }

  private static List<String> stagedParquet(Table table, String writeId) throws IOException {
    Path prefix = Path.of(java.net.URI.create(table.location())).resolve("data/lakecommit/" + writeId);
    try (Stream<Path> walk = Files.walk(prefix)) {
      return walk.filter(p -> p.toString().endsWith(".parquet")).map(Path::toString).collect(Collectors.toList());
    }
  }

  @Test
  void writesThroughAJdbcCatalogOnSqlite() throws IOException {
    String table = "db.orders";
    WriteResult result = LakecommitSpark.write(rows(spark, 0, 2_000, 2)).iceberg(config(jdbc, table))
        .writeId("orders-1").save();
    WriteResult rerun = LakecommitSpark.write(rows(spark, 0, 2_000, 2)).iceberg(config(jdbc, table))
        .writeId("orders-1").save();

    assertThat(result.status()).isEqualTo(WriteResult.Status.COMMITTED);
    assertThat(rerun.status()).isEqualTo(WriteResult.Status.ALREADY_COMMITTED);
    Table loaded = SparkTestSupport.load("icejdbc", jdbc, table);
    assertThat(icebergIds(loaded)).containsExactlyInAnyOrderElementsOf(range(0, 2_000));
    assertThat(sparkIds("icejdbc." + table)).containsExactlyInAnyOrderElementsOf(range(0, 2_000));
    Row row = spark.table("icejdbc." + table).where("id = 1234").first();
    assertThat(row.<String>getAs("name")).isEqualTo("name-1234");
    assertThat(row.<java.math.BigDecimal>getAs("amount")).isEqualByComparingTo("12.34");
    assertThat(row.<Integer>getAs("bucket")).isEqualTo(1234 % 7);
  }

  @Test
  void anEmptyDataFrameCommitsNothing() {
    Dataset<Row> empty = rows(spark, 0, 10, 2).filter((FilterFunction<Row>) r -> false);
    WriteResult result = LakecommitSpark.write(empty).iceberg(config(hadoop, "db.empty")).writeId("empty-1").save();
    assertThat(result.status()).isEqualTo(WriteResult.Status.NOTHING_WRITTEN);
    assertThat(SparkTestSupport.load(hadoop, "db.empty").currentSnapshot()).isNull();
  }

  @Test
  void columnsThatDoNotFitTheTableFailBeforeAnyTaskRuns() {
    Dataset<Row> extra = rows(spark, 0, 10, 1).withColumn("color", col("name"));
    assertThatThrownBy(() -> LakecommitSpark.write(extra).iceberg(config(hadoop, "db.strict")).writeId("x").save())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Unknown columns [color] for Iceberg table db.strict");
    Dataset<Row> missing = rows(spark, 0, 10, 1).drop("id");
    assertThatThrownBy(() -> LakecommitSpark.write(missing).iceberg(config(hadoop, "db.strict")).writeId("x").save())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Missing column 'id' for Iceberg table db.strict");
    Dataset<Row> wrongType = rows(spark, 0, 10, 1).withColumn("bucket", col("name"));
    assertThatThrownBy(() -> LakecommitSpark.write(wrongType).iceberg(config(hadoop, "db.strict")).writeId("x")
        .save())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Cannot write Spark type string to Iceberg table db.strict column 'bucket'");
    assertThatThrownBy(() -> LakecommitSpark.write(extra).iceberg(config(hadoop, "db.strict")).save())
        .hasMessageStartingWith("Missing write id");
    assertThatThrownBy(() -> LakecommitSpark.write(extra).writeId("bad id"))
        .hasMessageStartingWith("Invalid job id: 'bad id'");
  }

  private static List<Snapshot> snapshots(Table table) {
    table.refresh();
    List<Snapshot> all = new ArrayList<>();
    table.snapshots().forEach(all::add);
    return all;
  }

  private static List<Long> sparkIds(String table) {
    return spark.table(table).select("id").as(org.apache.spark.sql.Encoders.LONG()).collectAsList();
  }
}
