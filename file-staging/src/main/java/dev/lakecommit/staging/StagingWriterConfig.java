package dev.lakecommit.staging;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.iceberg.MetricsConfig;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.io.FileIO;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;

/**
 * How a {@link StagingWriter} writes: schema and partition spec, storage, layout, Parquet settings (Iceberg's own
 * {@code write.parquet.*} table properties), rolling and fan-out bounds. Immutable; build with {@link #builder}.
 * A config holds a {@code FileIO} and is meant to be created where the writers run.
 */
public final class StagingWriterConfig {
  /** Parquet codec when neither the table properties nor {@link Builder#codec} choose one. */
  public static final String DEFAULT_CODEC = "zstd";

  /** Open files per writer when not configured: enough for moderate fan-out, bounded memory. */
  public static final int DEFAULT_MAX_OPEN_FILES = 32;

  /**
   * Bytes a writer's open files may buffer when not configured ({@link Builder#maxBufferedBytes}): what Paimon's
   * {@code write-buffer-size} allows by default.
   */
  public static final long DEFAULT_MAX_BUFFERED_BYTES = 256L << 20;

  private final Schema schema;
  private final PartitionSpec spec;
  private final Map<String, String> writeProperties;
  private final MetricsConfig metricsConfig;
  private final FileIO io;
  private final StagingLayout layout;
  private final long targetFileSizeBytes;
  private final long maxRowsPerFile;
  private final int maxOpenFiles;
  private final long maxBufferedBytes;
  private final boolean clusterPastOpenFiles;
  private final long rowGroupSizeBytes;
  private final int manifestFormatVersion;
  private final int manifestMinFiles;
  private final StagedFileAppenders appenders;
  private final java.util.function.Function<org.apache.iceberg.StructLike, String> partitionPaths;
  private final Optional<String> evolvedSchema;

  private StagingWriterConfig(Builder builder) {
    this.schema = Objects.requireNonNull(builder.schema, "Missing schema: call schema(..) or forTable(..)");
    PartitionSpec partitioning = builder.spec == null ? PartitionSpec.unpartitioned() : builder.spec;
    if (builder.evolved && !partitioning.isUnpartitioned()) {
      // The table's spec, with the same id and fields, over the evolved schema (its source columns keep their ids).
      partitioning = partitioning.toUnbound().bind(schema);
    }
    this.spec = partitioning;
    this.evolvedSchema = builder.evolved ? Optional.of(SchemaParser.toJson(schema)) : Optional.empty();
    this.io = Objects.requireNonNull(builder.io, "Missing FileIO: call io(..) or forTable(..)");
    this.layout = Objects.requireNonNull(builder.layout, "Missing staging layout: call layout(..)");
    if (!spec.schema().sameSchema(schema) && !spec.isUnpartitioned()) {
      throw new IllegalArgumentException(
          String.format("Partition spec %s is not bound to the writer's schema", spec));
    }
    Map<String, String> props = new HashMap<>(builder.properties);
    props.putIfAbsent(TableProperties.PARQUET_COMPRESSION, DEFAULT_CODEC);
    this.writeProperties = Map.copyOf(props);
    this.metricsConfig = MetricsConfig.from(writeProperties, schema, SortOrder.unsorted());
    this.targetFileSizeBytes =
        builder.targetFileSizeBytes > 0
            ? builder.targetFileSizeBytes
            : Long.parseLong(
                writeProperties.getOrDefault(
                    TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
                    String.valueOf(TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT)));
    this.maxRowsPerFile = builder.maxRowsPerFile;
    this.maxOpenFiles = builder.maxOpenFiles;
    this.maxBufferedBytes = builder.maxBufferedBytes;
    this.clusterPastOpenFiles = builder.clusterPastOpenFiles;
    this.rowGroupSizeBytes = Long.parseLong(writeProperties.getOrDefault(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES,
        String.valueOf(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES_DEFAULT)));
    this.manifestFormatVersion = builder.manifestFormatVersion;
    this.manifestMinFiles = builder.manifestMinFiles;
    this.appenders = builder.appenders;
    this.partitionPaths = builder.partitionPaths;
  }

  public static Builder builder() {
    return new Builder();
  }

  public Schema schema() {
    return schema;
  }

  /** The schema as Iceberg JSON if it evolves the table's ({@link Builder#evolvedSchema}); manifests carry it. */
  public Optional<String> evolvedSchema() {
    return evolvedSchema;
  }

  public PartitionSpec spec() {
    return spec;
  }

  /** Table properties plus this config's Parquet settings, as passed to Iceberg's Parquet writer. */
  public Map<String, String> writeProperties() {
    return writeProperties;
  }

  public MetricsConfig metricsConfig() {
    return metricsConfig;
  }

  public FileIO io() {
    return io;
  }

  public StagingLayout layout() {
    return layout;
  }

  public long targetFileSizeBytes() {
    return targetFileSizeBytes;
  }

  public long maxRowsPerFile() {
    return maxRowsPerFile;
  }

