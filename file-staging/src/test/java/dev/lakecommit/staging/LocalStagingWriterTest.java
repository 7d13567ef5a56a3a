package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.staging.testing.AllTypes;
import dev.lakecommit.staging.testing.CountingLocalFileIO;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import dev.lakecommit.staging.testing.ParquetFiles;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.DateTimeUtil;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.ColumnIOFactory;
import org.apache.parquet.io.RecordReader;
import org.apache.parquet.schema.MessageType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The staging writer on local disk through HadoopFileIO, plus what only needs to be shown once. */
class LocalStagingWriterTest extends StagingWriterContract {
  private static FileIO io;

  @TempDir Path dir;

  @BeforeAll
  static void startIO() {
    io = new HadoopFileIO(FastLocalFileSystem.configuration());
  }

  @AfterAll
  static void closeIO() {
    io.close();
  }

  /**
   * 40 partitions in random order through 4 open files: without clustering the writer closes and reopens a file
   * every few records; with it, records of partitions without an open file are held (within half the buffer
   * bound) and written grouped, and every record lands exactly once, in a file of its own partition, also when a
   * checkpoint fails with records held.
   */
  @Test
  void heldRecordsOfMorePartitionsThanOpenFilesAreWrittenGroupedAndEveryRecordOnce() throws IOException {
    org.apache.iceberg.Schema schema = new org.apache.iceberg.Schema(
        org.apache.iceberg.types.Types.NestedField.required(1, "id", org.apache.iceberg.types.Types.LongType.get()),
        org.apache.iceberg.types.Types.NestedField.required(2, "p", org.apache.iceberg.types.Types.IntegerType.get()),
        org.apache.iceberg.types.Types.NestedField.optional(3, "s", org.apache.iceberg.types.Types.StringType.get()));
    org.apache.iceberg.PartitionSpec spec = org.apache.iceberg.PartitionSpec.builderFor(schema).identity("p").build();
    java.util.Random random = new java.util.Random(40);
    long bound = 256 * 1024;
    Map<Boolean, Double> filesPerRecord = new LinkedHashMap<>();
    for (boolean cluster : new boolean[] {false, true}) {
      int rows = cluster ? 3_000 : 1_000; // without clustering, ~9 of 10 records make a file
      StagingWriterConfig config = config(schema).spec(spec).maxOpenFiles(4).codec("uncompressed")
          .maxBufferedBytes(bound).clusterPastOpenFiles(cluster).build();
      try (StagingWriter<Record> writer = StagingWriter.forRecords(config, context(cluster ? 1 : 0, 0, 0))) {
        List<Record> records = new ArrayList<>();
        int files = 0;
        int committed = 0;
        // one object for every record, as a caller that hands the writer a view of a reused row: held ones are copied
        Record row = GenericRecord.create(schema);
        for (int checkpoint = 1; checkpoint <= (cluster ? 3 : 1); checkpoint++) {
          for (int i = 0; i < rows; i++) {
            row.setField("id", (long) checkpoint * rows + i);
            row.setField("p", random.nextInt(40));
            row.setField("s", "value " + i);
            writer.write(row);
            records.add(row.copy());
            assertThat(writer.openFileCount()).isLessThanOrEqualTo(4);
            assertThat(writer.bufferedBytes()).as("held and buffered").isLessThanOrEqualTo(bound + 64 * 1024);
          }
          if (checkpoint == 2) {
            // a checkpoint that fails with records held: nothing of it stays, nothing of it comes back
            assertThat(writer.bufferedBytes()).isPositive();
            writer.abortPrepare();
            assertThat(listed(layout.checkpointPrefix(JOB, 2))).isEmpty();
            records.clear();
            continue;
          }
          StagingManifest manifest = writer.prepareCommit(checkpoint).orElseThrow();
          assertThat(readByIdOnePartitionPerFile(manifest, schema).values())
              .containsExactlyInAnyOrderElementsOf(records);
          files += manifest.files().size();
          committed += records.size();
          records.clear();
        }
        filesPerRecord.put(cluster, (double) files / committed);
        if (cluster) {
          // files are opened before the writer begins to hold records (it waits for 16 reopened files), and at
          // most one per partition at each flush of held records
          assertThat(writer.heldRecordFlushes()).as("flushes of held records").isGreaterThan(4);
          assertThat(files).isLessThanOrEqualTo(4 + 16 + 40 + 40 * (int) writer.heldRecordFlushes());
        } else {
          assertThat(writer.filesReopenedAfterLimit()).isGreaterThan(500);
          assertThat(writer.heldRecordFlushes()).isZero();
        }
      }
    }
    assertThat(filesPerRecord.get(true)).as("files per record with clustering, and without: %s", filesPerRecord)
        .isLessThan(filesPerRecord.get(false) / 5);
  }

