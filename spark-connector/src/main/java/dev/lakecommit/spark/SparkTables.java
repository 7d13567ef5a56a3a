package dev.lakecommit.spark;

import dev.lakecommit.iceberg.MultiTableSink;
import dev.lakecommit.iceberg.TablePattern;
import dev.lakecommit.iceberg.TablesConfig;
import java.io.Serializable;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;

/**
 * The Iceberg tables of one catalog that a Spark query writes as one cut per micro-batch ({@link MultiTableSink}):
 * the tables of one DataFrame routed by a column ({@link Builder#routeByColumn}), or several DataFrames, each to a
 * table of its own ({@link MicroBatchWriter#writeTables}). A table is created on its first row, with the
 * DataFrame's schema unless {@link TablesConfig.Builder#schemas} gives one. Serializable: it travels to the executors.
 *
 * <pre>{@code
 * SparkTables tables = SparkTables.builder()
 *     .catalogProperties(Map.of("type", "jdbc", "uri", "jdbc:postgresql://db/lake", "warehouse", "s3://lake/wh"))
 *     .routeByColumn("kind", "shop.${kind}")   // a row of kind "order" goes to shop.order
 *     .partitionBy("day(ts)")
 *     .build();
 * }</pre>
 */
public final class SparkTables implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Tells this configuration's sinks apart in a JVM's sink cache. */
  private final String id = UUID.randomUUID().toString();
  private final TablesConfig tables;
  private final String routeColumn;
  private final String routePattern;

  private SparkTables(Builder builder, TablesConfig tables) {
    this.tables = tables;
    this.routeColumn = builder.routeColumn;
    this.routePattern = builder.routePattern;
  }

  public static Builder builder() {
    return new Builder();
  }

  String id() {
    return id;
  }

  String catalogName() {
    return tables.catalogName();
  }

  /** How rows find their table, for messages: {@code shop.${kind}}, or empty if the DataFrames name them. */
  String routing() {
    return routePattern != null ? routePattern : "";
  }

  boolean routed() {
    return routeColumn != null;
  }

  /**
   * The multi-table sink of rows of {@code schema}, each to the table the route names, or all to {@code table}.
   *
   * @param table the table of every row (a DataFrame of its own), or null to route by the column
   * @throws IllegalArgumentException naming the column or option that does not fit the schema
   */
  MultiTableSink<InternalRow> open(StructType schema, String table) {
    Function<InternalRow, TableIdentifier> router;
    if (table != null) {
      TableIdentifier fixed = TableIdentifier.parse(table);
      router = row -> fixed;
    } else {
      router = columnRouter(schema);
    }
    String where = "the tables of catalog " + tables.catalogName();
    return tables.sink(tableSchema -> InternalRowConverter.of(schema, tableSchema, where), router,
        () -> StructTypeSchema.of(schema));
  }

  private Function<InternalRow, TableIdentifier> columnRouter(StructType schema) {
    int position = List.of(schema.fieldNames()).indexOf(routeColumn);
    if (position < 0) {
      throw new IllegalArgumentException("Invalid routeByColumn: the DataFrame has no column '" + routeColumn
          + "' (its columns: " + List.of(schema.fieldNames()) + ")");
    }
    DataType type = schema.fields()[position].dataType();
    if (!(type instanceof StringType || type instanceof IntegerType || type instanceof LongType
        || type instanceof ShortType)) {
      throw new IllegalArgumentException("Invalid routeByColumn: column '" + routeColumn + "' is "
          + type.simpleString() + ", not a string or an integer a table can be named by");
    }
    TablePattern pattern = new TablePattern(routeColumn, routePattern);
    return row -> {
      Object value = row.isNullAt(position) ? null : row.get(position, type);
      return pattern.table(value == null ? null : value.toString(), new RowText(row, schema));
    };
  }

  /** A row as its columns and values, for an error message. */
  private record RowText(InternalRow row, StructType schema) {
    @Override
    public String toString() {
      StringBuilder text = new StringBuilder("{");
      for (int i = 0; i < schema.fields().length; i++) {
        text.append(i == 0 ? "" : ", ").append(schema.fields()[i].name()).append('=')
            .append(row.isNullAt(i) ? null : row.get(i, schema.fields()[i].dataType()));
      }
      return text.append('}').toString();
    }
  }

  /**
   * Configuration of {@link SparkTables}: the catalog and the tables' settings ({@link TablesConfig.Builder}), and
   * for the rows of one DataFrame the route. Every function given must be serializable (a lambda will do).
   */
  public static final class Builder extends TablesConfig.Builder<Builder> {
    private String routeColumn;
    private String routePattern;

    private Builder() {}

    /**
     * Each row's table is {@code pattern} with {@code ${column}} replaced by the row's value of the column (a string
     * or an integer column): letters, digits, {@code _} and {@code -} only, so a value never names another
     * namespace. A row without a value or with another character fails the micro-batch, naming the row, and nothing
     * of it is committed.
     *
     * @throws IllegalArgumentException if the pattern lacks {@code ${column}} or makes no {@code namespace.name}
     */
    public Builder routeByColumn(String column, String pattern) {
      new TablePattern(Objects.requireNonNull(column, "column"), Objects.requireNonNull(pattern, "pattern"));
      this.routeColumn = column;
      this.routePattern = pattern;
      return this;
    }

    /**
     * @throws IllegalArgumentException if the catalog is missing
     */
    public SparkTables build() {
      return new SparkTables(this, tables());
    }
  }
}
