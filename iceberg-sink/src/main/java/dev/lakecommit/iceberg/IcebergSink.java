package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.InputConverter;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingManifestSerializer;
import dev.lakecommit.staging.StagingWriter;
import dev.lakecommit.staging.StagingWriterConfig;
import dev.lakecommit.staging.StagingWriterState;
import dev.lakecommit.staging.StagingWriterStateSerializer;
import java.io.IOException;
import java.util.List;
import java.util.function.Function;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.data.Record;

/**
 * Writes to an Iceberg table, one snapshot per checkpoint, exactly once. Writers stage Parquet files straight
 * into the table's data location (invisible until a snapshot references them) under a per-job, per-checkpoint
 * prefix; the one aggregated committer adds all writers' files of a checkpoint in one snapshot whose summary and
 * the table's {@code lakecommit.committed.<job-id>} property say which checkpoint it is. In
 * {@link CommitMode#UPSERT} the writers also stage equality and position deletes, each checkpoint is one row
 * delta, and records must be routed by key ({@link #keyRouter()}).
 *
 * <p>Building the sink loads the catalog and the table, and creates or checks the table: bad configuration fails
 * here, before any data is written. With {@code addNewColumns} the table's schema is not changed here: the writers
 * write with the evolved schema ({@link #writeSchema()}) and the commit that adds their files evolves the table in
 * the same transaction.
 *
 * @param <IN> records written
 */