  @Override
  protected FileIO io() {
    return io;
  }

  @Override
  protected String newRoot(String testName) {
    return "file:" + dir.resolve(testName);
  }

  @Override
  protected int fanoutPartitions() {
    return Integer.getInteger("lakecommit.fanout", 10_000);
  }

  @Override
  protected int fanoutLimit() {
    return 32;
  }

  @Override
  protected Counted countingIO() {
    CountingLocalFileIO counting = CountingLocalFileIO.create();
    return new Counted(counting, counting.counter());
  }

  @Test
  void filesAreReadableByPlainParquetHadoopWithEveryTypeAndNull() throws IOException {
    List<Record> rows = AllTypes.rows(0, 400);
    StagedFile file;
    try (StagingWriter<Record> writer =
        StagingWriter.forRecords(config(AllTypes.SCHEMA).build(), context(0, 0, 0))) {
      rows.forEach(row -> write(writer, row));
      file = writer.prepareCommit(1).orElseThrow().files().get(0);
    }

    List<Group> groups = new ArrayList<>();
    MessageType parquetSchema;
    try (ParquetFileReader reader =
        ParquetFileReader.open(
            HadoopInputFile.fromPath(new org.apache.hadoop.fs.Path(file.path()), new Configuration()))) {
      parquetSchema = reader.getFooter().getFileMetaData().getSchema();
      PageReadStore pages;
      while ((pages = reader.readNextRowGroup()) != null) {
        RecordReader<Group> records =
            new ColumnIOFactory()
                .getColumnIO(parquetSchema)
                .getRecordReader(pages, new GroupRecordConverter(parquetSchema));
        for (long i = 0; i < pages.getRowCount(); i++) {
          groups.add(records.read());
        }
      }
    }
    assertThat(parquetSchema.getType("id").getId().intValue()).isEqualTo(1);
    assertThat(parquetSchema.getType("attrs").getId().intValue()).isEqualTo(17);
    assertThat(groups.stream().map(LocalStagingWriterTest::toRecord).toList()).containsExactlyElementsOf(rows);
  }

  /** Decodes a row from Parquet's own representation, knowing only the Parquet spec's logical types. */
  private static Record toRecord(Group g) {
    Record r = GenericRecord.create(AllTypes.SCHEMA);
    r.setField("id", g.getLong("id", 0));
    if (has(g, "i")) {
      r.setField("i", g.getInteger("i", 0));
    }
    if (has(g, "s")) {
      r.setField("s", g.getString("s", 0));
    }
    if (has(g, "bin")) {
      r.setField("bin", ByteBuffer.wrap(g.getBinary("bin", 0).getBytes()));
    }
    if (has(g, "flag")) {
      r.setField("flag", g.getBoolean("flag", 0));
    }
    if (has(g, "d")) {
      r.setField("d", g.getDouble("d", 0));
    }
    if (has(g, "f")) {
      r.setField("f", g.getFloat("f", 0));
    }
    if (has(g, "dec")) {
      r.setField("dec", BigDecimal.valueOf(g.getInteger("dec", 0), 2));
    }
    if (has(g, "day")) {
      r.setField("day", LocalDate.ofEpochDay(g.getInteger("day", 0)));
    }
    if (has(g, "t")) {
      r.setField("t", LocalTime.ofNanoOfDay(g.getLong("t", 0) * 1000));
    }
    if (has(g, "ts")) {
      r.setField("ts", DateTimeUtil.timestampFromMicros(g.getLong("ts", 0)));
    }
    if (has(g, "tstz")) {
      r.setField("tstz", OffsetDateTime.of(DateTimeUtil.timestampFromMicros(g.getLong("tstz", 0)), ZoneOffset.UTC));
    }
    if (has(g, "u")) {
      ByteBuffer uuid = ByteBuffer.wrap(g.getBinary("u", 0).getBytes());
      r.setField("u", new UUID(uuid.getLong(), uuid.getLong()));
    }
    if (has(g, "fx")) {
      r.setField("fx", g.getBinary("fx", 0).getBytes());
    }
    if (has(g, "point")) {
      Group p = g.getGroup("point", 0);
      Record point = GenericRecord.create(AllTypes.SCHEMA.findType("point").asStructType());
      point.setField("x", p.getDouble("x", 0));
      point.setField("label", has(p, "label") ? p.getString("label", 0) : null);
      r.setField("point", point);
    }
    if (has(g, "tags")) {
      Group list = g.getGroup("tags", 0);
      List<String> tags = new ArrayList<>();
      for (int k = 0; k < list.getFieldRepetitionCount("list"); k++) {
        Group element = list.getGroup("list", k);
        tags.add(has(element, "element") ? element.getString("element", 0) : null);
      }
      r.setField("tags", tags);
    }
    if (has(g, "attrs")) {
      Group map = g.getGroup("attrs", 0);
      Map<String, Long> attrs = new LinkedHashMap<>();
      for (int k = 0; k < map.getFieldRepetitionCount("key_value"); k++) {
        Group entry = map.getGroup("key_value", k);
        attrs.put(entry.getString("key", 0), has(entry, "value") ? entry.getLong("value", 0) : null);
      }
      r.setField("attrs", attrs);
    }
    return r;
  }

