package dev.lakecommit.hive;

import dev.lakecommit.staging.StagingWriterConfig;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.iceberg.Schema;

/**
 * Everything a {@link HiveSink} needs: the metastore, the table, how to create it, how checkpoints change it,
 * and how writers stage files.
 *
 * <pre>{@code
 * HiveSinkConfig config = HiveSinkConfig.builder()
 *     .metastoreUri("thrift://metastore:9083")
 *     .hadoopProperty("fs.s3a.endpoint", "http://minio:9000")       // storage of the table (s3a://, hdfs://, file:)
 *     .table("db.events")
 *     .createTable(schema, List.of("dt", "region"))                  // identity partitions, Hive style
 *     .mode(WriteMode.APPEND)
 *     .successFiles(true)
 *     .build();
 * }</pre>
 */
public final class HiveSinkConfig {
  /** Partitions per {@code add_partitions} / {@code alter_partitions} call when not configured. */
  public static final int DEFAULT_PARTITION_BATCH_SIZE = 500;

  /** Parallel file moves when not configured (on S3A each move is a server-side copy and a delete). */
  public static final int DEFAULT_MOVE_THREADS = 8;

  final String metastoreUri;
  final Map<String, String> hadoopProperties;
  final Configuration baseHadoopConf;
  final String database;
  final String tableName;
  final Schema createSchema;
  final List<String> partitionBy;
  final boolean external;
  final String location;
  final Map<String, String> tableProperties;
  final Schema schema;
  final boolean addNewColumns;
  final WriteMode mode;
  final boolean successFiles;
  final int partitionBatchSize;
  final int moveThreads;
  final String codec;
  final long targetFileSizeBytes;
  final long maxRowsPerFile;
  final int maxOpenFiles;
  final long maxBufferedBytes;
  final boolean clusterPastOpenFiles;
  final MetastoreClientFactory clientFactory;

