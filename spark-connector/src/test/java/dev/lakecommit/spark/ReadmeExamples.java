package dev.lakecommit.spark;

import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.util.Map;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.types.StructType;

/** The Spark examples of docs/spark.md, kept here so that they compile with every build. Not run. */
final class ReadmeExamples {
  private ReadmeExamples() {}

  static void batch(SparkSession spark) {
    // README: Spark batch job
    Dataset<Row> orders = spark.read().parquet("s3a://landing/orders/2026-11-30/");
    WriteResult result = LakecommitSpark.write(orders)
        .iceberg(() -> IcebergSinkConfig.builder()
            .catalogProperties(Map.of("type", "rest", "uri", "https://catalog.example.com"))
            .table("sales.orders")
            .build())
        .writeId("orders-2026-11-30")          // the same id again commits nothing
        .save();
    System.out.println(result.status() + ": " + result.records() + " rows");
  }

  static void streaming(SparkSession spark, StructType schema) throws Exception {
    // README: Spark foreachBatch job
    StreamingQuery query = spark.readStream().schema(schema).json("s3a://landing/events/")
        .writeStream()
        .foreachBatch(LakecommitSpark.foreachBatch()
            .hive(() -> HiveSinkConfig.builder()
                .metastoreUri("thrift://metastore:9083")
                .table("lake.events")
                .build()))
        .option("checkpointLocation", "s3a://lake/checkpoints/events")
        .start();
    query.awaitTermination();
  }

  static void tables(Dataset<Row> transfers, Dataset<Row> events, Map<String, String> catalog, String password)
      throws Exception {
    // docs/spark.md: several tables as one cut
    SparkTables bank = SparkTables.builder()
        .catalogProperties(Map.of("type", "jdbc", "uri", "jdbc:postgresql://db:5432/lake",
            "jdbc.user", "lake", "jdbc.password", password, "warehouse", "s3a://lake/warehouse"))
        .routeByColumn("side", "bank.${side}")   // a row with side = "debits" goes to bank.debits
        .requireAtomicCut(true)                  // refuse a catalog without one-transaction cuts
        .build();
    transfers.writeStream()
        .foreachBatch(LakecommitSpark.foreachBatch().jobId("bank-ledger").icebergTables(bank))
        .option("checkpointLocation", "s3a://lake/checkpoints/bank")
        .start();

    MicroBatchWriter shop = LakecommitSpark.foreachBatch().jobId("shop")
        .icebergTables(SparkTables.builder().catalogProperties(catalog).partitionBy("day(ts)").build());
    events.writeStream()
        .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, batchId) -> shop.writeTables(batchId, Map.of(
            "shop.orders", batch.where("kind = 'order'").select("order_id", "customer", "ts"),
            "shop.lines", batch.where("kind = 'line'").select("order_id", "line_no", "sku", "ts"))))
        .option("checkpointLocation", "s3a://lake/checkpoints/shop")
        .start();
  }
}