  private static boolean has(Group g, String field) {
    return g.getFieldRepetitionCount(field) > 0;
  }

  /** The budget is the same on every storage: tested on local disk, where 40 tables' files cost nothing. */
  @Test
  void writersOfManyTablesShareOneBudgetOfOpenFilesAndBufferedBytes() throws IOException {
    Schema schema = TEXT_ROWS;
    PartitionSpec spec = PartitionSpec.builderFor(schema).identity("p").build();
    int tables = 40;
    int maxOpen = 8;
    long bound = 128 * 1024;
    long slack = 256 * 300; // the buffers are measured every 256 records of under 300 bytes
    Counted counting = countingIO();
    WriteBudget budget = new WriteBudget(maxOpen, bound);
    List<StagingWriter<Record>> writers = new ArrayList<>();
    for (int t = 0; t < tables; t++) {
      // each table's own bounds are far above the budget's: the budget bounds the writer
      StagingWriterConfig config = config(schema).io(counting.io()).spec(spec).codec("uncompressed")
          .layout(StagingLayout.under(layout.root() + "/table-" + t)).maxOpenFiles(1000).build();
      writers.add(StagingWriter.create(config, InputConverter.records(), context(0, 0, 0), budget));
    }
    Random random = new Random(20261206L);
    Record template = GenericRecord.create(schema);
    int rows = 6_000;
    long[] written = new long[tables];
    for (int i = 0; i < rows; i++) {
      // a few hot tables, the others now and then: every table is written, most files close early
      int table = random.nextInt(4) == 0 ? random.nextInt(tables) : random.nextInt(4);
      Record row = template.copy();
      row.setField("id", (long) i);
      row.setField("p", random.nextInt(2));
      row.setField("text", "x".repeat(200) + i);
      writers.get(table).write(row);
      written[table]++;
      assertThat(budget.openFiles()).isLessThanOrEqualTo(maxOpen);
      assertThat(budget.bufferedBytes()).isLessThanOrEqualTo(bound + slack);
    }
    long reported = 0;
    for (int t = 0; t < tables; t++) {
      StagingWriter<Record> writer = writers.get(t);
      java.util.Optional<StagingManifest> manifest = writer.prepareCommit(1);
      assertThat(manifest.map(StagingManifest::recordCount).orElse(0L)).as("table %s", t).isEqualTo(written[t]);
      if (manifest.isPresent()) {
        for (StagedFile file : manifest.get().files()) {
          assertThat(file.path()).startsWith(layout.root() + "/table-" + t + "/");
          assertThat(ParquetFiles.read(io(), file.path(), schema)).hasSize((int) file.recordCount());
        }
        reported += manifest.get().recordCount();
      }
      writer.close();
    }
    assertThat(reported).isEqualTo(rows);
    assertThat(java.util.Arrays.stream(written).filter(n -> n > 0).count()).isEqualTo(tables);
    assertThat(counting.counter().maxOpen()).isEqualTo(maxOpen);
    assertThat(budget.mostOpenFiles()).isEqualTo(maxOpen);
    assertThat(counting.counter().open()).isZero();
    assertThat(budget.openFiles()).isZero();
  }
}
