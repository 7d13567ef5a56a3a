package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.testing.AllTypes;
import dev.lakecommit.staging.testing.CountingFileIO;
import dev.lakecommit.staging.testing.OpenFileCounter;
import dev.lakecommit.staging.testing.ParquetFiles;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.stream.StreamSupport;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.apache.iceberg.parquet.ParquetUtil;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The staging writer's behaviour on one storage. Subclasses run it on local disk, S3 through S3FileIO and S3
 * through Hadoop S3A.
 */
abstract class StagingWriterContract {
  static final JobId JOB = JobId.of("job-7");
  /** Rows of an id, a partition number and a text: the bound tests' records. */
  static final Schema TEXT_ROWS =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.required(2, "p", Types.IntegerType.get()),
          Types.NestedField.required(3, "text", Types.StringType.get()));

  protected StagingLayout layout;

  /** The storage under test. */
  protected abstract FileIO io();

  /** A fresh directory of {@link #io()} for one test. */
  protected abstract String newRoot(String testName);

  /** Distinct partitions of the open-file bound test, and the bound. */
  protected abstract int fanoutPartitions();

  protected abstract int fanoutLimit();

  /** Multipart part size (and threshold) the S3 suites configure: the smallest S3 allows. */
  static final int MULTIPART_SIZE = 5 * 1024 * 1024;

  /** Checks that the object was uploaded in {@code parts} parts; local storage has nothing to check. */
  protected void assertUploadedInParts(String location, int parts) {}

  /** A {@code FileIO} on the same storage that counts open output files. */
  protected Counted countingIO() {
    CountingFileIO counting = new CountingFileIO(io());
    return new Counted(counting, counting.counter());
  }

  protected record Counted(FileIO io, OpenFileCounter counter) {}

  @BeforeEach
  void newLayout(TestInfo info) {
    layout = StagingLayout.under(newRoot(info.getTestMethod().orElseThrow().getName()));
  }

  StagingWriterConfig.Builder config(Schema schema) {
    return StagingWriterConfig.builder().schema(schema).io(io()).layout(layout);
  }

  static WriterContext context(int writer, int attempt, long restored) {
    return new WriterContext(JOB, writer, 4, attempt, restored);
  }

  List<String> listed(String prefix) {
    try {
      return StreamSupport.stream(((SupportsPrefixOperations) io()).listPrefix(prefix).spliterator(), false)
          .map(FileInfo::location)
          .toList();
    } catch (RuntimeException e) {
      return List.of(); // a prefix that was never written
    }
  }

  @Test
  void writesEveryTypeAndReadsItBackWithIcebergsReaderWithTheMetricsIcebergComputes() throws IOException {
    StagingWriterConfig config = config(AllTypes.SCHEMA).build();
    List<Record> rows = AllTypes.rows(0, 700);
    StagingManifest manifest;
    try (StagingWriter<Record> writer = StagingWriter.forRecords(config, context(1, 0, 0))) {
      for (Record row : rows) {
        writer.write(row);
      }
      manifest = writer.prepareCommit(1).orElseThrow();
    }

    assertThat(manifest.jobId()).isEqualTo(JOB);
    assertThat(manifest.checkpointId()).isEqualTo(1);
    assertThat(manifest.writerIndex()).isEqualTo(1);
    assertThat(manifest.files()).hasSize(1);
    StagedFile file = manifest.files().get(0);
    assertThat(file.path()).isEqualTo(layout.checkpointPrefix(JOB, 1) + "job-7-1-1-0-0.parquet");
    assertThat(file.recordCount()).isEqualTo(700);
    assertThat(file.fileSizeInBytes()).isEqualTo(io().newInputFile(file.path()).getLength());
    assertThat(ParquetFiles.read(io(), file.path(), AllTypes.SCHEMA)).containsExactlyElementsOf(rows);

    // Iceberg's writer records NaN counts and float/double bounds from the values it writes; its footer reader
    // cannot (Parquet statistics do not separate NaN), so floating-point columns are checked against the data.
    Set<Integer> floating = Set.of(6, 7, 18);
    Metrics footer = ParquetUtil.fileMetrics(io().newInputFile(file.path()), config.metricsConfig());
    ColumnMetrics staged = file.metrics();
    assertThat(staged.columnSizes()).isEqualTo(footer.columnSizes());
    assertThat(withoutKeys(staged.valueCounts(), floating)).isEqualTo(withoutKeys(footer.valueCounts(), floating));
    assertThat(withoutKeys(staged.nullValueCounts(), floating))
        .isEqualTo(withoutKeys(footer.nullValueCounts(), floating));
    assertThat(withoutKeys(staged.lowerBounds(), floating)).isEqualTo(withoutKeys(footer.lowerBounds(), floating));
    assertThat(withoutKeys(staged.upperBounds(), floating)).isEqualTo(withoutKeys(footer.upperBounds(), floating));
    assertFloatingMetrics(staged, 6, Types.DoubleType.get(), rows.stream().map(r -> r.getField("d")).toList());
    assertFloatingMetrics(staged, 7, Types.FloatType.get(), rows.stream().map(r -> r.getField("f")).toList());
    assertFloatingMetrics(
        staged, 18, Types.DoubleType.get(),
        rows.stream().filter(r -> r.getField("point") != null)
            .map(r -> ((Record) r.getField("point")).getField("x")).toList());
    assertThat(staged.valueCounts()).containsEntry(1, 700L);
    assertThat(staged.nullValueCounts().get(2)).isPositive();
    assertThat(staged.nanValueCounts().get(6)).isPositive();
    assertThat(staged.lowerBounds()).containsKeys(1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 18);
    assertThat(file.splitOffsets()).isNotEmpty();
  }

  @Test
  void fansOutByPartitionAndEveryFileHoldsOnlyItsPartition() throws IOException {
    PartitionSpec spec =
        PartitionSpec.builderFor(AllTypes.SCHEMA).identity("flag").bucket("id", 2).day("tstz").build();
    StagingWriterConfig config = config(AllTypes.SCHEMA).spec(spec).build();
    StagingManifest manifest;
    try (StagingWriter<Record> writer = StagingWriter.forRecords(config, context(0, 0, 0))) {
      for (Record row : AllTypes.rows(0, 150)) {
        writer.write(row);
      }
      manifest = writer.prepareCommit(1).orElseThrow();
    }
    assertThat(manifest.recordCount()).isEqualTo(150);
    Set<String> paths = new HashSet<>();
    PartitionKey key = new PartitionKey(spec, AllTypes.SCHEMA);
    InternalRecordWrapper wrapper = new InternalRecordWrapper(AllTypes.SCHEMA.asStruct());
    for (StagedFile file : manifest.files()) {
      assertThat(paths.add(file.partitionPath())).as("one file per partition").isTrue();
      assertThat(file.partitionPath()).matches("flag=(true|false|null)/id_bucket=[01]/tstz_day=(2024-01-\\d\\d|null)");
      assertThat(file.path()).startsWith(layout.checkpointPrefix(JOB, 1) + file.partitionPath() + "/");
      List<Record> rows = ParquetFiles.read(io(), file.path(), AllTypes.SCHEMA);
      assertThat(rows).hasSize((int) file.recordCount());
      for (Record row : rows) {
        key.partition(wrapper.wrap(row));
        assertThat(spec.partitionToPath(key)).isEqualTo(file.partitionPath());
        assertThat(spec.partitionToPath(file.partition(spec))).isEqualTo(file.partitionPath());
      }
    }
    assertThat(paths.size()).isGreaterThan(8);
  }

  @Test
  void rollsAtMaxRowsAtTargetSizeAndAtEveryCheckpoint() throws IOException {
    StagingWriterConfig byRows = config(AllTypes.SCHEMA).maxRowsPerFile(100).build();
    try (StagingWriter<Record> writer = StagingWriter.forRecords(byRows, context(0, 0, 0))) {
      AllTypes.rows(0, 250).forEach(row -> write(writer, row));
      StagingManifest manifest = writer.prepareCommit(1).orElseThrow();
      assertThat(manifest.files()).extracting(StagedFile::recordCount).containsExactly(100L, 100L, 50L);
      assertThat(manifest.files()).extracting(StagedFile::fileName)
          .containsExactly("job-7-1-0-0-0.parquet", "job-7-1-0-0-1.parquet", "job-7-1-0-0-2.parquet");
      assertThat(writer.prepareCommit(2)).as("nothing written since checkpoint 1").isEmpty();
    }

    // A small row group lets the file length grow past the target while rows are written.
    StagingWriterConfig bySize =
        config(AllTypes.SCHEMA).targetFileSizeBytes(16 * 1024).rowGroupSizeBytes(4 * 1024).build();
    try (StagingWriter<Record> writer = StagingWriter.forRecords(bySize, context(1, 0, 0))) {
      AllTypes.rows(0, 3000).forEach(row -> write(writer, row));
      StagingManifest manifest = writer.prepareCommit(1).orElseThrow();
      assertThat(manifest.files().size()).isGreaterThan(2);
      assertThat(manifest.recordCount()).isEqualTo(3000);
      for (StagedFile file : manifest.files().subList(0, manifest.files().size() - 1)) {
        assertThat(file.fileSizeInBytes()).isGreaterThanOrEqualTo(16 * 1024);
      }
    }
  }

  @Test
  void boundsOpenFilesPerWriterAndReportsFilesClosedEarly() throws IOException {
    Schema schema =
        new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.required(2, "p", Types.IntegerType.get()));
    Counted counting = countingIO();
    StagingWriterConfig config =
        config(schema)
            .io(counting.io())
            .spec(PartitionSpec.builderFor(schema).identity("p").build())
            .maxOpenFiles(fanoutLimit())
            .rowGroupSizeBytes(64 * 1024)
            .codec("uncompressed")
            .build();
    int partitions = fanoutPartitions();
    Record template = GenericRecord.create(schema);
    try (StagingWriter<Record> writer = StagingWriter.forRecords(config, context(2, 0, 0))) {
      for (int p = 0; p < partitions; p++) {
        Record row = template.copy();
        row.setField("id", (long) p);
        row.setField("p", p);
        writer.write(row);
        assertThat(writer.openFileCount()).isLessThanOrEqualTo(fanoutLimit());
      }
      // The first partitions come back after they were closed: a new file, not a reopened one.
      for (int p = 0; p < 3; p++) {
        Record row = template.copy();
        row.setField("id", (long) partitions + p);
        row.setField("p", p);
        writer.write(row);
      }
      // counted (and past a number of them, a warning says the files stay small)
      assertThat(writer.filesReopenedAfterLimit()).isEqualTo(3);
      StagingManifest manifest = writer.prepareCommit(1).orElseThrow();
      assertThat(manifest.files()).hasSize(partitions + 3);
      assertThat(manifest.recordCount()).isEqualTo(partitions + 3);
      assertThat(manifest.files().stream().map(StagedFile::path).distinct().count()).isEqualTo(partitions + 3);

      // A partition closed for the limit in an earlier checkpoint that comes back is counted too: a writer that
      // closes a file every few records may not get through its partitions within one checkpoint.
      Record row = template.copy();
      row.setField("id", (long) partitions + 3);
      row.setField("p", 3);
      writer.write(row);
      assertThat(writer.filesReopenedAfterLimit()).isEqualTo(4);
      assertThat(writer.prepareCommit(2).orElseThrow().files()).hasSize(1);
    }
    assertThat(counting.counter().maxOpen()).isEqualTo(fanoutLimit());
    assertThat(counting.counter().openedTotal()).isEqualTo(partitions + 4);
    assertThat(counting.counter().open()).isZero();
  }

  @Test
  void closesTheLargestOpenFileWhenTheOpenFilesBufferMoreThanTheBound() throws IOException {
    Schema schema = TEXT_ROWS;
    PartitionSpec spec = PartitionSpec.builderFor(schema).identity("p").build();
    long bound = 256 * 1024;
    int partitions = 8;
    int rows = 8000;
    // A record is under 300 bytes; the bound is checked every 256 records, so it holds within 256 records' bytes.
    long slack = 256 * 300;
    Random random = new Random(20261203L);
    List<Record> records = new ArrayList<>();
    Record template = GenericRecord.create(schema);
    for (int i = 0; i < rows; i++) {
      Record row = template.copy();
      row.setField("id", (long) i);
      row.setField("p", random.nextInt(partitions));
      StringBuilder text = new StringBuilder();
      for (int c = 0; c < 200; c++) {
        text.append((char) ('a' + random.nextInt(26)));
      }
      row.setField("text", text.toString());
      records.add(row);
    }

    // Without the bound (the default is far above what these rows buffer) nothing is closed and the buffers grow.
    StagingWriterConfig.Builder unbounded = config(schema).spec(spec).codec("uncompressed");
    try (StagingWriter<Record> writer = StagingWriter.forRecords(unbounded.build(), context(0, 0, 0))) {
      long most = 0;
      for (Record row : records) {
        writer.write(row);
        most = Math.max(most, writer.bufferedBytes());
      }
      assertThat(most).isGreaterThan(bound + slack);
      assertThat(writer.filesClosedForMemory()).isZero();
      assertThat(writer.prepareCommit(1).orElseThrow().files()).hasSize(partitions);
    }

    StagingWriterConfig bounded = config(schema).spec(spec).codec("uncompressed").maxBufferedBytes(bound).build();
    try (StagingWriter<Record> writer = StagingWriter.forRecords(bounded, context(1, 0, 0))) {
      for (Record row : records) {
        writer.write(row);
        assertThat(writer.bufferedBytes()).isLessThanOrEqualTo(bound + slack);
      }
      assertThat(writer.filesClosedForMemory()).isPositive();
      StagingManifest manifest = writer.prepareCommit(1).orElseThrow();
      assertThat(manifest.files().size()).isEqualTo(partitions + writer.filesClosedForMemory());
      assertThat(manifest.recordCount()).isEqualTo(rows);
      assertThat(readByIdOnePartitionPerFile(manifest, schema).values()).containsExactlyElementsOf(records);

      // A checkpoint that fails after early closes leaves nothing behind: the closed files are its staged files.
      records.forEach(row -> write(writer, row));
      assertThat(writer.filesClosedForMemory()).isGreaterThan(manifest.files().size() - partitions);
      assertThat(listed(layout.checkpointPrefix(JOB, 2))).isNotEmpty();
      writer.abortPrepare();
      assertThat(listed(layout.checkpointPrefix(JOB, 2))).isEmpty();
      for (StagedFile file : manifest.files()) {
        assertThat(ParquetFiles.read(io(), file.path(), schema)).hasSize((int) file.recordCount());
      }
    }
  }

  @Test
  void abortPrepareDeletesEverythingStagedSinceTheLastCheckpoint() throws IOException {
    StagingWriterConfig config = config(AllTypes.SCHEMA).maxRowsPerFile(40).build();
    try (StagingWriter<Record> writer = StagingWriter.forRecords(config, context(0, 0, 0))) {
      AllTypes.rows(0, 50).forEach(row -> write(writer, row));
      StagingManifest first = writer.prepareCommit(1).orElseThrow();

      AllTypes.rows(50, 150).forEach(row -> write(writer, row)); // two closed files and one open
      // Two files rolled and closed; the third may still be buffered in memory, not yet created.
      assertThat(listed(layout.checkpointPrefix(JOB, 2))).hasSizeBetween(2, 3);
      writer.abortPrepare();
      assertThat(listed(layout.checkpointPrefix(JOB, 2))).isEmpty();
      for (StagedFile file : first.files()) {
        assertThat(io().newInputFile(file.path()).exists()).as("reported in checkpoint 1").isTrue();
      }

      AllTypes.rows(150, 160).forEach(row -> write(writer, row));
      StagingManifest next = writer.prepareCommit(3).orElseThrow();
      assertThat(next.files()).hasSize(1);
      // Named after checkpoint 2 (the last prepared + 1), continuing the sequence: no name is reused.
      assertThat(next.files().get(0).fileName()).isEqualTo("job-7-2-0-0-3.parquet");
      assertThat(ParquetFiles.read(io(), next.files().get(0).path(), AllTypes.SCHEMA))
          .containsExactlyElementsOf(AllTypes.rows(150, 160));
    }
  }

  @Test
  void namesFilesAfterTheRestoredCheckpointThenAfterTheLastPreparedOne() throws IOException {
    StagingWriterConfig config = config(AllTypes.SCHEMA).build();
    try (StagingWriter<Record> writer = StagingWriter.forRecords(config, context(3, 2, 41))) {
      assertThatThrownBy(() -> writer.prepareCommit(41))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("41");
      writer.write(AllTypes.row(1));
      StagingManifest at45 = writer.prepareCommit(45).orElseThrow();
      assertThat(at45.files().get(0).path())
          .isEqualTo(layout.checkpointPrefix(JOB, 42) + "job-7-42-3-2-0.parquet");
      assertThat(at45.attempt()).isEqualTo(2);
      writer.write(AllTypes.row(2));
      StagingManifest at47 = writer.prepareCommit(47).orElseThrow();
      assertThat(at47.files().get(0).path())
          .isEqualTo(layout.checkpointPrefix(JOB, 46) + "job-7-46-3-2-0.parquet");
      assertThat(writer.snapshotState(47)).isEqualTo(new StagingWriterState(3, 47));
    }
  }

  @Test
  void cleanerDeletesStagedFilesAboveTheGivenCheckpointOnly() throws IOException {
    StagingWriterConfig config = config(AllTypes.SCHEMA).maxRowsPerFile(10).build();
    List<StagingManifest> manifests = new ArrayList<>();
    try (StagingWriter<Record> writer = StagingWriter.forRecords(config, context(0, 0, 0))) {
      for (int checkpoint = 1; checkpoint <= 3; checkpoint++) {
        AllTypes.rows(checkpoint * 100, checkpoint * 100 + 25).forEach(row -> write(writer, row));
        manifests.add(writer.prepareCommit(checkpoint).orElseThrow());
      }
      AllTypes.rows(900, 905).forEach(row -> write(writer, row)); // open, never prepared (a crash)
    }
    StagingLayout otherJobLayout = layout;
    try (StagingWriter<Record> other =
        StagingWriter.forRecords(config, new WriterContext(JobId.of("job-8"), 0, 1, 0, 0))) {
      other.write(AllTypes.row(1));
      other.prepareCommit(2);
    }

    StagingCleaner cleaner = new StagingCleaner(io(), layout);
    assertThat(cleaner.deleteStagedAfter(JOB, 1)).isEqualTo(3 + 3 + 1);
    assertThat(listed(layout.jobPrefix(JOB)))
        .containsExactlyInAnyOrderElementsOf(
            manifests.get(0).files().stream().map(StagedFile::path).map(this::listedForm).toList());
    assertThat(listed(otherJobLayout.jobPrefix(JobId.of("job-8")))).hasSize(1);
    assertThat(cleaner.deleteStagedAfter(JOB, 1)).as("idempotent").isZero();
    assertThat(cleaner.deleteStagedAfter(JobId.of("never-ran"), 0)).isZero();
  }

  private static <V> Map<Integer, V> withoutKeys(Map<Integer, V> map, Set<Integer> keys) {
    Map<Integer, V> copy = new TreeMap<>(map == null ? Map.of() : map);
    copy.keySet().removeAll(keys);
    return copy;
  }

  /** Value, null and NaN counts and NaN-free bounds of a floating-point column, from the values written. */
  private static void assertFloatingMetrics(ColumnMetrics metrics, int id, Type type, List<Object> values) {
    long nulls = values.stream().filter(v -> v == null).count();
    List<Double> numbers = values.stream().filter(v -> v != null).map(v -> ((Number) v).doubleValue()).toList();
    long nans = numbers.stream().filter(d -> d.isNaN()).count();
    double min = numbers.stream().filter(d -> !d.isNaN()).mapToDouble(d -> d).min().orElseThrow();
    double max = numbers.stream().filter(d -> !d.isNaN()).mapToDouble(d -> d).max().orElseThrow();
    assertThat(metrics.valueCounts()).as("values of %s", id).containsEntry(id, (long) values.size());
    assertThat(metrics.nullValueCounts()).as("nulls of %s", id).containsEntry(id, nulls);
    assertThat(metrics.nanValueCounts()).as("NaNs of %s", id).containsEntry(id, nans);
    Object lower = type.typeId() == Type.TypeID.FLOAT ? (Object) (float) min : (Object) min;
    Object upper = type.typeId() == Type.TypeID.FLOAT ? (Object) (float) max : (Object) max;
    assertThat(metrics.lowerBounds().get(id)).isEqualTo(Conversions.toByteBuffer(type, lower));
    assertThat(metrics.upperBounds().get(id)).isEqualTo(Conversions.toByteBuffer(type, upper));
  }

  @Test
  void epochAwareCleanerDeletesOnlyTheGivenRunsFiles() throws IOException {
    StagingWriterConfig config = config(AllTypes.SCHEMA).build();
    StagedFile legacy;
    StagedFile older;
    StagedFile own;
    StagedFile newer;
    try (StagingWriter<Record> w = StagingWriter.forRecords(config, context(0, 0, 1))) {
      w.write(AllTypes.row(1));
      legacy = w.prepareCommit(2).orElseThrow().files().get(0); // a name without epoch
    }
    try (StagingWriter<Record> w = StagingWriter.forRecords(config, new WriterContext(JOB, 0, 4, 0, 1, 3))) {
      w.write(AllTypes.row(2));
      older = w.prepareCommit(2).orElseThrow().files().get(0);
    }
    try (StagingWriter<Record> w = StagingWriter.forRecords(config, new WriterContext(JOB, 0, 4, 0, 1, 4))) {
      w.write(AllTypes.row(3));
      own = w.prepareCommit(2).orElseThrow().files().get(0);
    }
    try (StagingWriter<Record> w = StagingWriter.forRecords(config, new WriterContext(JOB, 0, 4, 0, 1, 5))) {
      w.write(AllTypes.row(4));
      newer = w.prepareCommit(2).orElseThrow().files().get(0);
    }
    assertThat(List.of(legacy, older, own, newer)).extracting(StagedFile::path).doesNotHaveDuplicates();
    assertThat(layout.epochOf(JOB, legacy.path())).hasValue(0);
    assertThat(layout.epochOf(JOB, older.path())).hasValue(3);
    assertThat(layout.attemptOf(JOB, older.path())).hasValue(0);
    assertThat(layout.epochOf(JOB, newer.path())).hasValue(5);

    StagingCleaner cleaner = new StagingCleaner(io(), layout);
    assertThat(cleaner.deleteStaged(JOB, 1, 4, 4)).as("own epoch only").isEqualTo(1);
    assertThat(io().newInputFile(own.path()).exists()).isFalse();
    assertThat(io().newInputFile(older.path()).exists()).isTrue();
    assertThat(cleaner.deleteStaged(JOB, 1, 0, 4)).as("older epochs and names without epoch").isEqualTo(2);
    assertThat(io().newInputFile(legacy.path()).exists()).isFalse();
    assertThat(io().newInputFile(older.path()).exists()).isFalse();
    assertThat(io().newInputFile(newer.path()).exists()).as("a newer run's file").isTrue();
    assertThat(cleaner.deleteStaged(JOB, 2, 0, 5)).as("nothing above checkpoint 2").isZero();
  }

  @Test
  void earlierAttemptsCleanerDeletesOnlyTheRunsFailedAttemptsAboveTheCheckpoint() throws IOException {
    StagingWriterConfig config = config(AllTypes.SCHEMA).build();
    // run epoch 4: attempt 0 staged for checkpoints 2 and 3, then failed over to checkpoint 2; attempt 1 stages
    // for checkpoint 3 again; run epoch 3 (fenced) also left a file for checkpoint 3
    StagedFile failedAtBound = staged(config, new WriterContext(JOB, 0, 2, 0, 1, 4), 2, 1);
    StagedFile failedAbove = staged(config, new WriterContext(JOB, 0, 2, 0, 2, 4), 3, 2);
    StagedFile live = staged(config, new WriterContext(JOB, 0, 2, 1, 2, 4), 3, 3);
    StagedFile otherRun = staged(config, new WriterContext(JOB, 1, 2, 0, 2, 3), 3, 4);
    assertThat(layout.checkpointOf(JOB, failedAbove.path())).hasValue(3);
    assertThat(layout.attemptOf(JOB, live.path())).hasValue(1);

    StagingCleaner cleaner = new StagingCleaner(io(), layout);
    assertThat(cleaner.listStagedOfEarlierAttempts(JOB, 2, 4, 1)).hasSize(1).allMatch(l -> l.endsWith(
        failedAbove.path().substring(failedAbove.path().lastIndexOf('/'))));
    assertThat(cleaner.deleteStagedOfEarlierAttempts(JOB, 2, 4, 1)).isEqualTo(1);
    assertThat(io().newInputFile(failedAbove.path()).exists()).isFalse();
    assertThat(io().newInputFile(failedAtBound.path()).exists()).as("at the bound: a restored commit may need it")
        .isTrue();
    assertThat(io().newInputFile(live.path()).exists()).as("the live attempt's file").isTrue();
    assertThat(io().newInputFile(otherRun.path()).exists()).as("another run's file").isTrue();
    assertThat(cleaner.deleteStagedOfEarlierAttempts(JOB, 2, 4, 1)).as("idempotent").isZero();
  }

  private static StagedFile staged(StagingWriterConfig config, WriterContext context, long checkpointId, int row)
      throws IOException {
    try (StagingWriter<Record> w = StagingWriter.forRecords(config, context)) {
      w.write(AllTypes.row(row));
      return w.prepareCommit(checkpointId).orElseThrow().files().get(0);
    }
  }

  /** How a listing names a location this test wrote (a Hadoop listing of a local path adds the scheme). */
  protected String listedForm(String location) {
    return location;
  }

  @Test
  void badRecordsFailAloneNamingFieldAndPositionAndStagedFilesStayConsistent() throws IOException {
    StagingWriterConfig config = config(AllTypes.SCHEMA).build();
    try (StagingWriter<Record> writer = StagingWriter.forRecords(config, context(1, 0, 0))) {
      AllTypes.rows(0, 10).forEach(row -> write(writer, row));

      Record missing = AllTypes.row(10);
      missing.setField("id", null);
      assertThatThrownBy(() -> writer.write(missing))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("Record 10 of writer 1")
          .hasMessageContaining("field 'id'")
          .hasMessageContaining("required");

      Record wrongType = AllTypes.row(11);
      wrongType.setField("i", "not an int");
      assertThatThrownBy(() -> writer.write(wrongType))
          .hasMessageContaining("Record 11 of writer 1")
          .hasMessageContaining("field 'i'")
          .hasMessageContaining("java.lang.String");

      Record overflow = AllTypes.row(12);
      overflow.setField("dec", new BigDecimal("12345678.90"));
      assertThatThrownBy(() -> writer.write(overflow))
          .hasMessageContaining("Record 12 of writer 1")
          .hasMessageContaining("field 'dec'")
          .hasMessageContaining("overflows decimal(9, 2)");

      Record nested = AllTypes.row(13);
      Record point = GenericRecord.create(AllTypes.SCHEMA.findType("point").asStructType());
      nested.setField("point", point);
      assertThatThrownBy(() -> writer.write(nested))
          .isInstanceOf(InvalidRecordException.class)
          .hasMessageContaining("field 'point.x'")
          .extracting(e -> ((InvalidRecordException) e).field())
          .isEqualTo("point.x");

      AllTypes.rows(14, 30).forEach(row -> write(writer, row));
      StagingManifest manifest = writer.prepareCommit(1).orElseThrow();
      List<Record> expected = new ArrayList<>(AllTypes.rows(0, 10));
      expected.addAll(AllTypes.rows(14, 30));
      assertThat(manifest.recordCount()).isEqualTo(26);
      assertThat(ParquetFiles.read(io(), manifest.files().get(0).path(), AllTypes.SCHEMA))
          .containsExactlyElementsOf(expected);
    }
  }

  @Test
  void codecIsConfigurableWithZstdByDefault() throws IOException {
    for (String codec : new String[] {null, "snappy", "uncompressed", "gzip"}) {
      StagingWriterConfig.Builder builder = config(AllTypes.SCHEMA).pageSizeBytes(8 * 1024);
      if (codec != null) {
        builder.codec(codec);
      }
      try (StagingWriter<Record> writer =
          StagingWriter.forRecords(builder.build(), new WriterContext(JobId.of("codec-" + codec), 0, 1, 0, 0))) {
        AllTypes.rows(0, 50).forEach(row -> write(writer, row));
        StagedFile file = writer.prepareCommit(1).orElseThrow().files().get(0);
        CompressionCodecName written =
            ParquetFiles.footer(io(), file.path()).getBlocks().get(0).getColumns().get(0).getCodec();
        assertThat(written).isEqualTo(CompressionCodecName.valueOf(codec == null ? "ZSTD" : codec.toUpperCase()));
      }
    }
    assertThatThrownBy(() -> config(AllTypes.SCHEMA).codec("zip"))
        .hasMessageContaining("Invalid Parquet codec: 'zip'");
  }

  @Test
  void stagesAFileLargerThanTheMultipartPartSize() throws IOException {
    Schema schema =
        new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.required(2, "payload", Types.BinaryType.get()));
    List<Record> rows = new ArrayList<>();
    Random random = new Random(42);
    for (long i = 0; i < 100; i++) {
      byte[] payload = new byte[64 * 1024]; // random: incompressible, so the file really is ~6.4 MiB
      random.nextBytes(payload);
      Record row = GenericRecord.create(schema);
      row.setField("id", i);
      row.setField("payload", ByteBuffer.wrap(payload));
      rows.add(row);
    }
    StagingWriterConfig config = config(schema).codec("uncompressed").build();
    StagedFile file;
    try (StagingWriter<Record> writer = StagingWriter.forRecords(config, context(0, 0, 0))) {
      rows.forEach(row -> write(writer, row));
      file = writer.prepareCommit(1).orElseThrow().files().get(0);
    }
    assertThat(file.fileSizeInBytes()).isBetween((long) MULTIPART_SIZE + 1, 2L * MULTIPART_SIZE);
    assertThat(io().newInputFile(file.path()).getLength()).isEqualTo(file.fileSizeInBytes());
    assertThat(ParquetFiles.read(io(), file.path(), schema)).containsExactlyElementsOf(rows);
    assertUploadedInParts(file.path(), 2);
  }

  /**
   * The records of the manifest's files by their {@code id}, each read once; every file holds its record count and
   * one partition ({@code p}), as rolled and early-closed files do.
   */
  Map<Long, Record> readByIdOnePartitionPerFile(StagingManifest manifest, Schema schema) throws IOException {
    Map<Long, Record> read = new TreeMap<>();
    for (StagedFile file : manifest.files()) {
      List<Record> inFile = ParquetFiles.read(io(), file.path(), schema);
      assertThat(inFile).hasSize((int) file.recordCount());
      assertThat(inFile.stream().map(r -> r.getField("p")).distinct()).hasSize(1);
      inFile.forEach(r -> assertThat(read.put((Long) r.getField("id"), r)).as("read once").isNull());
    }
    return read;
  }

  static <T> void write(StagingWriter<T> writer, T row) {
    try {
      writer.write(row);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  static String unique(String name) {
    return name + "-" + UUID.randomUUID().toString().substring(0, 8);
  }
}
