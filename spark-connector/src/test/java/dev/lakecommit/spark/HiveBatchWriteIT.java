package dev.lakecommit.spark;

import static dev.lakecommit.spark.SparkTestSupport.range;
import static dev.lakecommit.spark.SparkTestSupport.rows;
import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Types;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batch writes and micro-batches to Hive tables through an in-process metastore (Thrift on 127.0.0.1, Derby), read
 * back by Spark from the table's location and checked in the metastore (partitions, the job's watermark).
 */
class HiveBatchWriteIT {
  static final Schema HIVE_SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "name", Types.StringType.get()),
      Types.NestedField.optional(3, "amount", Types.DecimalType.of(12, 2)),
      Types.NestedField.optional(4, "day", Types.DateType.get()),
      Types.NestedField.optional(5, "bucket", Types.IntegerType.get()),
      Types.NestedField.optional(6, "ts", Types.TimestampType.withZone()));

  @TempDir
  static Path dir;

  static HiveMetastoreServer hms;
  static IMetaStoreClient client;
  static SparkSession spark;

  @BeforeAll
  static void start() throws Exception {
    hms = HiveMetastoreServer.startOnDerby();
    client = hms.newRetryingClient();
    client.createDatabase(new Database("lc", "spark tests", hms.warehouseLocation() + "/lc.db", new HashMap<>()));
    spark = SparkTestSupport.session("HiveBatchWriteIT", dir.resolve("unused-wh"), Map.of());
  }

  @AfterAll
  static void stop() {
    if (spark != null) {
      spark.stop();
    }
    if (client != null) {
      client.close();
    }
    if (hms != null) {
      hms.close();
    }
  }

  static SerializableSupplier<HiveSinkConfig> config(String table) {
    String uri = hms.uri();
    return () -> HiveSinkConfig.builder().metastoreUri(uri).table(table)
        .createTable(HIVE_SCHEMA, List.of("bucket")).build();
  }

  static Dataset<Row> hiveRows(long first, long count, int partitions) {
    return rows(spark, first, count, partitions);
  }

  @Test
  void writeAddsPartitionsOnceAndARerunOfTheSameWriteIdCommitsNothing() throws Exception {
    WriteResult first = LakecommitSpark.write(hiveRows(0, 3_000, 4)).hive(config("lc.events")).writeId("hive-load-1")
        .save();
    WriteResult rerun = LakecommitSpark.write(hiveRows(0, 3_000, 4)).hive(config("lc.events"))
        .writeId("hive-load-1").save();
    WriteResult second = LakecommitSpark.write(hiveRows(3_000, 1_000, 2)).hive(config("lc.events"))
        .writeId("hive-load-2").save();

    assertThat(first.status()).isEqualTo(WriteResult.Status.COMMITTED);
    assertThat(first.records()).isEqualTo(3_000);
    assertThat(rerun.status()).isEqualTo(WriteResult.Status.ALREADY_COMMITTED);
    assertThat(second.status()).isEqualTo(WriteResult.Status.COMMITTED);
    assertThat(client.listPartitionNames("lc", "events", (short) -1)).hasSize(7);
    assertThat(client.getTable("lc", "events").getParameters())
        .containsEntry(CommitId.watermarkKey(JobId.of("hive-load-1")), "1")
        .containsEntry(CommitId.watermarkKey(JobId.of("hive-load-2")), "1");
    assertThat(sparkIds("events")).containsExactlyInAnyOrderElementsOf(range(0, 4_000));
    Dataset<Row> read = spark.read().parquet(location("events"));
    Row row = read.where("id = 1234").first();
    assertThat(row.<String>getAs("name")).isEqualTo("name-1234");
    assertThat(row.<Integer>getAs("bucket")).isEqualTo(1234 % 7);
    // Timestamps are Hive's INT96, which Spark reads as the same instant.
    assertThat(row.<java.sql.Timestamp>getAs("ts").toInstant())
        .isEqualTo(java.time.Instant.ofEpochSecond(1_700_000_000L + 1234));
    // The partition column comes from the path only: the files do not hold it (no COLUMN_ALREADY_EXISTS).
    assertThat(read.schema().fieldNames()).containsOnlyOnce("bucket");
    String partition = client.listPartitions("lc", "events", (short) 1).get(0).getSd().getLocation();
    assertThat(spark.read().option("basePath", partition).parquet(partition).schema().fieldNames())
        .doesNotContain("bucket").contains("id", "ts");
  }

  @Test
  void aReplayedMicroBatchIsSkipped() throws Exception {
    MicroBatchWriter writer = LakecommitSpark.foreachBatch().jobId("hive-stream").hive(config("lc.stream"));
    writer.call(hiveRows(0, 500, 2), 0L);
    writer.call(hiveRows(500, 500, 2), 1L);
    writer.call(hiveRows(500, 500, 2), 1L); // replayed after a crash: the same batch id
    writer.call(hiveRows(1_000, 500, 2), 2L);

    assertThat(client.getTable("lc", "stream").getParameters())
        .containsEntry(CommitId.watermarkKey(JobId.of("hive-stream")), "3");
    assertThat(sparkIds("stream")).containsExactlyInAnyOrderElementsOf(range(0, 1_500));
  }

  private static String location(String table) throws Exception {
    return client.getTable("lc", table).getSd().getLocation();
  }

  private static List<Long> sparkIds(String table) throws Exception {
    return spark.read().parquet(location(table)).select("id").as(Encoders.LONG()).collectAsList();
  }
}
