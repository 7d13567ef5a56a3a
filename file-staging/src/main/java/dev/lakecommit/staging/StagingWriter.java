package dev.lakecommit.staging;

import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.WriterContext;
import java.io.IOException;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestWriter;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.parquet.Parquet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stages records as Parquet files, written by Iceberg's Parquet writer (field ids, column metrics), fanned out by
 * the partition spec, rolled by rows and size, and reported per checkpoint as a {@link StagingManifest}.
 *
 * <p>Files are named by {@link StagingLayout} after the checkpoint that will report them: files opened before the
 * first {@code prepareCommit} after {@code context.restoredCheckpointId() + 1}, later ones after the last
 * prepared checkpoint + 1. Since checkpoint ids only grow, a file's name never exceeds the checkpoint that
 * reports it, and a file of a checkpoint that never completed is above the last complete one, where
 * {@link StagingCleaner} looks.
 *
 * <p>Every record is checked against the schema before anything of it is written, so a bad record fails alone
 * ({@link IllegalArgumentException} naming the field, the writer and the record's number in the checkpoint) and
 * the open files stay valid. An {@link IOException} leaves the writer unusable until {@link #abortPrepare}.
 *
 * @param <IN> input records
 */
public final class StagingWriter<IN> implements SinkWriter<IN, StagingManifest, StagingWriterState> {
  private static final Logger LOG = LoggerFactory.getLogger(StagingWriter.class);

  private final StagingWriterConfig config;
  private final InputConverter<IN> converter;
  private final WriterContext context;
  private final RecordValidator validator;
  private final OpenFiles files;
  /** Every location created since the last prepareCommit: what abortPrepare must delete. */
  private final Set<String> unreported = new LinkedHashSet<>();

  private long lastPrepared;
  private long namingCheckpoint;
  private int sequence;
  private long recordNumber;

  private StagingWriter(StagingWriterConfig config, InputConverter<IN> converter, WriterContext context,
      WriteBudget budget) {
    this.config = Objects.requireNonNull(config, "config");
    this.converter = Objects.requireNonNull(converter, "converter");
    this.context = Objects.requireNonNull(context, "context");
    this.validator = new RecordValidator(config.schema());
    this.files = new OpenFiles(config, this::open, Objects.requireNonNull(budget, "budget"));
    this.lastPrepared = context.restoredCheckpointId();
    this.namingCheckpoint = context.restoredCheckpointId() + 1;
  }

  /** A writer of {@code IN} records, converted to the schema by {@code converter}. */
  public static <IN> StagingWriter<IN> create(
      StagingWriterConfig config, InputConverter<IN> converter, WriterContext context) {
    return new StagingWriter<>(config, converter, context, WriteBudget.of(config));
  }

  /**
   * A writer of one of several tables that one writer writes, within the open files and buffered bytes of {@code
   * budget}, which the staging writers of all those tables share (the config's own bounds do not apply).
   */
  public static <IN> StagingWriter<IN> create(
      StagingWriterConfig config, InputConverter<IN> converter, WriterContext context, WriteBudget budget) {
    return new StagingWriter<>(config, converter, context, budget);
  }

  /** A writer of Iceberg generic records of the config's schema. */
  public static StagingWriter<Record> forRecords(StagingWriterConfig config, WriterContext context) {
    return create(config, InputConverter.records(), context);
  }

  /** A writer of Avro generic records, matched to the config's schema by field name. */
  public static StagingWriter<org.apache.avro.generic.GenericRecord> forAvro(
      StagingWriterConfig config, WriterContext context) {
    return create(config, InputConverter.avro(config.schema()), context);
  }

  /**
   * @throws IllegalArgumentException if the record does not fit the schema: names the field, the writer and the
   *     record's 0-based number among the records written since the last prepared checkpoint; nothing of the
   *     record was written
   */
  @Override
  public void write(IN input) throws IOException {
    long position = recordNumber++;
    Record record;
    try {
      record = converter.convert(input);
      validator.validate(record);
    } catch (InvalidRecordException e) {
      throw new InvalidRecordException(
          String.format(
              "Record %s of writer %s (job %s, checkpoint after %s) does not fit the table schema: %s",
              position, context.writerIndex(), context.jobId(), lastPrepared, e.getMessage()),
          e.field(),
          e);
    }
    try {
      files.write(record);
    } catch (Error e) {
      throw storageFailure(e);
    }
  }

  /**
   * Hadoop's local file system reports a failed write (a full disk) as an {@code FSError} wrapping the
   * {@code IOException}: a storage failure of the job, not a crash of the process.
   */
  private Error storageFailure(Error e) throws IOException {
    if (e.getCause() instanceof IOException io) {
      throw new IOException("Cannot write staged files: " + io.getMessage(), io);
    }
    return e;
  }

  /**
   * Closes every open file and reports all files staged since the last prepared checkpoint, with an Iceberg
   * manifest of them if configured and there are enough of them. Nothing becomes visible.
   *
   * @throws IllegalArgumentException if {@code checkpointId} is not above the last prepared checkpoint
   * @throws IOException if a file cannot be closed or the manifest written; call {@link #abortPrepare}
   */
  @Override
  public Optional<StagingManifest> prepareCommit(long checkpointId) throws IOException {
    if (checkpointId <= lastPrepared) {
      throw new IllegalArgumentException(
          String.format("Invalid checkpoint id: %s (must be > the last prepared or restored checkpoint %s)",
              checkpointId, lastPrepared));
    }
    try {
      files.closeAll();
    } catch (Error e) {
      throw storageFailure(e);
    }
    List<StagedFile> staged = files.drain();
    Optional<IcebergManifest> icebergManifest = Optional.empty();
    if (config.writesIcebergManifest(staged.size())) {
      icebergManifest = Optional.of(writeIcebergManifest(staged));
    }
    long namedAfter = namingCheckpoint;
    lastPrepared = checkpointId;
    namingCheckpoint = checkpointId + 1;
    sequence = 0;
    recordNumber = 0;
    unreported.clear();
    if (staged.isEmpty()) {
      return Optional.empty();
    }
    StagingManifest manifest =
        new StagingManifest(
            context.jobId(), checkpointId, context.writerIndex(), context.attempt(), staged, icebergManifest,
            List.of(), config.evolvedSchema());
    LOG.debug(
        "Writer {} of job {} prepared checkpoint {}: {} files, {} records, {} bytes (named after checkpoint {})",
        context.writerIndex(), context.jobId(), checkpointId, staged.size(), manifest.recordCount(),
        manifest.totalBytes(), namedAfter);
    return Optional.of(manifest);
  }

  @Override
  public StagingWriterState snapshotState(long checkpointId) {
    return new StagingWriterState(context.writerIndex(), lastPrepared);
  }

  /**
   * Closes the open files and deletes every file staged since the last prepared checkpoint, reported or not.
   * Names are not reused: the next file continues the sequence. Best effort; a file that cannot be deleted is
   * logged and left for {@link StagingCleaner}.
   */
  @Override
  public void abortPrepare() {
    files.abandon();
    int deleted = 0;
    for (String location : unreported) {
      try {
        config.io().deleteFile(location);
        deleted++;
      } catch (RuntimeException e) {
        LOG.warn("Could not delete staged file {} of writer {} (job {}); it is left for the staging cleaner",
            location, context.writerIndex(), context.jobId(), e);
      }
    }
    LOG.info("Writer {} of job {} aborted the checkpoint after {}: deleted {} of {} staged files",
        context.writerIndex(), context.jobId(), lastPrepared, deleted, unreported.size());
    unreported.clear();
    recordNumber = 0;
  }

  /** Closes open files without reporting or deleting them: they remain as leftovers found by prefix. */
  @Override
  public void close() throws IOException {
    try {
      files.dropHeld(); // unreported either way: not worth writing
      files.closeAll();
    } finally {
      files.abandon();
    }
  }

  /** Files currently open (for tests and metrics). */
  int openFileCount() {
    return files.openCount();
  }

  /** What the open files buffer, counted as the bound counts it. */
  long bufferedBytes() {
    return files.bufferedBytes();
  }

  /** Files closed because the open files buffered more than the bound, since this writer began. */
  long filesClosedForMemory() {
    return files.closedForMemory();
  }

  /** Files opened again for a partition whose file the open-file limit had closed. */
  long filesReopenedAfterLimit() {
    return files.reopenedAfterLimit();
  }

  /** Times held records were written out grouped by partition ({@link StagingWriterConfig#clusterPastOpenFiles}). */
  long heldRecordFlushes() {
    return files.heldFlushes();
  }

  private DataWriter<Record> open(PartitionKey partition) throws IOException {
    String partitionPath = config.partitionPath(partition);
    String location =
        config.layout().fileLocation(context, namingCheckpoint, partitionPath, sequence++, FileFormat.PARQUET);
    OutputFile out = config.io().newOutputFile(location);
    unreported.add(location);
    if (config.appenders() != null) {
      return new DataWriter<>(config.appenders().open(out), FileFormat.PARQUET, location, config.spec(), partition,
          null);
    }
    return Parquet.writeData(out)
        .schema(config.schema())
        .withSpec(config.spec())
        .withPartition(partition)
        .setAll(config.writeProperties())
        .metricsConfig(config.metricsConfig())
        .createWriterFunc(GenericParquetWriter::create)
        .build();
  }

  private IcebergManifest writeIcebergManifest(List<StagedFile> staged) throws IOException {
    String location =
        config.layout().manifestLocation(context, namingCheckpoint);
    unreported.add(location);
    // No snapshot id: the appending commit assigns it (and the sequence numbers) without rewriting the manifest.
    ManifestWriter<DataFile> writer =
        ManifestFiles.write(
            config.manifestFormatVersion(), config.spec(), config.io().newOutputFile(location), null);
    try (writer) {
      for (StagedFile file : staged) {
        writer.add(file.toDataFile(config.spec()));
      }
    }
    return IcebergManifest.of(writer.toManifestFile());
  }
}
