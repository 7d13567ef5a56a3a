package dev.lakecommit.bench.spark;

import java.util.Locale;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;

/**
 * The Spark job a user would write instead of {@code lakecommit ingest}: read JSON lines with a given schema and append
 * them to a new Iceberg table in one write, on {@code local[N]}. Iceberg's own Spark settings for the comparison: a
 * Hadoop catalog, the same identity partitioning and Parquet codec as the tool, the fan-out writer and distribution
 * mode {@code none} (the tool's writers fan out too and shuffle nothing).
 *
 * <pre>
 * java [Spark's --add-opens] -cp ... dev.lakecommit.bench.spark.SparkIngestPeer INPUT_DIR WAREHOUSE CORES
 * </pre>
 */
public final class SparkIngestPeer {
  private SparkIngestPeer() {}

  public static void main(String[] args) {
    if (args.length != 3) {
      throw new IllegalArgumentException("usage: SparkIngestPeer INPUT_DIR WAREHOUSE CORES");
    }
    String input = args[0];
    String warehouse = args[1];
    int cores = Integer.parseInt(args[2]);
    SparkSession spark = SparkSession.builder()
        .master("local[" + cores + "]")
        .appName("lakecommit-spark-peer")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.catalog.peer", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.peer.type", "hadoop")
        .config("spark.sql.catalog.peer.warehouse", warehouse)
        .getOrCreate();
    try {
      spark.sparkContext().setLogLevel("WARN");
      spark.sql("CREATE NAMESPACE IF NOT EXISTS peer." + BenchInput.NAMESPACE);
      spark.sql(String.format(Locale.ROOT, "CREATE TABLE peer.%s.%s (%s) USING iceberg PARTITIONED BY (%s) "
              + "TBLPROPERTIES ('write.parquet.compression-codec'='%s', 'write.spark.fanout.enabled'='true', "
              + "'write.distribution-mode'='none')", BenchInput.NAMESPACE, BenchInput.TABLE,
          BenchInput.SPARK_DDL, BenchInput.PARTITION_BY, BenchInput.CODEC));
      spark.read().schema(StructType.fromDDL(BenchInput.SPARK_DDL)).json(input)
          .writeTo("peer." + BenchInput.NAMESPACE + "." + BenchInput.TABLE).append();
    } catch (Exception e) {
      throw new IllegalStateException("the Spark peer failed: " + e, e);
    } finally {
      spark.stop();
    }
  }
}
