package dev.lakecommit.spark;

import java.util.Objects;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * Lakecommit inside Spark: a DataFrame written to an Iceberg or Hive table as exactly one idempotent commit.
 *
 * <pre>{@code
 * // Batch: one commit keyed by the write id; running the same write again commits nothing.
 * WriteResult result = LakecommitSpark.write(df)
 *     .iceberg(() -> IcebergSinkConfig.builder().catalogProperties(props).table("db.events").build())
 *     .writeId("events-2026-11-30")
 *     .save();
 *
 * // Structured Streaming: one commit per micro-batch, keyed by (query id, batch id); with jobId("...") pinned, a
 * // query on a new checkpoint location continues the job above what the table holds.
 * df.writeStream()
 *     .foreachBatch(LakecommitSpark.foreachBatch().iceberg(() -> IcebergSinkConfig.builder()...build()))
 *     .option("checkpointLocation", "/checkpoints/events")
 *     .start();
 *
 * // Several Iceberg tables, one cut per micro-batch: rows routed by a column (or writeTables, a DataFrame per table).
 * df.writeStream()
 *     .foreachBatch(LakecommitSpark.foreachBatch().jobId("bank").icebergTables(SparkTables.builder()
 *         .catalogProperties(props).routeByColumn("side", "bank.${side}").build()))
 *     .start();
 * }</pre>
 *
 * <p>Configurations are given as {@link SerializableSupplier}s: the sink is built from them on the driver and
 * again on each executor (once per JVM), where its writers stage Parquet files.
 */
public final class LakecommitSpark {
  private LakecommitSpark() {}

  /** Starts a batch write of {@code data}; nothing runs until {@link TableWrite#save()}. */
  public static TableWrite write(Dataset<Row> data) {
    return new TableWrite(Objects.requireNonNull(data, "data"));
  }

  /** Starts a {@code foreachBatch} function for a Structured Streaming query; choose the target next. */
  public static MicroBatchWriter.Builder foreachBatch() {
    return new MicroBatchWriter.Builder();
  }
}
