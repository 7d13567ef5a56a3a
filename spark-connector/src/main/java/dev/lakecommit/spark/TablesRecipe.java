package dev.lakecommit.spark;

import dev.lakecommit.core.JobId;
import dev.lakecommit.iceberg.CutCommitter;
import dev.lakecommit.iceberg.MultiTableSink;
import java.io.IOException;
import java.util.Collection;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;

/**
 * Iceberg tables of one catalog committed as one cut per write ({@link SparkTables}): the rows of a DataFrame routed
 * by a column, or all of them to one table (one DataFrame among several of a cut).
 */
final class TablesRecipe extends SinkRecipe {
  private static final long serialVersionUID = 1L;

  private final SparkTables tables;
  /** The table of every row, or null to route each row by the column. */
  private final String table;

  private TablesRecipe(SparkTables tables, String table) {
    super(tables.id() + "#" + (table == null ? "" : table));
    this.tables = tables;
    this.table = table;
  }

  /** The rows of a DataFrame, each to the table its column names. */
  static TablesRecipe routed(SparkTables tables) {
    if (!tables.routed()) {
      throw new IllegalArgumentException("The tables name no route for the rows of one DataFrame: give"
          + " SparkTables.Builder#routeByColumn, or write a DataFrame per table with writeTables(batchId, tables)");
    }
    return new TablesRecipe(tables, null);
  }

  /** Every row of a DataFrame to {@code table}. */
  static TablesRecipe of(SparkTables tables, String table) {
    Objects.requireNonNull(table, "table");
    if (!dev.lakecommit.iceberg.TablePattern.isPlainName(table)) {
      throw new IllegalArgumentException("Invalid table name '" + table + "' (use namespace.name: letters, digits, _"
          + " and -, no empty part)");
    }
    return new TablesRecipe(tables, table);
  }

  @Override
  String describe() {
    return table != null ? "Iceberg table " + table + " of catalog " + tables.catalogName()
        : "the Iceberg tables " + tables.routing() + " of catalog " + tables.catalogName();
  }

  /** The cut's tables as a whole, for the messages of a write of several DataFrames. */
  String describeCut() {
    return "the Iceberg tables of catalog " + tables.catalogName();
  }

  @Override
  Opened<?, ?> open(StructType schema) {
    MultiTableSink<InternalRow> sink = tables.open(schema, table);
    return new Opened<>(sink, sink);
  }

  /** A cut's properties live in its tables or its record: the last cut's, whatever writer set them. */
  @Override
  Optional<Map<String, String>> committedProperties(Opened<?, ?> opened, JobId jobId, Collection<String> keys)
      throws IOException {
    MultiTableSink<?> sink = (MultiTableSink<?>) opened.sink();
    return Optional.of(sink.lastCut(jobId, keys).map(CutCommitter.Cut::properties).orElse(Map.of()));
  }
}
