package dev.lakecommit.spark;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.concat;
import static org.apache.spark.sql.functions.date_add;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.timestamp_seconds;

/** Shared pieces of the Spark tests: the session, the test rows, reading tables back. */
final class SparkTestSupport {
  /** Iceberg's schema of the test rows. */
  static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "name", Types.StringType.get()),
      Types.NestedField.optional(3, "bucket", Types.IntegerType.get()),
      Types.NestedField.optional(4, "amount", Types.DecimalType.of(12, 2)),
      Types.NestedField.optional(5, "day", Types.DateType.get()),
      Types.NestedField.optional(6, "ts", Types.TimestampType.withZone()));

  private SparkTestSupport() {}

  /**
   * A local session with 2 cores and up to 4 attempts per task, bound to loopback, with Iceberg's Spark catalog
   * {@code ice} on a Hadoop warehouse for reading tables back.
   */
  static SparkSession session(String app, Path icebergWarehouse, Map<String, String> extra) {
    SparkSession.Builder builder = SparkSession.builder()
        .master("local[2,4]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.ice.type", "hadoop")
        .config("spark.sql.catalog.ice.warehouse", icebergWarehouse.toUri().toString());
    extra.forEach(builder::config);
    return builder.getOrCreate();
  }

  /** Rows {@code first .. first + count - 1} in {@code partitions} partitions, in the columns of {@link #SCHEMA}. */
  static Dataset<Row> rows(SparkSession spark, long first, long count, int partitions) {
    Column id = col("id");
    return spark.range(first, first + count, 1, partitions).select(
        id,
        concat(lit("name-"), id.cast("string")).as("name"),
        id.mod(7).cast("int").as("bucket"),
        id.divide(100).cast("decimal(12,2)").as("amount"),
        date_add(lit("2026-01-01").cast("date"), id.mod(3).cast("int")).as("day"),
        timestamp_seconds(id.plus(1_700_000_000L)).as("ts"));
  }

  static Map<String, String> hadoopCatalog(Path warehouse) {
    Map<String, String> props = new HashMap<>();
    props.put("type", "hadoop");
    props.put("warehouse", warehouse.toUri().toString());
    return props;
  }

  static Table load(Map<String, String> catalogProperties, String table) {
    return load("ice", catalogProperties, table);
  }

  static Table load(String catalogName, Map<String, String> catalogProperties, String table) {
    Catalog catalog = org.apache.iceberg.CatalogUtil.buildIcebergCatalog(catalogName, catalogProperties,
        new org.apache.hadoop.conf.Configuration());
    return catalog.loadTable(TableIdentifier.parse(table));
  }

  /** Every row's id, read with Iceberg's generic reader. */
  static List<Long> icebergIds(Table table) throws IOException {
    table.refresh();
    List<Long> ids = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      for (Record record : records) {
        ids.add((Long) record.getField("id"));
      }
    }
    return ids;
  }

  /** {@code first .. first + count - 1}. */
  static List<Long> range(long first, long count) {
    List<Long> ids = new ArrayList<>();
    for (long i = first; i < first + count; i++) {
      ids.add(i);
    }
    return ids;
  }
}
