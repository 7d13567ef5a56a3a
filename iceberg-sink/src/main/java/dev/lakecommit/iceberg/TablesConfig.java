package dev.lakecommit.iceberg;

import dev.lakecommit.staging.InputConverter;
import dev.lakecommit.staging.StagingWriterConfig;
import java.io.Serializable;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.apache.iceberg.Schema;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The Iceberg tables of one catalog that an engine's multi-table sink writes, as its configuration travels with the
 * engine's job (serializable): the catalog, how a table the sink creates is made (schema, partitioning,
 * properties) and whether a table that exists may evolve, where the job's state lives, one writer's bounds over all
 * its tables, and whether the catalog must commit a cut in one transaction. The engine adds how a row finds its table
 * and builds the {@link MultiTableSink} with {@link #sink}.
 */
public final class TablesConfig implements Serializable {
  private static final long serialVersionUID = 1L;

  /** A function that travels with the configuration: write it as a lambda of serializable values. */
  @FunctionalInterface
  public interface SerializableFunction<T, R> extends Function<T, R>, Serializable {}

  private final HashMap<String, String> catalogProperties;
  private final String catalogName;
  private final SerializableFunction<String, Schema> schemas;
  private final SerializableFunction<String, List<String>> partitionBy;
  private final HashMap<String, String> tableProperties;
  private final String stateLocation;
  private final int maxOpenFiles;
  private final long maxBufferedBytes;
  private final boolean requireAtomicCut;
  private final boolean addNewColumns;

  private TablesConfig(Builder<?> builder) {
    if (builder.catalogProperties == null) {
      throw new IllegalArgumentException("Missing catalogProperties(...) of the tables' Iceberg catalog");
    }
    this.catalogProperties = new HashMap<>(builder.catalogProperties);
    this.catalogName = builder.catalogName;
    this.schemas = builder.schemas;
    this.partitionBy = builder.partitionBy;
    this.tableProperties = new HashMap<>(builder.tableProperties);
    this.stateLocation = builder.stateLocation;
    this.maxOpenFiles = builder.maxOpenFiles;
    this.maxBufferedBytes = builder.maxBufferedBytes;
    this.requireAtomicCut = builder.requireAtomicCut;
    this.addNewColumns = builder.addNewColumns;
  }

  /** The catalog's name, for messages and job ids. */
  public String catalogName() {
    return catalogName;
  }

  /**
   * The multi-table sink of the engine's rows: loads the catalog.
   *
   * @param converters the converter of rows to a table of a schema
   * @param router the table of a row
   * @param rowSchema the schema of a table the sink creates when no {@code schemas(...)} was given (the rows')
   * @throws IllegalArgumentException if the catalog cannot be loaded, or lacks an atomic cut where one is required
   */
  public <IN> MultiTableSink<IN> sink(Function<Schema, InputConverter<IN>> converters,
      Function<IN, TableIdentifier> router, java.util.function.Supplier<Schema> rowSchema) {
    Schema created = schemas == null ? rowSchema.get() : null;
    MultiTableSink.Builder<IN> builder = MultiTableSink.forInput(catalogProperties, converters)
        .catalogName(catalogName)
        .router(router)
        .schemas(table -> created != null ? created : schemas.apply(table.toString()))
        .partitionBy(table -> partitionBy.apply(table.toString()))
        .tableProperties(tableProperties)
        .maxOpenFiles(maxOpenFiles)
        .maxBufferedBytes(maxBufferedBytes)
        .requireAtomicCut(requireAtomicCut)
        .addNewColumns(addNewColumns)
        // a table that exists is checked against a schema the user gave, not against the rows' own
        .checkTemplate(schemas != null);
    if (stateLocation != null) {
      builder.stateLocation(stateLocation);
    }
    return builder.build();
  }

  /**
   * The settings every engine's tables have; an engine's builder extends it with how rows find their table.
   *
   * @param <B> the engine's builder
   */
  public abstract static class Builder<B extends Builder<B>> {
    private Map<String, String> catalogProperties;
    private String catalogName = "lakecommit";
    private SerializableFunction<String, Schema> schemas;
    private SerializableFunction<String, List<String>> partitionBy = table -> List.of();
    private Map<String, String> tableProperties = Map.of();
    private String stateLocation;
    private int maxOpenFiles = StagingWriterConfig.DEFAULT_MAX_OPEN_FILES;
    private long maxBufferedBytes = StagingWriterConfig.DEFAULT_MAX_BUFFERED_BYTES;
    private boolean requireAtomicCut;
    private boolean addNewColumns;

    protected Builder() {}

    @SuppressWarnings("unchecked")
    private B self() {
      return (B) this;
    }

    /** Iceberg catalog properties ({@code type}, {@code uri}, {@code warehouse}, {@code io-impl}, ...). */
    public B catalogProperties(Map<String, String> properties) {
      this.catalogProperties = Map.copyOf(properties);
      return self();
    }

    public B catalogName(String name) {
      this.catalogName = Objects.requireNonNull(name, "name");
      return self();
    }

    /**
     * The schema of a table the sink creates, by its name ({@code namespace.name}); default: the rows'. A table that
     * exists is checked against it: a column it lacks stops the job naming both, unless {@link #addNewColumns}.
     */
    public B schemas(SerializableFunction<String, Schema> schemaOfTable) {
      this.schemas = Objects.requireNonNull(schemaOfTable, "schemaOfTable");
      return self();
    }

    /** Partition transforms of every table the sink creates ({@code day(ts)}, {@code bucket(16, id)}, ...). */
    public B partitionBy(String... transforms) {
      List<String> all = List.of(transforms);
      this.partitionBy = table -> all;
      return self();
    }

    /** Partition transforms of a table the sink creates, by its name. */
    public B partitionBy(SerializableFunction<String, List<String>> transformsOfTable) {
      this.partitionBy = Objects.requireNonNull(transformsOfTable, "transformsOfTable");
      return self();
    }

    /** Properties of every table the sink creates. */
    public B tableProperties(Map<String, String> properties) {
      this.tableProperties = Map.copyOf(properties);
      return self();
    }

    /**
     * Where the job's registry of tables, run claims and cut records live; default {@code
     * <warehouse>/_lakecommit/jobs} (see {@link MultiTableSink.Builder#stateLocation}).
     */
    public B stateLocation(String location) {
      this.stateLocation = Objects.requireNonNull(location, "location");
      return self();
    }

    /** Files one writer (a Flink subtask, a Spark task) keeps open over all its tables together. */
    public B maxOpenFiles(int files) {
      this.maxOpenFiles = files;
      return self();
    }

    /** Bytes one writer buffers over all its tables together. */
    public B maxBufferedBytes(long bytes) {
      this.maxBufferedBytes = bytes;
      return self();
    }

    /** Refuse a catalog that cannot commit several tables in one transaction (JDBC, atomic REST). */
    public B requireAtomicCut(boolean required) {
      this.requireAtomicCut = required;
      return self();
    }

    /**
     * Adds the new optional columns of the rows' schema (or of the schema {@link #schemas} gives) to a table that
     * lacks them, and widens the types they widen, in the cut that commits the rows (see {@link
     * MultiTableSink.Builder#addNewColumns}). Without it a table that exists is written with its own columns (the
     * rows' columns by name), checked against a schema {@link #schemas} gives.
     */
    public B addNewColumns(boolean add) {
      this.addNewColumns = add;
      return self();
    }

    /**
     * The settings given so far.
     *
     * @throws IllegalArgumentException if the catalog is missing
     */
    protected TablesConfig tables() {
      return new TablesConfig(this);
    }
  }
}
