package dev.lakecommit.iceberg;

import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsDeletes;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.InputConverter;
import dev.lakecommit.staging.InvalidRecordException;
import dev.lakecommit.staging.RecordValidator;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.io.WriteResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The writer of {@link CommitMode#UPSERT}: stages, per checkpoint, the new rows plus the deletes that make them
 * replace older rows of their keys, with Iceberg's own writers ({@link UpsertTaskWriter}), and reports them as one
 * {@link StagingManifest} (data files and delete files). Files are named and placed like every staged file
 * ({@link StagingLayout}), so aborts and restarts clean them up by prefix.
 *
 * <p>Deletes of keys ({@link #delete}, a changelog's DELETE rows) go to the same writers in the same order as the
 * upserts, so a checkpoint that upserts and then deletes a key ends without it, one that deletes and then upserts
 * ends with the new row, and a checkpoint of deletes only is a manifest of delete files only.
 *
 * <p>A record whose key belongs to another writer fails: two writers adding the same key in one checkpoint would
 * both keep their row. Route records with {@link IcebergSink#keyRouter()}.
 *
 * @param <IN> input records
 */
final class UpsertWriter<IN> implements SinkWriter<IN, StagingManifest, StagingWriterState>, SupportsDeletes<IN> {
  private static final Logger LOG = LoggerFactory.getLogger(UpsertWriter.class);

  private final Table table;
  private final org.apache.iceberg.Schema schema;
  private final Optional<String> evolvedSchema;
  private final InputConverter<IN> converter;
  private final WriterContext context;
  private final UpsertKey key;
  private final KeyOwner owner;
  private final String router;
  private final RecordValidator validator;
  private final RecordValidator keyValidator;
  private final StagingLocations locations;
  private final Table stagingView;
  private final GenericFileWriterFactory writerFactory;
  private final long targetFileSize;
  private UpsertTaskWriter current;
  private long lastPrepared;
  private long recordNumber;
  private long deletedKeys;

  /**
   * What an upsert writer takes of its sink's configuration: the key columns (empty: the table's identifier fields),
   * the Parquet codec (null: the table's), the target file size (0: the table's), and which writer owns a key (null:
   * {@link UpsertKey#writerOf}, as {@link IcebergSink#keyRouter()} routes) with the router to name when a record
   * reached another writer.
   */
  record Settings(List<String> keyColumns, String codec, long targetFileSizeBytes, KeyOwner owner, String router) {
    static Settings of(IcebergSinkConfig config) {
      return new Settings(config.upsertKey, config.codec, config.targetFileSizeBytes, null,
          "IcebergSink.keyRouter() (for the standalone runtime: StandaloneJob.builder(..).router(sink.keyRouter()))");
    }
  }

  /** Which of {@code writers} writers owns the key of a row of the table schema. */
  @FunctionalInterface
  interface KeyOwner {
    int writerOf(Record row, int writers);
  }

  /** Writes rows of {@code schema}: the table's, or the table's evolved ({@code evolved}) in the commit. */
  UpsertWriter(Table table, org.apache.iceberg.Schema schema, boolean evolved, StagingLayout layout,
      IcebergSinkConfig config, InputConverter<IN> converter, WriterContext context) {
    this(table, schema, evolved, layout, Settings.of(config), converter, context);
  }

  UpsertWriter(Table table, org.apache.iceberg.Schema schema, boolean evolved, StagingLayout layout,
      Settings settings, InputConverter<IN> converter, WriterContext context) {
    this.table = table;
    this.schema = schema;
    this.evolvedSchema = evolved ? Optional.of(org.apache.iceberg.SchemaParser.toJson(schema)) : Optional.empty();
    this.converter = converter;
    this.context = context;
    this.key = UpsertKey.resolve(table, settings.keyColumns());
    this.owner = settings.owner() != null ? settings.owner() : key::writerOf;
    this.router = settings.router();
    this.validator = new RecordValidator(schema);
    this.keyValidator = new RecordValidator(key.keySchema());
    this.locations = new StagingLocations(layout, context);
    this.stagingView = locations.tableView(table);
    GenericFileWriterFactory.Builder factory = new GenericFileWriterFactory.Builder(stagingView)
        .dataSchema(schema)
        .dataFileFormat(FileFormat.PARQUET)
        .deleteFileFormat(FileFormat.PARQUET)
        .equalityFieldIds(key.fieldIds())
        .equalityDeleteRowSchema(key.keySchema());
    if (settings.codec() != null) {
      factory.writerProperties(Map.of(org.apache.iceberg.TableProperties.PARQUET_COMPRESSION, settings.codec(),
          org.apache.iceberg.TableProperties.DELETE_PARQUET_COMPRESSION, settings.codec()));
    }
    this.writerFactory = factory.build();
    this.targetFileSize = settings.targetFileSizeBytes() > 0 ? settings.targetFileSizeBytes()
        : org.apache.iceberg.util.PropertyUtil.propertyAsLong(table.properties(),
            org.apache.iceberg.TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
            org.apache.iceberg.TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT);
    this.lastPrepared = context.restoredCheckpointId();
    locations.nameAfter(lastPrepared + 1);
  }

  /**
   * @throws InvalidRecordException if the record does not fit the table schema (nothing of it was written)
   * @throws IllegalStateException if the record's key belongs to another writer (records not routed by key)
   */
  @Override
  public void write(IN input) throws IOException {
    long position = recordNumber++;
    Record record;
    try {
      record = converter.convert(input);
      validator.validate(record);
    } catch (InvalidRecordException e) {
      throw new InvalidRecordException(String.format(
          "Record %s of upsert writer %s (job %s, checkpoint after %s) does not fit the table schema: %s",
          position, context.writerIndex(), context.jobId(), lastPrepared, e.getMessage()), e.field(), e);
    }
    taskWriter(record, position).upsert(record);
  }

  /**
   * Deletes the row of the record's key; only the key columns of the record are read and checked.
   *
   * @throws InvalidRecordException if the record's key does not fit the key columns (nothing was written)
   * @throws IllegalStateException if the record's key belongs to another writer (records not routed by key)
   */
  @Override
  public void delete(IN input) throws IOException {
    long position = recordNumber++;
    Record record;
    try {
      record = converter.convert(input);
      keyValidator.validate(key.keyOf(record));
    } catch (InvalidRecordException e) {
      throw new InvalidRecordException(String.format(
          "Delete record %s of upsert writer %s (job %s, checkpoint after %s) has no valid key %s: %s", position,
          context.writerIndex(), context.jobId(), lastPrepared, key.columns(), e.getMessage()), e.field(), e);
    }
    taskWriter(record, position).delete(record);
    deletedKeys++;
  }

  /** The checkpoint's task writer, once the record's key is known to be this writer's. */
  private UpsertTaskWriter taskWriter(Record record, long position) {
    int writer = owner.writerOf(record, context.numberOfWriters());
    if (writer != context.writerIndex()) {
      throw new IllegalStateException(String.format(
          "Record %s with key %s reached upsert writer %s of %s of table %s, but its key belongs to writer %s: route"
              + " records by key with %s", position, key.keyOf(record), context.writerIndex(),
          context.numberOfWriters(), table.name(), writer, router));
    }
    if (current == null) {
      current = new UpsertTaskWriter(table.spec(), schema, key, writerFactory,
          OutputFileFactory.builderFor(stagingView, context.writerIndex(), context.attempt())
              .format(FileFormat.PARQUET).build(),
          table.io(), targetFileSize);
    }
    return current;
  }

  @Override
  public Optional<StagingManifest> prepareCommit(long checkpointId) throws IOException {
    if (checkpointId <= lastPrepared) {
      throw new IllegalArgumentException(String.format(
          "Invalid checkpoint id: %s (must be > the last prepared or restored checkpoint %s)", checkpointId,
          lastPrepared));
    }
    WriteResult result = current == null ? null : current.complete();
    current = null;
    lastPrepared = checkpointId;
    recordNumber = 0;
    long deleted = deletedKeys;
    deletedKeys = 0;
    locations.forget();
    locations.nameAfter(checkpointId + 1);
    if (result == null || (result.dataFiles().length == 0 && result.deleteFiles().length == 0)) {
      return Optional.empty();
    }
    Map<Integer, PartitionSpec> specs = table.specs();
    List<StagedFile> data = new ArrayList<>();
    for (DataFile file : result.dataFiles()) {
      data.add(StagedFile.of(file, specs.get(file.specId())));
    }
    List<StagedFile> deletes = new ArrayList<>();
    for (DeleteFile file : result.deleteFiles()) {
      deletes.add(StagedFile.of(file, specs.get(file.specId())));
    }
    StagingManifest manifest = new StagingManifest(context.jobId(), checkpointId, context.writerIndex(),
        context.attempt(), data, Optional.empty(), deletes, evolvedSchema);
    LOG.debug("Upsert writer {} of job {} prepared checkpoint {}: {} data files ({} rows), {} delete files ({} keys"
        + " deleted)", context.writerIndex(), context.jobId(), checkpointId, data.size(), manifest.recordCount(),
        deletes.size(), deleted);
    return Optional.of(manifest);
  }

  @Override
  public StagingWriterState snapshotState(long checkpointId) {
    return new StagingWriterState(context.writerIndex(), lastPrepared);
  }

  /** Deletes everything staged since the last prepared checkpoint; best effort, the rest is found by prefix. */
  @Override
  public void abortPrepare() {
    if (current != null) {
      try {
        current.abort();
      } catch (IOException | RuntimeException e) {
        LOG.warn("Could not abort the files of upsert writer {} (job {}); deleting them by name", context.writerIndex(),
            context.jobId(), e);
      }
      current = null;
    }
    int deleted = 0;
    for (String location : locations.created()) {
      try {
        table.io().deleteFile(location);
        deleted++;
      } catch (RuntimeException e) {
        LOG.debug("Could not delete {}: {}", location, e.toString());
      }
    }
    LOG.info("Upsert writer {} of job {} aborted the checkpoint after {}: deleted {} staged files",
        context.writerIndex(), context.jobId(), lastPrepared, deleted);
    locations.forget();
    recordNumber = 0;
    deletedKeys = 0;
  }

  /** Closes open files without reporting them: they remain as leftovers found by prefix. */
  @Override
  public void close() throws IOException {
    if (current != null) {
      try {
        current.close();
      } finally {
        current = null;
      }
    }
  }
}
