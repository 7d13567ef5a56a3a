package dev.lakecommit.spark;

import static dev.lakecommit.spark.SparkTestSupport.icebergIds;
import static dev.lakecommit.spark.SparkTestSupport.range;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.apache.iceberg.Table;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Structured Streaming through {@code foreachBatch}: a replayed micro-batch is skipped; a query stopped mid-stream
 * and restarted on the same checkpoint location (also with the last batch's entry in Spark's commit log lost, so
 * Spark replays a batch the table already holds) ends with every input row exactly once; so do queries on new
 * checkpoint locations writing one pinned job id one after another.
 */
class StreamingWriteIT {
  @TempDir
  static Path dir;

  static SparkSession spark;
  static Map<String, String> catalog;

  @BeforeAll
  static void start() {
    Path warehouse = dir.resolve("wh");
    catalog = StreamingTestSupport.catalog(warehouse);
    spark = SparkTestSupport.session("StreamingWriteIT", warehouse, Map.of("spark.sql.catalog.ice.cache-enabled",
        "false"));
  }

  @AfterAll
  static void stop() {
    if (spark != null) {
      spark.stop();
    }
  }

  @Test
  void aReplayedMicroBatchIsSkipped() throws Exception {
    MicroBatchWriter writer = LakecommitSpark.foreachBatch().jobId("replay-job")
        .iceberg(StreamingTestSupport.config(catalog, "db.replay"));
    Dataset<Row> batch0 = SparkTestSupport.rows(spark, 0, 300, 2).select("id", "name");
    Dataset<Row> batch1 = SparkTestSupport.rows(spark, 300, 300, 2).select("id", "name");

    writer.call(batch0, 0L);
    writer.call(batch1, 1L);
    writer.call(batch1, 1L); // Spark replays a batch whose commit it did not record
    writer.call(batch0, 0L); // and an older one: the watermark covers it too

    Table table = SparkTestSupport.load(catalog, "db.replay");
    assertThat(icebergIds(table)).containsExactlyInAnyOrderElementsOf(range(0, 600));
    assertThat(table.snapshots()).hasSize(2);
    assertThat(table.properties()).containsEntry(CommitId.watermarkKey(JobId.of("replay-job")), "2");
    assertThat(sparkIds("ice.db.replay")).containsExactlyInAnyOrderElementsOf(range(0, 600));
  }

  @Test
  void aQueryStoppedMidStreamAndRestartedOnTheSameCheckpointWritesEveryRowOnce() throws Exception {
    int files = 6;
    int rowsPerFile = 200;
    Path input = dir.resolve("input");
    Path checkpoint = dir.resolve("checkpoint");
    StreamingTestSupport.writeInput(input, files, rowsPerFile);
    String tableName = "db.stream";
    SerializableSupplier<dev.lakecommit.iceberg.IcebergSinkConfig> config =
        StreamingTestSupport.config(catalog, tableName);

    StreamingQuery first = start(input, checkpoint, LakecommitSpark.foreachBatch().iceberg(config));
    Table table = awaitSnapshots(tableName, 2, first);
    first.stop();
    long committedBeforeRestart = count(table.snapshots());
    assertThat(committedBeforeRestart).isLessThan(files); // stopped mid-stream: input was left

    // Lose Spark's record of the last batch: as if the driver died between the table commit and the commit log.
    long lastBatch = lastCommitLogEntry(checkpoint);
    Files.delete(checkpoint.resolve("commits").resolve(Long.toString(lastBatch)));
    Files.deleteIfExists(checkpoint.resolve("commits").resolve("." + lastBatch + ".crc"));
    // The table holds that batch (and, if stop() landed between the table commit of the next batch and Spark's
    // commit log, that one too): Spark's replay must write nothing the table already holds.
    String watermark = SparkTestSupport.load(catalog, tableName).properties()
        .get(CommitId.watermarkKey(JobId.of("spark-" + first.id())));
    assertThat(watermark).isNotNull();
    assertThat(Long.parseLong(watermark)).isBetween(lastBatch + 1, lastBatch + 2);

    StreamingQuery second = start(input, checkpoint, LakecommitSpark.foreachBatch().iceberg(config));
    second.processAllAvailable();
    second.stop();

    assertThat(second.id()).isEqualTo(first.id()); // the job id survives the restart
    Table after = SparkTestSupport.load(catalog, tableName);
    List<Long> ids = icebergIds(after);
    assertThat(ids).hasSize(files * rowsPerFile).containsExactlyInAnyOrderElementsOf(range(0, files * rowsPerFile));
    assertThat(sparkIds("ice." + tableName)).containsExactlyInAnyOrderElementsOf(range(0, files * rowsPerFile));
    // One snapshot per file, none for the replayed batch.
    assertThat(count(after.snapshots())).isEqualTo(files);
    assertThat(after.properties())
        .containsEntry(CommitId.watermarkKey(JobId.of("spark-" + first.id())), Long.toString(files));
  }

