package dev.lakecommit.iceberg;

import dev.lakecommit.staging.StagingWriterConfig;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.iceberg.Schema;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.expressions.Expression;

/**
 * Everything an {@link IcebergSink} needs: the catalog (by Iceberg's own catalog properties), the table, how to
 * create it, how checkpoints change it, and how writers stage files.
 *
 * <pre>{@code
 * IcebergSinkConfig config = IcebergSinkConfig.builder()
 *     .catalogProperties(Map.of("type", "jdbc", "uri", "jdbc:sqlite:/data/catalog.db", "warehouse", "/data/wh"))
 *     .table("db.events")
 *     .createTable(schema, List.of("day(ts)"))
 *     .build();
 * }</pre>
 */
public final class IcebergSinkConfig {
  /** Catalog types Iceberg's {@code CatalogUtil} knows by name. */
  static final List<String> CATALOG_TYPES = List.of("hadoop", "jdbc", "hive", "rest", "glue", "nessie");

  final String catalogName;
  final Map<String, String> catalogProperties;
  final TableIdentifier table;
  final Schema createSchema;
  final List<String> partitionBy;
  final Map<String, String> tableProperties;
  final boolean addNewColumns;
  final CommitMode mode;
  final Expression overwriteFilter;
  final String branch;
  final String codec;
  final long targetFileSizeBytes;
  final long maxRowsPerFile;
  final int maxOpenFiles;
  final long maxBufferedBytes;
  final boolean clusterPastOpenFiles;
  final boolean writeManifests;
  final int writerManifestMinFiles;
  final List<String> upsertKey;
  final boolean coalescePendingAppends;
  final CommitMetrics metrics;

  private IcebergSinkConfig(Builder builder) {
    this.catalogName = builder.catalogName;
    this.catalogProperties = Map.copyOf(builder.catalogProperties);
    this.table = builder.table;
    this.createSchema = builder.createSchema;
    this.partitionBy = List.copyOf(builder.partitionBy);
    this.tableProperties = Map.copyOf(builder.tableProperties);
    this.addNewColumns = builder.addNewColumns;
    this.mode = builder.mode;
    this.overwriteFilter = builder.overwriteFilter;
    this.branch = builder.branch;
    this.codec = builder.codec;
    this.targetFileSizeBytes = builder.targetFileSizeBytes;
    this.maxRowsPerFile = builder.maxRowsPerFile;
    this.maxOpenFiles = builder.maxOpenFiles;
    this.maxBufferedBytes = builder.maxBufferedBytes;
    this.clusterPastOpenFiles = builder.clusterPastOpenFiles;
    this.writeManifests = builder.writeManifests;
    this.writerManifestMinFiles = builder.writerManifestMinFiles;
    this.upsertKey = List.copyOf(builder.upsertKey);
    this.coalescePendingAppends = builder.coalescePendingAppends;
    this.metrics = builder.metrics;
  }

  /** See {@link Builder#writerManifestMinFiles}. */
  public static final int DEFAULT_WRITER_MANIFEST_MIN_FILES = 100;

  public static Builder builder() {
    return new Builder();
  }

  public TableIdentifier table() {
    return table;
  }

  public Map<String, String> catalogProperties() {
    return catalogProperties;
  }

  public String catalogName() {
    return catalogName;
  }

  /** How checkpoints change the table; {@link CommitMode#UPSERT} is the one mode that deletes rows. */
  public CommitMode mode() {
    return mode;
  }

  /** Builder; settings are checked here, the catalog and table when the sink is built. */
  public static final class Builder {
    private String catalogName = "lakecommit";
    private final Map<String, String> catalogProperties = new LinkedHashMap<>();
    private TableIdentifier table;
    private Schema createSchema;
    private List<String> partitionBy = List.of();
    private final Map<String, String> tableProperties = new LinkedHashMap<>();
    private boolean addNewColumns;
    private CommitMode mode = CommitMode.APPEND;
    private Expression overwriteFilter;
    private String branch;
    private String codec;
    private long targetFileSizeBytes;
    private long maxRowsPerFile = Long.MAX_VALUE;
    private int maxOpenFiles = 32;
    private long maxBufferedBytes = StagingWriterConfig.DEFAULT_MAX_BUFFERED_BYTES;
    private boolean clusterPastOpenFiles = true;
    private boolean writeManifests = true;
    private int writerManifestMinFiles = DEFAULT_WRITER_MANIFEST_MIN_FILES;
    private List<String> upsertKey = List.of();
    private boolean coalescePendingAppends;
    private CommitMetrics metrics = CommitMetrics.NONE;

