package dev.lakecommit.flink;

import dev.lakecommit.iceberg.MultiTableSink;
import dev.lakecommit.iceberg.TablePattern;
import dev.lakecommit.iceberg.TablesConfig;
import java.io.Serializable;
import java.util.Objects;
import java.util.function.Function;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.LogicalTypeFamily;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.function.SerializableFunction;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The Iceberg tables of one catalog that a Flink sink writes, a table per row: named by a column's value in a
 * pattern ({@link Builder#routeByColumn}) or by a function of the row ({@link Builder#route}), created on their first
 * row (with the row type's schema unless {@link TablesConfig.Builder#schemas} gives one), and committed together at
 * each checkpoint as one cut ({@link MultiTableSink}). Serializable: it travels with the job graph.
 *
 * <pre>{@code
 * IcebergTables tables = IcebergTables.builder()
 *     .catalogProperties(Map.of("type", "jdbc", "uri", "jdbc:postgresql://db/lake", "warehouse", "s3://lake/wh"))
 *     .routeByColumn("kind", "shop.${kind}")   // a row of kind "order" goes to shop.order
 *     .partitionBy("day(ts)")
 *     .build();
 * }</pre>
 */
public final class IcebergTables implements Serializable {
  private static final long serialVersionUID = 1L;

  private final TablesConfig tables;
  private final String routeColumn;
  private final String routePattern;
  private final SerializableFunction<RowData, String> route;

  private IcebergTables(Builder builder, TablesConfig tables) {
    this.tables = tables;
    this.routeColumn = builder.routeColumn;
    this.routePattern = builder.routePattern;
    this.route = builder.route;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The catalog's name, for messages and the default job id. */
  String catalogName() {
    return tables.catalogName();
  }

  /** How rows find their table, for messages: {@code shop.${kind}} or "a function of the row". */
  String routing() {
    return routePattern != null ? routePattern : "tables named by a function of the row";
  }

  /**
   * The multi-table sink of rows of {@code rowType}: loads the catalog.
   *
   * @throws IllegalArgumentException naming the column or option that does not fit the row type
   */
  MultiTableSink<RowData> open(RowType rowType) {
    Function<RowData, TableIdentifier> router = routeColumn != null ? columnRouter(rowType)
        : row -> TableIdentifier.parse(Objects.requireNonNull(route.apply(row), "the route function returned null"));
    return tables.sink(schema -> RowDataRecord.of(rowType, schema, false), router, () -> RowTypeSchema.of(rowType));
  }

  private Function<RowData, TableIdentifier> columnRouter(RowType rowType) {
    int position = rowType.getFieldNames().indexOf(routeColumn);
    if (position < 0) {
      throw new IllegalArgumentException("Invalid routeByColumn: the rows have no column '" + routeColumn
          + "' (their columns: " + rowType.getFieldNames() + ")");
    }
    var type = rowType.getTypeAt(position);
    if (!type.is(LogicalTypeFamily.CHARACTER_STRING) && !type.is(LogicalTypeFamily.INTEGER_NUMERIC)) {
      throw new IllegalArgumentException("Invalid routeByColumn: column '" + routeColumn + "' is " + type
          + ", not a string or an integer a table can be named by");
    }
    RowData.FieldGetter getter = RowData.createFieldGetter(type, position);
    TablePattern pattern = new TablePattern(routeColumn, routePattern);
    return row -> {
      Object value = getter.getFieldOrNull(row);
      return pattern.table(value == null ? null : value.toString(), row);
    };
  }

  /**
   * Configuration of {@link IcebergTables}: the catalog and the tables' settings ({@link TablesConfig.Builder}) and
   * the route. Every function given must be serializable (a lambda will do).
   */
  public static final class Builder extends TablesConfig.Builder<Builder> {
    private String routeColumn;
    private String routePattern;
    private SerializableFunction<RowData, String> route;

    private Builder() {}

    /**
     * Each row's table is {@code pattern} with {@code ${column}} replaced by the row's value of the column (a string
     * or an integer column): letters, digits, {@code _} and {@code -} only, so a value never names another
     * namespace. A row without a value or with another character fails the job, naming the row.
     *
     * @throws IllegalArgumentException if the pattern lacks {@code ${column}} or makes no {@code namespace.name}
     */
    public Builder routeByColumn(String column, String pattern) {
      new TablePattern(Objects.requireNonNull(column, "column"), Objects.requireNonNull(pattern, "pattern"));
      this.routeColumn = column;
      this.routePattern = pattern;
      this.route = null;
      return this;
    }

    /** Each row's table, as {@code namespace.name}, by a function of the row (called by every writer). */
    public Builder route(SerializableFunction<RowData, String> tableOfRow) {
      this.route = Objects.requireNonNull(tableOfRow, "tableOfRow");
      this.routeColumn = null;
      this.routePattern = null;
      return this;
    }

    /**
     * @throws IllegalArgumentException if the catalog or the route is missing
     */
    public IcebergTables build() {
      TablesConfig tables = tables();
      if (routeColumn == null && route == null) {
        throw new IllegalArgumentException("Missing route: call routeByColumn(\"kind\", \"db.${kind}\") or"
            + " route(row -> ...), the table of each row");
      }
      return new IcebergTables(this, tables);
    }
  }
}