  /**
   * Issue #14, scenario 5: a pinned job id and a new checkpoint location. The new query's batch ids start at 0 again,
   * below the job's watermark; they must map above it, or its rows are skipped as "already committed". Then the
   * first query's checkpoint location is started once more with its last batch's commit log entry lost: the replayed
   * batch is skipped, its new batch is written. Every row of every query ends in the table exactly once, and every
   * start claimed a run epoch.
   */
  @Test
  void aNewCheckpointLocationWithAPinnedJobIdWritesEveryRowOnce() throws Exception {
    int rowsPerFile = 200;
    String tableName = "db.pinned";
    JobId job = JobId.of("pinned-events");
    SerializableSupplier<dev.lakecommit.iceberg.IcebergSinkConfig> config =
        StreamingTestSupport.config(catalog, tableName);
    Path input1 = dir.resolve("pinned-input-1");
    Path checkpoint1 = dir.resolve("pinned-checkpoint-1");
    StreamingTestSupport.writeInput(input1, 0, 4, rowsPerFile);

    StreamingQuery first = start(input1, checkpoint1, LakecommitSpark.foreachBatch().jobId(job.value())
        .iceberg(config));
    first.processAllAvailable();
    first.stop();
    Table table = SparkTestSupport.load(catalog, tableName);
    assertThat(table.properties()).containsEntry(CommitId.watermarkKey(job), "4");

    // A new checkpoint location (a new query id) for the same job, over new input: batch ids 0, 1, 2 again.
    Path input2 = dir.resolve("pinned-input-2");
    StreamingTestSupport.writeInput(input2, 4, 3, rowsPerFile);
    StreamingQuery second = start(input2, dir.resolve("pinned-checkpoint-2"),
        LakecommitSpark.foreachBatch().jobId(job.value()).iceberg(config));
    second.processAllAvailable();
    second.stop();

    assertThat(second.id()).isNotEqualTo(first.id());
    table.refresh();
    assertThat(icebergIds(table)).as("rows of both queries in %s, job %s", tableName, job)
        .containsExactlyInAnyOrderElementsOf(range(0, 7L * rowsPerFile));
    assertThat(table.properties()).containsEntry(CommitId.watermarkKey(job), "7")
        .containsEntry(BatchIds.key(job), "1 " + second.id() + ":0:4 " + first.id() + ":3");

    // The first query's checkpoint location again, with Spark's record of its last batch (3) lost: Spark replays
    // batch 3, which the first query committed, then reads the new file as batch 4.
    Files.delete(checkpoint1.resolve("commits").resolve("3"));
    Files.deleteIfExists(checkpoint1.resolve("commits").resolve(".3.crc"));
    StreamingTestSupport.writeInput(input1, 7, 1, rowsPerFile);
    StreamingQuery again = start(input1, checkpoint1, LakecommitSpark.foreachBatch().jobId(job.value())
        .iceberg(config));
    again.processAllAvailable();
    again.stop();

    assertThat(again.id()).isEqualTo(first.id());
    table.refresh();
    List<Long> ids = icebergIds(table);
    assertThat(ids).as("rows of all runs in %s, job %s", tableName, job).hasSize(8 * rowsPerFile)
        .containsExactlyInAnyOrderElementsOf(range(0, 8L * rowsPerFile));
    assertThat(sparkIds("ice." + tableName)).containsExactlyInAnyOrderElementsOf(range(0, 8L * rowsPerFile));
    assertThat(count(table.snapshots())).isEqualTo(8); // one per batch that had rows, none for the replay
    assertThat(table.properties()).containsEntry(CommitId.watermarkKey(job), "8");
    assertThat(RunEpoch.parse(job, table.properties().get(RunEpoch.key(job))).epoch()).isEqualTo(3);
  }