public final class IcebergSink<IN>
    implements Sink<IN, StagingManifest, StagingWriterState>,
        SupportsAggregatedCommitter<StagingManifest, IcebergCommittable>,
        SupportsTarget {

  private final IcebergSinkConfig config;
  private final Catalog catalog;
  private final Table table;
  /** What the writers write: the table's schema, or the table's evolved by the configured one. */
  private final Schema writeSchema;
  private final boolean evolves;
  private final StagingLayout layout;
  private final InputConverter<IN> converter;
  private final ThreadLocal<UpsertKey> routingKey;
  private boolean idempotencyCheck = true;
  private boolean epochCheck = true;

  private IcebergSink(IcebergSinkConfig config, Catalog catalog, Table table, Schema writeSchema,
      InputConverter<IN> converter) {
    this.config = config;
    this.catalog = catalog;
    this.table = table;
    this.writeSchema = writeSchema;
    this.evolves = !writeSchema.sameSchema(table.schema());
    this.layout = StagingLayout.under(stagingRoot(table));
    this.converter = converter;
    if (config.mode == CommitMode.UPSERT) {
      UpsertKey.resolve(table, config.upsertKey); // fails before any data is written
      this.routingKey = ThreadLocal.withInitial(() -> UpsertKey.resolve(table, config.upsertKey));
    } else {
      this.routingKey = null;
    }
  }

  /** Where the sink stages files of a table: {@code <data location>/lakecommit/<job-id>/ckpt-<id>/...}. */
  public static String stagingRoot(Table table) {
    return dataLocation(table) + "/lakecommit";
  }

  /** Where the table keeps data files: {@code write.data.path}, or {@code <location>/data}. */
  static String dataLocation(Table table) {
    String location = table.properties().getOrDefault(org.apache.iceberg.TableProperties.WRITE_DATA_LOCATION,
        table.location() + "/data");
    return org.apache.iceberg.util.LocationUtil.stripTrailingSlash(location);
  }

  /** A sink of Iceberg generic records of the configured schema (or of the table's, if none is configured). */
  public static IcebergSink<Record> forRecords(IcebergSinkConfig config) {
    Catalog catalog = TableSetup.loadCatalog(config);
    Table table = TableSetup.prepare(catalog, config);
    Schema write = TableSetup.writeSchema(table, config);
    Schema staged = config.createSchema != null ? config.createSchema : table.schema();
    return new IcebergSink<>(config, catalog, table, write, RecordProjection.of(staged, write));
  }

  /**
   * A sink of any input, converted by a function of the schema the writers write (for example Avro by field
   * name): the table's, or with {@code addNewColumns} the table's evolved by the configured one.
   */
  public static <IN> IcebergSink<IN> forInput(IcebergSinkConfig config,
      Function<Schema, InputConverter<IN>> converterForTableSchema) {
    Catalog catalog = TableSetup.loadCatalog(config);
    Table table = TableSetup.prepare(catalog, config);
    Schema write = TableSetup.writeSchema(table, config);
    return new IcebergSink<>(config, catalog, table, write, converterForTableSchema.apply(write));
  }

  /** The table as loaded when the sink was built. */
  public Table table() {
    return table;
  }

  /**
   * The schema the writers write: the table's, or (with {@code addNewColumns}) the table's with the configured
   * schema's columns added and types widened. The table itself evolves in the commit of the first checkpoint
   * whose files were written with it, in the same transaction as those files are added.
   */
  public Schema writeSchema() {
    return writeSchema;
  }

  public StagingLayout layout() {
    return layout;
  }

  /** Test-only: commit without the idempotency check, to show that the crash and race suites catch it. */
  IcebergSink<IN> idempotencyCheck(boolean enabled) {
    this.idempotencyCheck = enabled;
    return this;
  }

  /** Test-only: commit without the run epoch check, to show that the concurrent-run suites catch it. */
  IcebergSink<IN> epochCheck(boolean enabled) {
    this.epochCheck = enabled;
    return this;
  }

  /**
   * Chooses the writer of a record by its upsert key, for the runtime's router
   * ({@code StandaloneJob.builder(sink, source).router(sink.keyRouter())}): in {@link CommitMode#UPSERT} every
   * record of a key must reach the same writer, and the upsert writers refuse records of keys they do not own.
   * The choice depends only on the key's values, so it is the same after a restart. Thread-safe.
   *
   * @throws IllegalStateException if the sink is not in upsert mode
   */
  public java.util.function.ToIntBiFunction<IN, Integer> keyRouter() {
    if (routingKey == null) {
      throw new IllegalStateException("keyRouter() routes upserts by key; mode is " + config.mode);
    }
    return (input, writers) -> routingKey.get().writerOf(converter.convert(input), writers);
  }

  @Override
  public SinkWriter<IN, StagingManifest, StagingWriterState> createWriter(WriterContext context) {
    if (config.mode == CommitMode.UPSERT) {
      return new UpsertWriter<>(table, writeSchema, evolves, layout, config, converter, context);
    }
    return StagingWriter.create(writerConfig(), converter, context);
  }

  @Override
  public SinkWriter<IN, StagingManifest, StagingWriterState> restoreWriter(
      WriterContext context, List<StagingWriterState> states) {
    // Writers close every file at each checkpoint: a restored writer starts with nothing open.
    return createWriter(context);
  }

  private StagingWriterConfig writerConfig() {
    StagingWriterConfig.Builder builder = StagingWriterConfig.builder().forTable(table).layout(layout)
        .maxRowsPerFile(config.maxRowsPerFile).maxOpenFiles(config.maxOpenFiles)
        .maxBufferedBytes(config.maxBufferedBytes).clusterPastOpenFiles(config.clusterPastOpenFiles);
    if (evolves) {
      builder.evolvedSchema(writeSchema);
    }
    if (config.codec != null) {
      builder.codec(config.codec);
    }
    if (config.targetFileSizeBytes > 0) {
      builder.targetFileSizeBytes(config.targetFileSizeBytes);
    }
    int formatVersion = ((org.apache.iceberg.HasTableOperations) table).operations().current().formatVersion();
    // v1 manifests carry the committing snapshot's id, so they cannot be written ahead: v1 tables get files added.
    if (config.writeManifests && config.mode == CommitMode.APPEND && formatVersion >= 2) {
      builder.writeIcebergManifests(formatVersion, config.writerManifestMinFiles);
    }
    return builder.build();
  }

  @Override
  public SimpleVersionedSerializer<StagingManifest> commitInfoSerializer() {
    return new StagingManifestSerializer();
  }

  @Override
  public SimpleVersionedSerializer<StagingWriterState> writerStateSerializer() {
    return new StagingWriterStateSerializer();
  }

  @Override
  public SinkAggregatedCommitter<StagingManifest, IcebergCommittable> createAggregatedCommitter() {
    TableCommitter committer = new TableCommitter(catalog, config.table, config.mode, config.overwriteFilter,
        config.branch, config.metrics).idempotencyCheck(idempotencyCheck);
    return new IcebergAggregatedCommitter(committer, table, layout, config.mode == CommitMode.APPEND
        && config.coalescePendingAppends, epochCheck);
  }

  /** The table as a {@link CommitTarget}: run epochs, watermark lookup, identity and staged files. */
  @Override
  public CommitTarget openTarget() {
    return new IcebergTarget(catalog, config.table, config.branch, layout);
  }

  /**
   * Maintenance of the sink's table (compaction, snapshot expiry, orphan removal, manifest rewrite) on the sink's
   * catalog: usable until the sink is closed.
   */
  public IcebergMaintenance maintenance() {
    return IcebergMaintenance.of(catalog, config.table);
  }

  @Override
  public SimpleVersionedSerializer<IcebergCommittable> aggregatedCommitSerializer() {
    return new IcebergCommittable.Serializer();
  }

  /**
   * Closes the sink's catalog (a JDBC catalog's connection pool, a REST client). Writers, committers and targets
   * made by this sink must not be used after it.
   */
  @Override
  public void close() throws IOException {
    if (catalog instanceof java.io.Closeable closeable) {
      closeable.close();
    }
  }

  /** The commit id a committable of this sink carries. */
  static CommitId commitIdOf(IcebergCommittable committable) {
    return committable.commitId();
  }
}