  public int maxOpenFiles() {
    return maxOpenFiles;
  }

  /** The bytes a writer's open files may buffer before it closes the largest ({@link Builder#maxBufferedBytes}). */
  public long maxBufferedBytes() {
    return maxBufferedBytes;
  }

  /** Whether a writer may hold records to write them grouped by partition ({@link Builder#clusterPastOpenFiles}). */
  public boolean clusterPastOpenFiles() {
    return clusterPastOpenFiles;
  }

  /** The Parquet row-group size: at most this much of an open file is in memory, the rest is written out. */
  public long rowGroupSizeBytes() {
    return rowGroupSizeBytes;
  }

  /** The table format version of the Iceberg manifest each writer writes per checkpoint; 0 if none. */
  public int manifestFormatVersion() {
    return manifestFormatVersion;
  }

  /** The fewest files a writer must report at a checkpoint to write an Iceberg manifest of them. */
  public int manifestMinFiles() {
    return manifestMinFiles;
  }

  /** How data files are written: null for Iceberg's Parquet writer of the whole {@link #schema}. */
  public StagedFileAppenders appenders() {
    return appenders;
  }

  /** The directory path of a partition's staged files under a checkpoint's prefix; empty when unpartitioned. */
  public String partitionPath(org.apache.iceberg.StructLike partition) {
    if (spec().isUnpartitioned()) {
      return "";
    }
    return partitionPaths == null ? spec().partitionToPath(partition) : partitionPaths.apply(partition);
  }

  /** Whether a writer reporting {@code files} staged files at a checkpoint writes an Iceberg manifest of them. */
  public boolean writesIcebergManifest(int files) {
    return manifestFormatVersion > 0 && files > 0 && files >= manifestMinFiles;
  }

  /** Builder of {@link StagingWriterConfig}. */
  public static final class Builder {
    private Schema schema;
    private PartitionSpec spec;
    private final Map<String, String> properties = new HashMap<>();
    private FileIO io;
    private StagingLayout layout;
    private long targetFileSizeBytes;
    private long maxRowsPerFile = Long.MAX_VALUE;
    private int maxOpenFiles = DEFAULT_MAX_OPEN_FILES;
    private long maxBufferedBytes = DEFAULT_MAX_BUFFERED_BYTES;
    private boolean clusterPastOpenFiles = true;
    private int manifestFormatVersion;
    private int manifestMinFiles = 1;
    private StagedFileAppenders appenders;
    private java.util.function.Function<org.apache.iceberg.StructLike, String> partitionPaths;
    private boolean evolved;

    private Builder() {}

    /** Schema, spec, properties and {@code FileIO} of a table; the layout is still the sink's choice. */
    public Builder forTable(Table table) {
      Objects.requireNonNull(table, "table");
      this.schema = table.schema();
      this.evolved = false;
      this.spec = table.spec();
      this.io = table.io();
      this.properties.putAll(table.properties());
      return this;
    }

    public Builder schema(Schema newSchema) {
      this.schema = Objects.requireNonNull(newSchema, "schema");
      this.evolved = false;
      return this;
    }

    /**
     * Writes with {@code evolved} instead of the table's schema: the table's schema with columns added or types
     * widened, field ids as Iceberg's schema update assigns them. The spec (call {@link #forTable} first) is bound
     * to it, and every manifest carries it ({@link StagingManifest#evolvedSchema}), so that the commit that adds
     * the files evolves the table in the same transaction.
     */
    public Builder evolvedSchema(Schema evolved) {
      this.schema = Objects.requireNonNull(evolved, "evolved");
      this.evolved = true;
      return this;
    }

    public Builder spec(PartitionSpec newSpec) {
      this.spec = Objects.requireNonNull(newSpec, "spec");
      return this;
    }

    /** Table properties ({@code write.parquet.*}, {@code write.metadata.metrics.*}, target file size). */
    public Builder properties(Map<String, String> tableProperties) {
      this.properties.putAll(Objects.requireNonNull(tableProperties, "tableProperties"));
      return this;
    }

    /** The storage the files are written through. */
    public Builder io(FileIO fileIO) {
      this.io = Objects.requireNonNull(fileIO, "io");
      return this;
    }

    public Builder layout(StagingLayout stagingLayout) {
      this.layout = Objects.requireNonNull(stagingLayout, "layout");
      return this;
    }

    /** Parquet codec by Iceberg's name: {@code zstd} (default), {@code snappy}, {@code gzip}, {@code uncompressed}. */
    public Builder codec(String codec) {
      checkCodec(codec);
      properties.put(TableProperties.PARQUET_COMPRESSION, codec.toLowerCase(Locale.ROOT));
      return this;
    }

    /**
     * Checks a Parquet codec name, for callers that validate their options before anything is written.
     *
     * @throws IllegalArgumentException naming the codec and the ones there are
     */
    public static void checkCodec(String codec) {
      Objects.requireNonNull(codec, "codec");
      try {
        CompressionCodecName.valueOf(codec.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            String.format("Invalid Parquet codec: '%s' (use zstd, snappy, gzip, lz4 or uncompressed)", codec), e);
      }
    }