  /**
   * Two runs of one pinned job (DESIGN.md rule 10): the second run's first micro-batch claims a newer epoch, and
   * from then on the first run commits nothing: its next batch fails saying it is fenced, naming table, job and
   * checkpoint, and leaves no staged file behind.
   */
  @Test
  void aSecondRunOfAPinnedJobFencesTheFirst() throws Exception {
    String tableName = "db.fenced";
    JobId job = JobId.of("fenced-stream");
    SerializableSupplier<dev.lakecommit.iceberg.IcebergSinkConfig> config =
        StreamingTestSupport.config(catalog, tableName);
    MicroBatchWriter older = LakecommitSpark.foreachBatch().jobId(job.value()).iceberg(config);
    MicroBatchWriter newer = LakecommitSpark.foreachBatch().jobId(job.value()).iceberg(config);

    older.call(SparkTestSupport.rows(spark, 0, 100, 2).select("id", "name"), 0L);
    newer.call(SparkTestSupport.rows(spark, 0, 100, 2).select("id", "name"), 0L); // a replay: skipped
    newer.call(SparkTestSupport.rows(spark, 100, 100, 2).select("id", "name"), 1L);
    assertThatThrownBy(() -> older.call(SparkTestSupport.rows(spark, 1_000, 100, 2).select("id", "name"), 2L))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("fenced")
        .hasMessageContaining("checkpoint 3 of job fenced-stream").hasMessageContaining("db.fenced")
        .hasMessageContaining("epoch 2");
    newer.call(SparkTestSupport.rows(spark, 200, 100, 2).select("id", "name"), 2L);

    Table table = SparkTestSupport.load(catalog, tableName);
    assertThat(icebergIds(table)).containsExactlyInAnyOrderElementsOf(range(0, 300));
    assertThat(table.properties()).containsEntry(CommitId.watermarkKey(job), "3");
    assertThat(count(table.snapshots())).isEqualTo(3);
    Path staged = Path.of(java.net.URI.create(table.location())).resolve("data/lakecommit/" + job.value());
    try (Stream<Path> files = Files.walk(staged)) {
      assertThat(files.map(Path::toString).filter(p -> p.endsWith(".parquet")))
          .as("files staged by the fenced run (epoch 1) for checkpoint 3").noneMatch(p -> p.contains("-3-e1-"));
    }
  }

  static StreamingQuery start(Path input, Path checkpoint, VoidFunction2<Dataset<Row>, Long> function)
      throws TimeoutException {
    return StreamingTestSupport.stream(spark, input).writeStream()
        .foreachBatch(function)
        .option("checkpointLocation", checkpoint.toString())
        .start();
  }

  /** Polls until the table has {@code n} snapshots; bounded. */
  private static Table awaitSnapshots(String table, int n, StreamingQuery query) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
    while (System.nanoTime() < deadline) {
      if (query.exception().isDefined()) {
        throw new AssertionError("query failed", query.exception().get());
      }
      try {
        Table loaded = SparkTestSupport.load(catalog, table);
        if (count(loaded.snapshots()) >= n) {
          return loaded;
        }
      } catch (org.apache.iceberg.exceptions.NoSuchTableException e) {
        // not created yet
      }
      Thread.sleep(50);
    }
    throw new AssertionError("table " + table + " did not reach " + n + " snapshots in time");
  }

  private static long lastCommitLogEntry(Path checkpoint) throws Exception {
    try (Stream<Path> entries = Files.list(checkpoint.resolve("commits"))) {
      return entries.map(p -> p.getFileName().toString()).filter(n -> n.matches("\\d+")).mapToLong(Long::parseLong)
          .max().orElseThrow();
    }
  }

  private static long count(Iterable<?> items) {
    long n = 0;
    for (Object ignored : items) {
      n++;
    }
    return n;
  }

  private static List<Long> sparkIds(String table) {
    return spark.table(table).select("id").as(Encoders.LONG()).collectAsList();
  }
}