  private HiveSinkConfig(Builder builder) {
    this.metastoreUri = builder.metastoreUri;
    this.hadoopProperties = Map.copyOf(builder.hadoopProperties);
    this.baseHadoopConf = builder.hadoopConf;
    this.database = builder.database;
    this.tableName = builder.tableName;
    this.createSchema = builder.createSchema;
    this.partitionBy = List.copyOf(builder.partitionBy);
    this.external = builder.external;
    this.location = builder.location;
    this.tableProperties = Map.copyOf(builder.tableProperties);
    this.schema = builder.schema;
    this.addNewColumns = builder.addNewColumns;
    this.mode = builder.mode;
    this.successFiles = builder.successFiles;
    this.partitionBatchSize = builder.partitionBatchSize;
    this.moveThreads = builder.moveThreads;
    this.codec = builder.codec;
    this.targetFileSizeBytes = builder.targetFileSizeBytes;
    this.maxRowsPerFile = builder.maxRowsPerFile;
    this.maxOpenFiles = builder.maxOpenFiles;
    this.maxBufferedBytes = builder.maxBufferedBytes;
    this.clusterPastOpenFiles = builder.clusterPastOpenFiles;
    this.clientFactory = builder.clientFactory;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** {@code database.table}. */
  public String table() {
    return database + "." + tableName;
  }

  public WriteMode mode() {
    return mode;
  }

  /** A new Hadoop configuration: the given one (or defaults) with the configured properties applied. */
  public Configuration hadoopConf() {
    Configuration conf = baseHadoopConf == null ? new Configuration() : new Configuration(baseHadoopConf);
    hadoopProperties.forEach(conf::set);
    return conf;
  }

  /**
   * A new metastore client configuration: {@link #hadoopConf()} with the metastore URI.
   *
   * @throws IllegalArgumentException if no metastore URI is set (the client would start a metastore of its own)
   */
  public HiveConf hiveConf() {
    Configuration given = hadoopConf();
    HiveConf conf = new HiveConf(given, HiveSinkConfig.class);
    // One owner per failure kind (DESIGN.md rule 8): the client reconnects once after a broken connection, with
    // one connection attempt and no pause of its own; backing off through an outage is the commit retry policy's.
    // Without this every commit attempt ran the client's 3 connection attempts 1 s apart, nested in the policy's.
    setUnlessGiven(given, conf, HiveConf.ConfVars.METASTORETHRIFTCONNECTIONRETRIES, "1");
    setUnlessGiven(given, conf, HiveConf.ConfVars.METASTORETHRIFTFAILURERETRIES, "1");
    setUnlessGiven(given, conf, HiveConf.ConfVars.METASTORE_CLIENT_CONNECT_RETRY_DELAY, "0s");
    if (metastoreUri != null) {
      conf.set(HiveConf.ConfVars.METASTOREURIS.varname, metastoreUri);
    }
    String uris = conf.get(HiveConf.ConfVars.METASTOREURIS.varname);
    if (uris == null || uris.isBlank()) {
      throw new IllegalArgumentException(String.format(
          "Missing metastore for table %s: set metastoreUri(\"thrift://host:port\") or hive.metastore.uris",
          table()));
    }
    return conf;
  }

  /** Sets a Hive setting that neither the sink's Hadoop settings nor a hive-site.xml gave. */
  private static void setUnlessGiven(Configuration given, HiveConf conf, HiveConf.ConfVars var, String value) {
    if (given.get(var.varname) == null && java.util.Objects.equals(conf.get(var.varname), var.getDefaultValue())) {
      conf.set(var.varname, value);
    }
  }

  /** Builder; settings are checked here, the metastore and the table when the sink is built. */
  public static final class Builder {
    private String metastoreUri;
    private final Map<String, String> hadoopProperties = new LinkedHashMap<>();
    private Configuration hadoopConf;
    private String database;
    private String tableName;
    private boolean addNewColumns;
    private Schema createSchema;
    private List<String> partitionBy = List.of();
    private boolean external;
    private String location;
    private final Map<String, String> tableProperties = new LinkedHashMap<>();
    private Schema schema;
    private WriteMode mode = WriteMode.APPEND;
    private boolean successFiles;
    private int partitionBatchSize = DEFAULT_PARTITION_BATCH_SIZE;
    private int moveThreads = DEFAULT_MOVE_THREADS;
    private String codec;
    private long targetFileSizeBytes;
    private long maxRowsPerFile = Long.MAX_VALUE;
    private int maxOpenFiles = 32;
    private long maxBufferedBytes = StagingWriterConfig.DEFAULT_MAX_BUFFERED_BYTES;
    private boolean clusterPastOpenFiles = true;
    private MetastoreClientFactory clientFactory = MetastoreClientFactory.RETRYING;

    private Builder() {}

    /** {@code thrift://host:port}; without it, {@code hive.metastore.uris} of the Hadoop configuration. */
    public Builder metastoreUri(String uri) {
      check(uri != null && uri.startsWith("thrift://"), "Invalid metastore URI: '%s' (use thrift://host:port)",
          uri);
      this.metastoreUri = uri;
      return this;
    }

    /** The Hadoop configuration of the table's storage and the metastore client (copied when the sink is built). */
    public Builder hadoopConf(Configuration conf) {
      this.hadoopConf = new Configuration(Objects.requireNonNull(conf, "hadoopConf"));
      return this;
    }

    /** One Hadoop or Hive setting, e.g. {@code fs.s3a.endpoint}; applied over {@link #hadoopConf}. */
    public Builder hadoopProperty(String key, String value) {
      check(key != null && !key.isBlank(), "Invalid Hadoop property name: '%s'", key);
      this.hadoopProperties.put(key, Objects.requireNonNull(value, "value of " + key));
      return this;
    }

    /** The table, as {@code database.table}. */
    public Builder table(String identifier) {
      check(identifier != null && identifier.indexOf('.') > 0 && identifier.indexOf('.') == identifier.lastIndexOf('.')
          && !identifier.endsWith("."), "Invalid table: '%s' (use database.table, e.g. db.events)", identifier);
      int dot = identifier.indexOf('.');
      this.database = identifier.substring(0, dot).toLowerCase(Locale.ROOT);
      this.tableName = identifier.substring(dot + 1).toLowerCase(Locale.ROOT);
      return this;
    }

    /**
     * Creates the table (and its database) if it does not exist: Parquet storage, the schema's columns but the
     * partition columns as data columns, the partition columns (identity partitions, in this order) as partition
     * keys. The schema is also the one records are staged with; an existing table must match it.
     */
    public Builder createTable(Schema stagedSchema, List<String> partitionColumns) {
      this.createSchema = Objects.requireNonNull(stagedSchema, "schema");
      this.partitionBy = List.copyOf(partitionColumns);
      for (String column : partitionBy) {
        check(stagedSchema.findField(column) != null, "Invalid partition column '%s': not in the schema %s",
            column, stagedSchema.columns().stream().map(f -> f.name()).toList());
      }
      return this;
    }

    /** Create the table as EXTERNAL (dropping it keeps the files); managed by default. */
    public Builder external(boolean isExternal) {
      this.external = isExternal;
      return this;
    }

    /** The location of a created table; the database's default location if not set. */
    public Builder location(String tableLocation) {
      check(tableLocation != null && !tableLocation.isBlank(), "Invalid table location: '%s'", tableLocation);
      this.location = tableLocation;
      return this;
    }

    /** Table parameters of a created table. */
    public Builder tableProperties(Map<String, String> properties) {
      this.tableProperties.putAll(properties);
      return this;
    }

    /**
     * The schema records are staged with, for an existing table: its columns and partition columns by name. If
     * neither this nor {@link #createTable} is set, the schema is derived from the table's (primitive) columns.
     */
    public Builder schema(Schema stagedSchema) {
      this.schema = Objects.requireNonNull(stagedSchema, "schema");
      return this;
    }

    /**
     * Whether columns of the staged schema that an existing table lacks are added to it before any data is
     * written ({@code ALTER TABLE ... ADD COLUMNS ... CASCADE} through the metastore: the table and its existing
     * partitions get them, after the other data columns; files written before read them as null). Off by default:
     * such a table is refused.
     */
    public Builder addNewColumns(boolean add) {
      this.addNewColumns = add;
      return this;
    }

    public Builder mode(WriteMode writeMode) {
      this.mode = Objects.requireNonNull(writeMode, "mode");
      return this;
    }

    /** Write an empty {@code _SUCCESS} file into every partition a checkpoint wrote to (default off). */
    public Builder successFiles(boolean write) {
      this.successFiles = write;
      return this;
    }

    /** Partitions per {@code add_partitions} (and {@code alter_partitions}) call; bounds very large checkpoints. */
    public Builder partitionBatchSize(int partitions) {
      check(partitions > 0, "Invalid partition batch size: %s (must be > 0)", partitions);
      this.partitionBatchSize = partitions;
      return this;
    }

    /** Files moved in parallel at commit. */
    public Builder moveThreads(int threads) {
      check(threads > 0 && threads <= 256, "Invalid move threads: %s (must be in [1, 256])", threads);
      this.moveThreads = threads;
      return this;
    }

    /**
     * The Parquet codec of data files ({@code snappy}, {@code gzip}, {@code zstd}, {@code lz4},
     * {@code uncompressed}). Default: the table's {@code parquet.compression} parameter, else {@code snappy}, which
     * every Hive version reads (Hive 2.x cannot read {@code zstd}).
     */
    public Builder codec(String parquetCodec) {
      this.codec = Objects.requireNonNull(parquetCodec, "codec");
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

    /** Test-only: how the sink gets metastore clients (e.g. one that counts calls). */
    Builder clientFactory(MetastoreClientFactory factory) {
      this.clientFactory = Objects.requireNonNull(factory, "clientFactory");
      return this;
    }

    public HiveSinkConfig build() {
      check(database != null, "Missing table: set table(\"database.table\")");
      check(metastoreUri != null || hadoopConf != null || hadoopProperties.containsKey("hive.metastore.uris"),
          "Missing metastore: set metastoreUri(\"thrift://host:port\") or hive.metastore.uris");
      check(createSchema == null || schema == null || createSchema.sameSchema(schema),
          "Conflicting schemas: createTable(..) and schema(..) differ; set one");
      check(location == null || createSchema != null, "A table location is only used with createTable(..)");
      return new HiveSinkConfig(this);
    }

    private static void check(boolean condition, String message, Object... args) {
      if (!condition) {
        throw new IllegalArgumentException(String.format(message, args));
      }
    }
  }
}