    /** Parquet row-group size: the bytes buffered in memory per open file before a row group is flushed. */
    public Builder rowGroupSizeBytes(long bytes) {
      checkPositive(bytes, "row-group size");
      properties.put(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES, String.valueOf(bytes));
      return this;
    }

    public Builder pageSizeBytes(long bytes) {
      checkPositive(bytes, "page size");
      properties.put(TableProperties.PARQUET_PAGE_SIZE_BYTES, String.valueOf(bytes));
      return this;
    }

    /** Roll to a new file once a file reaches about this size (checked every few hundred rows). */
    public Builder targetFileSizeBytes(long bytes) {
      checkPositive(bytes, "target file size");
      this.targetFileSizeBytes = bytes;
      return this;
    }

    /** Roll to a new file after this many rows. */
    public Builder maxRowsPerFile(long rows) {
      checkPositive(rows, "max rows per file");
      this.maxRowsPerFile = rows;
      return this;
    }

    /**
     * Files open at once per writer; when a new partition needs one more, the least recently used is closed (and
     * still reported at the checkpoint). Each open Parquet file buffers up to a row group in memory; {@link
     * #maxBufferedBytes} bounds the sum.
     */
    public Builder maxOpenFiles(int files) {
      checkPositive(files, "max open files");
      this.maxOpenFiles = files;
      return this;
    }

    /**
     * Bytes a writer's open files may buffer in memory together (default 256 MiB): when they hold more, the writer
     * closes the largest open file (reported at the checkpoint like any rolled file) and its partition's next
     * record opens a new one. Measured every 256 records from each open file's length, counted up to one row group
     * (Parquet writes a full row group out); the bound holds within 256 records. Parquet's dictionaries come on top
     * (an object and a buffer per distinct string value) and can take several times the bytes counted.
     */
    public Builder maxBufferedBytes(long bytes) {
      checkPositive(bytes, "max buffered bytes");
      this.maxBufferedBytes = bytes;
      return this;
    }

    /**
     * When a checkpoint writes more partitions than {@link #maxOpenFiles} in no order, the writer would close and
     * reopen files every few records. With this set, once it has reopened files for partitions it closed in the
     * same checkpoint, it holds the records of partitions without an open file in memory instead, and writes them
     * grouped by partition, one file per partition and flush, when they take half of {@link #maxBufferedBytes} and
     * at the checkpoint. Held records are copies (a caller may hand the writer one reused view). Default on; off
     * keeps closing and reopening files (and warns).
     */
    public Builder clusterPastOpenFiles(boolean cluster) {
      this.clusterPastOpenFiles = cluster;
      return this;
    }

    /**
     * Also write, at every checkpoint, one Iceberg manifest of the writer's files for a table of this format
     * version (2 or 3), and report it in the {@link StagingManifest}. Format v1 manifests carry a snapshot id in
     * every entry, so they cannot be written before the commit: add the files to v1 tables instead.
     */
    public Builder writeIcebergManifests(int formatVersion) {
      return writeIcebergManifests(formatVersion, 1);
    }

    /**
     * As {@link #writeIcebergManifests(int)}, but only at checkpoints where the writer reports at least
     * {@code minFiles} files; the committer adds the files of the others. A manifest of a handful of files costs
     * the commit one more file to write and list, and every later scan one more manifest to read, for little
     * saved work.
     */
    public Builder writeIcebergManifests(int formatVersion, int minFiles) {
      if (formatVersion < 2 || formatVersion > 3) {
        throw new IllegalArgumentException(
            String.format("Invalid table format version for writer manifests: %s (must be 2 or 3; on a v1 table "
                + "add the staged files instead)", formatVersion));
      }
      checkPositive(minFiles, "minimum files per writer manifest");
      this.manifestFormatVersion = formatVersion;
      this.manifestMinFiles = minFiles;
      return this;
    }

    /**
     * Writes data files with these appenders instead of Iceberg's Parquet writer (which writes every column of the
     * schema, with Iceberg's type mapping): for example files in another engine's conventions. Records are still
     * partitioned by the whole schema.
     */
    public Builder appenders(StagedFileAppenders fileAppenders) {
      this.appenders = Objects.requireNonNull(fileAppenders, "appenders");
      return this;
    }

    /**
     * Names each partition's directory under a checkpoint's prefix with {@code paths} instead of the spec's
     * {@code partitionToPath}: where a staged path must end in the partition directory a reader knows (Hive's
     * escaping, S3A's magic paths).
     */
    public Builder partitionPaths(java.util.function.Function<org.apache.iceberg.StructLike, String> paths) {
      this.partitionPaths = Objects.requireNonNull(paths, "paths");
      return this;
    }

    public StagingWriterConfig build() {
      return new StagingWriterConfig(this);
    }

    private static void checkPositive(long value, String what) {
      if (value <= 0) {
        throw new IllegalArgumentException(String.format("Invalid %s: %s (must be > 0)", what, value));
      }
    }
  }
}
