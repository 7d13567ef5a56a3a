package dev.lakecommit.flink;

import dev.lakecommit.iceberg.MultiTableSink;
import dev.lakecommit.iceberg.TablePattern;
import java.io.Serializable;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.LogicalTypeFamily;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.function.SerializableFunction;
import org.apache.iceberg.Schema;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The Iceberg tables of one catalog that a Flink sink writes, a table per row: named by a column's value in a
 * pattern ({@link Builder#routeByColumn}) or by a function of the row ({@link Builder#route}), created on their first
 * row (with the row type's schema unless {@link Builder#schemas} gives one), and committed together at each
 * checkpoint as one cut ({@link MultiTableSink}). Serializable: it travels with the job graph.
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

  private final HashMap<String, String> catalogProperties;
  private final String catalogName;
  private final String routeColumn;
  private final String routePattern;
  private final SerializableFunction<RowData, String> route;
  private final SerializableFunction<String, Schema> schemas;
  private final SerializableFunction<String, List<String>> partitionBy;
  private final HashMap<String, String> tableProperties;
  private final String stateLocation;
  private final int maxOpenFiles;
  private final long maxBufferedBytes;
  private final boolean requireAtomicCut;

  private IcebergTables(Builder builder) {
    this.catalogProperties = new HashMap<>(builder.catalogProperties);
    this.catalogName = builder.catalogName;
    this.routeColumn = builder.routeColumn;
    this.routePattern = builder.routePattern;
    this.route = builder.route;
    this.schemas = builder.schemas;
    this.partitionBy = builder.partitionBy;
    this.tableProperties = new HashMap<>(builder.tableProperties);
    this.stateLocation = builder.stateLocation;
    this.maxOpenFiles = builder.maxOpenFiles;
    this.maxBufferedBytes = builder.maxBufferedBytes;
    this.requireAtomicCut = builder.requireAtomicCut;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The catalog's name, for messages and the default job id. */
  String catalogName() {
    return catalogName;
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
    java.util.function.Function<RowData, TableIdentifier> router = routeColumn != null ? columnRouter(rowType)
        : row -> TableIdentifier.parse(Objects.requireNonNull(route.apply(row), "the route function returned null"));
    Schema rowSchema = schemas == null ? RowTypeSchema.of(rowType) : null;
    MultiTableSink.Builder<RowData> builder = MultiTableSink.<RowData>forInput(catalogProperties,
            schema -> RowDataRecord.of(rowType, schema, false))
        .catalogName(catalogName)
        .router(router)
        .schemas(table -> rowSchema != null ? rowSchema : schemas.apply(table.toString()))
        .partitionBy(table -> partitionBy.apply(table.toString()))
        .tableProperties(tableProperties)
        .maxOpenFiles(maxOpenFiles)
        .maxBufferedBytes(maxBufferedBytes)
        .requireAtomicCut(requireAtomicCut);
    if (stateLocation != null) {
      builder.stateLocation(stateLocation);
    }
    return builder.build();
  }

  private java.util.function.Function<RowData, TableIdentifier> columnRouter(RowType rowType) {
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
    TablePattern tables = new TablePattern(routeColumn, routePattern);
    return row -> {
      Object value = getter.getFieldOrNull(row);
      return tables.table(value == null ? null : value.toString(), row);
    };
  }

  /** Configuration of {@link IcebergTables}; every function given must be serializable (a lambda will do). */
  public static final class Builder {
    private Map<String, String> catalogProperties;
    private String catalogName = "lakecommit";
    private String routeColumn;
    private String routePattern;
    private SerializableFunction<RowData, String> route;
    private SerializableFunction<String, Schema> schemas;
    private SerializableFunction<String, List<String>> partitionBy = table -> List.of();
    private Map<String, String> tableProperties = Map.of();
    private String stateLocation;
    private int maxOpenFiles = dev.lakecommit.staging.StagingWriterConfig.DEFAULT_MAX_OPEN_FILES;
    private long maxBufferedBytes = dev.lakecommit.staging.StagingWriterConfig.DEFAULT_MAX_BUFFERED_BYTES;
    private boolean requireAtomicCut;

    private Builder() {}

    /** Iceberg catalog properties ({@code type}, {@code uri}, {@code warehouse}, {@code io-impl}, ...). */
    public Builder catalogProperties(Map<String, String> properties) {
      this.catalogProperties = Map.copyOf(properties);
      return this;
    }

    public Builder catalogName(String name) {
      this.catalogName = Objects.requireNonNull(name, "name");
      return this;
    }

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

    /** The schema of a table the sink creates, by its name ({@code namespace.name}); default: the row type's. */
    public Builder schemas(SerializableFunction<String, Schema> schemaOfTable) {
      this.schemas = Objects.requireNonNull(schemaOfTable, "schemaOfTable");
      return this;
    }

    /** Partition transforms of every table the sink creates ({@code day(ts)}, {@code bucket(16, id)}, ...). */
    public Builder partitionBy(String... transforms) {
      List<String> all = List.of(transforms);
      this.partitionBy = table -> all;
      return this;
    }

    /** Partition transforms of a table the sink creates, by its name. */
    public Builder partitionBy(SerializableFunction<String, List<String>> transformsOfTable) {
      this.partitionBy = Objects.requireNonNull(transformsOfTable, "transformsOfTable");
      return this;
    }

    /** Properties of every table the sink creates. */
    public Builder tableProperties(Map<String, String> properties) {
      this.tableProperties = Map.copyOf(properties);
      return this;
    }

    /**
     * Where the job's registry of tables, run claims and cut records live; default {@code
     * <warehouse>/_lakecommit/jobs} (see {@link MultiTableSink.Builder#stateLocation}).
     */
    public Builder stateLocation(String location) {
      this.stateLocation = Objects.requireNonNull(location, "location");
      return this;
    }

    /** Files one writer subtask keeps open over all its tables together (checked by the multi-table sink). */
    public Builder maxOpenFiles(int files) {
      this.maxOpenFiles = files;
      return this;
    }

    /** Bytes one writer subtask buffers over all its tables together. */
    public Builder maxBufferedBytes(long bytes) {
      this.maxBufferedBytes = bytes;
      return this;
    }

    /** Refuse a catalog that cannot commit several tables in one transaction (JDBC, atomic REST). */
    public Builder requireAtomicCut(boolean required) {
      this.requireAtomicCut = required;
      return this;
    }

    /**
     * @throws IllegalArgumentException if the catalog or the route is missing
     */
    public IcebergTables build() {
      if (catalogProperties == null) {
        throw new IllegalArgumentException("Missing catalogProperties(...) of the tables' Iceberg catalog");
      }
      if (routeColumn == null && route == null) {
        throw new IllegalArgumentException("Missing route: call routeByColumn(\"kind\", \"db.${kind}\") or"
            + " route(row -> ...), the table of each row");
      }
      return new IcebergTables(this);
    }
  }
}