    private Builder() {}

    public Builder catalogName(String name) {
      check(name != null && !name.isBlank(), "Invalid catalog name: '%s'", name);
      this.catalogName = name;
      return this;
    }

    /** Iceberg catalog properties: {@code type} (or {@code catalog-impl}), {@code uri}, {@code warehouse}, ... */
    public Builder catalogProperties(Map<String, String> properties) {
      this.catalogProperties.putAll(Objects.requireNonNull(properties, "catalogProperties"));
      return this;
    }

    public Builder catalogProperty(String key, String value) {
      this.catalogProperties.put(key, value);
      return this;
    }

    /** The table, as {@code namespace.name} (namespace levels separated by dots). */
    public Builder table(String identifier) {
      check(identifier != null && identifier.contains(".") && !identifier.startsWith(".")
          && !identifier.endsWith("."), "Invalid table: '%s' (use namespace.name, e.g. db.events)", identifier);
      return table(TableIdentifier.parse(identifier));
    }

    public Builder table(TableIdentifier identifier) {
      this.table = Objects.requireNonNull(identifier, "table");
      return this;
    }

    /**
     * Creates the table if it does not exist, with this schema and partitioning (Iceberg transforms: {@code col},
     * {@code year(col)}, {@code month(col)}, {@code day(col)}, {@code hour(col)}, {@code bucket(N, col)},
     * {@code truncate(W, col)}). The schema is also the one records are staged with.
     */
    public Builder createTable(Schema schema, List<String> partitioning) {
      this.createSchema = Objects.requireNonNull(schema, "schema");
      this.partitionBy = List.copyOf(partitioning);
      return this;
    }

    /** Properties of a table created by the sink (for example {@code format-version}). */
    public Builder tableProperties(Map<String, String> properties) {
      this.tableProperties.putAll(properties);
      return this;
    }

    /**
     * Adds optional columns (and struct fields) of the staged schema that the table lacks and widens the types it
     * widens, instead of failing: the writers write with the evolved schema and the commit that adds their first
     * files evolves the table in the same transaction; building the sink changes nothing.
     */
    public Builder addNewColumns(boolean add) {
      this.addNewColumns = add;
      return this;
    }

    public Builder mode(CommitMode commitMode) {
      this.mode = Objects.requireNonNull(commitMode, "mode");
      return this;
    }

    /** The rows each checkpoint replaces, for {@link CommitMode#OVERWRITE_BY_FILTER}. */
    public Builder overwriteFilter(Expression filter) {
      this.overwriteFilter = Objects.requireNonNull(filter, "overwriteFilter");
      return this;
    }

    /** Commits to this branch instead of {@code main}. */
    public Builder branch(String name) {
      check(name != null && !name.isBlank(), "Invalid branch: '%s'", name);
      this.branch = name;
      return this;
    }

    public Builder codec(String parquetCodec) {
      this.codec = parquetCodec;
      return this;
    }

    public Builder targetFileSizeBytes(long bytes) {
      check(bytes > 0, "Invalid target file size: %s (must be > 0)", bytes);
      this.targetFileSizeBytes = bytes;
      return this;
    }

    public Builder maxRowsPerFile(long rows) {
      check(rows > 0, "Invalid max rows per file: %s (must be > 0)", rows);
      this.maxRowsPerFile = rows;
      return this;
    }

    public Builder maxOpenFiles(int files) {
      check(files > 0, "Invalid max open files: %s (must be > 0)", files);
      this.maxOpenFiles = files;
      return this;
    }

    /**
     * Bytes a writer's open files may buffer together before it closes the largest (default 256 MiB); see
     * {@link StagingWriterConfig.Builder#maxBufferedBytes}.
     */
    public Builder maxBufferedBytes(long bytes) {
      check(bytes > 0, "Invalid max buffered bytes: %s (must be > 0)", bytes);
      this.maxBufferedBytes = bytes;
      return this;
    }

    /**
     * Hold records to write them grouped by partition when a checkpoint has more partitions than open files, in no
     * order (default on); see {@link
     * StagingWriterConfig.Builder#clusterPastOpenFiles}.
     */
    public Builder clusterPastOpenFiles(boolean cluster) {
      this.clusterPastOpenFiles = cluster;
      return this;
    }

    /**
     * Whether each writer writes an Iceberg manifest of its files per checkpoint, so that the commit appends
     * manifests instead of adding files one by one (default true; the commit time then does not grow with the
     * number of files), if it has at least {@link #writerManifestMinFiles} files. The committer writes one
     * manifest per checkpoint (and partition spec) of all other files itself and appends it; a manifest of an
     * attempt that did not commit is deleted. Append mode on format v2+ tables only: overwrites and upserts add
     * files, v1 tables too (their manifests carry snapshot ids).
     */
    public Builder writeManifests(boolean write) {
      this.writeManifests = write;
      return this;
    }

    /**
     * The fewest files a writer must have at a checkpoint to write its own manifest of them (default
     * {@value IcebergSinkConfig#DEFAULT_WRITER_MANIFEST_MIN_FILES}); the committer puts the files of writers with
     * fewer into its one manifest of the checkpoint. Many writers with a few files each would otherwise add one
     * small manifest each to the commit and to every later scan of the table. 1 = every writer with files.
     */
    public Builder writerManifestMinFiles(int files) {
      check(files > 0, "Invalid writer manifest min files: %s (must be > 0)", files);
      this.writerManifestMinFiles = files;
      return this;
    }

    /**
     * The key columns of {@link CommitMode#UPSERT} (top-level, required, primitive; they must include the source
     * columns of the partition spec). Without it the table's identifier fields are the key. A table the sink
     * creates gets them as its identifier fields.
     */
    public Builder upsertKey(List<String> columns) {
      check(columns != null && !columns.isEmpty() && columns.stream().noneMatch(c -> c == null || c.isBlank()),
          "Invalid upsertKey: %s (name one or more columns)", columns);
      check(new java.util.HashSet<>(columns).size() == columns.size(), "Invalid upsertKey: %s (repeats a column)",
          columns);
      this.upsertKey = List.copyOf(columns);
      return this;
    }

    /**
     * When several append-mode checkpoints are pending at once (after a restore, or a backlog of failed commits),
     * commit them as one snapshot whose checkpoint id is the newest of them; its summary names the range. Default
     * off: one snapshot per checkpoint, oldest first. Overwrite and upsert checkpoints are never coalesced.
     */
    public Builder coalescePendingAppends(boolean coalesce) {
      this.coalescePendingAppends = coalesce;
      return this;
    }

    public Builder metrics(CommitMetrics commitMetrics) {
      this.metrics = Objects.requireNonNull(commitMetrics, "metrics");
      return this;
    }

    public IcebergSinkConfig build() {
      check(table != null, "Missing table: set table(\"namespace.name\")");
      String type = catalogProperties.get("type");
      String impl = catalogProperties.get("catalog-impl");
      check(type != null || impl != null,
          "Missing catalog option: set type (one of %s) or catalog-impl", String.join(", ", CATALOG_TYPES));
      check(type == null || CATALOG_TYPES.contains(type.toLowerCase(java.util.Locale.ROOT)),
          "Unknown catalog type: type=%s (use one of %s, or catalog-impl=<class>)", type,
          String.join(", ", CATALOG_TYPES));
      check(mode != CommitMode.OVERWRITE_BY_FILTER || overwriteFilter != null,
          "Missing overwrite filter: mode OVERWRITE_BY_FILTER needs overwriteFilter(...)");
      check(upsertKey.isEmpty() || mode == CommitMode.UPSERT,
          "Invalid option: upsertKey %s is only used by mode UPSERT (mode is %s)", upsertKey, mode);
      return new IcebergSinkConfig(this);
    }

    private static void check(boolean condition, String message, Object... args) {
      if (!condition) {
        throw new IllegalArgumentException(String.format(message, args));
      }
    }
  }
}
