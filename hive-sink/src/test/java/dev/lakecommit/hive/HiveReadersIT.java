package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.hive.testing.HiveReader;
import java.io.IOException;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TimeZone;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.common.type.HiveDecimal;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Tables hive-sink writes, read by Hive 2.3's own Parquet reader ({@code MapredParquetInputFormat} and
 * {@code ParquetHiveSerDe}, from hive-exec) as a Hive query reads them: the table's columns from the files of the
 * partitions the metastore lists, partition values from the metastore. Every value must come back exact, and the
 * files must hold no partition column (Hive's convention; Spark warns of duplicate columns otherwise).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HiveReadersIT {
  private static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "name", Types.StringType.get()),
      Types.NestedField.optional(3, "ts", Types.TimestampType.withoutZone()),
      Types.NestedField.optional(4, "tstz", Types.TimestampType.withZone()),
      Types.NestedField.optional(5, "day", Types.DateType.get()),
      Types.NestedField.optional(6, "amount", Types.DecimalType.of(12, 2)),
      Types.NestedField.optional(7, "ratio", Types.DoubleType.get()),
      Types.NestedField.optional(8, "flag", Types.BooleanType.get()),
      Types.NestedField.optional(9, "tags", Types.ListType.ofOptional(20, Types.StringType.get())),
      Types.NestedField.optional(10, "attrs",
          Types.MapType.ofOptional(21, 22, Types.StringType.get(), Types.IntegerType.get())),
      Types.NestedField.optional(11, "point", Types.StructType.of(
          Types.NestedField.optional(23, "x", Types.IntegerType.get()),
          Types.NestedField.optional(24, "label", Types.StringType.get()))),
      Types.NestedField.optional(12, "region", Types.StringType.get()),
      Types.NestedField.optional(13, "bucket", Types.IntegerType.get()));
  private static final List<String> PARTITIONS = List.of("region", "bucket");
  /** Values Hive's INT96 handling tends to get wrong: before 1970, micros, end of day, a leap day, far future. */
  private static final List<LocalDateTime> TIMES = List.of(
      LocalDateTime.of(2024, 3, 10, 2, 30, 0, 123_456_000),
      LocalDateTime.of(1969, 12, 31, 23, 59, 59, 999_999_000),
      LocalDateTime.of(2024, 2, 29, 0, 0, 0, 1_000),
      LocalDateTime.of(1900, 1, 1, 12, 0),
      LocalDateTime.of(2262, 4, 11, 23, 47, 16, 854_775_000));

  private HiveMetastoreServer hms;
  private HiveFixture fixture;

  @BeforeAll
  void start() throws Exception {
    hms = HiveMetastoreServer.startOnDerby();
    fixture = new HiveFixture(hms, hms.warehouseLocation(), Map.of());
  }

  @AfterAll
  void stop() {
    if (fixture != null) {
      fixture.close();
    }
    if (hms != null) {
      hms.close();
    }
  }

  @Test
  void hiveReadsEveryValueExactlyWithPartitionValuesFromThePath() throws Exception {
    String table = HiveFixture.newTable("readable");
    List<Record> rows = write(table, Map.of(), 40);

    assertHiveReadsExactly(table, rows);

    for (FileStatus file : dataFiles(table)) {
      ParquetMetadata footer = footer(file);
      MessageType schema = footer.getFileMetaData().getSchema();
      assertThat(schema.getFields()).extracting(org.apache.parquet.schema.Type::getName)
          .as("columns of %s", file.getPath())
          .containsExactly("id", "name", "ts", "tstz", "day", "amount", "ratio", "flag", "tags", "attrs", "point");
      assertThat(schema.getType("ts").asPrimitiveType().getPrimitiveTypeName()).isEqualTo(PrimitiveTypeName.INT96);
      assertThat(footer.getFileMetaData().getKeyValueMetaData()).containsEntry("writer.time.zone", "UTC");
    }
  }

  /**
   * A partition's small files merged by {@link HiveMaintenance}: Hive's reader reads every value as before, from
   * files that are still Hive's Parquet (INT96 timestamps in the table's zone, no partition columns).
   */
  @Test
  void mergedFilesReadExactlyAsHiveWroteThem() throws Exception {
    String table = HiveFixture.newTable("merged");
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, PARTITIONS).build());
    List<Record> rows = new ArrayList<>();
    try (HiveAggregatedCommitter committer = HiveSinkSuite.committer(sink)) {
      for (int checkpoint = 1; checkpoint <= 4; checkpoint++) {
        List<Record> batch = new ArrayList<>();
        for (int i = (checkpoint - 1) * 10; i < checkpoint * 10; i++) {
          batch.add(row(i));
        }
        rows.addAll(batch);
        assertThat(committer.commit(HiveTestData.stage(sink, committer, "readers", checkpoint, batch)))
            .isInstanceOf(CommitOutcome.Committed.class);
      }
    }
    int before = dataFiles(table).size();

    HiveMaintenance.Result result = sink.maintenance().merge(HiveMaintenance.Options.defaults().keepCheckpoints(0));

    assertThat(result.merged()).as("%s", result).isEqualTo(4);
    assertThat(dataFiles(table)).hasSize(4).hasSizeLessThan(before);
    assertHiveReadsExactly(table, rows);
    for (FileStatus file : dataFiles(table)) {
      ParquetMetadata footer = footer(file);
      MessageType schema = footer.getFileMetaData().getSchema();
      assertThat(schema.getType("ts").asPrimitiveType().getPrimitiveTypeName()).isEqualTo(PrimitiveTypeName.INT96);
      assertThat(schema.containsField("region")).isFalse();
      assertThat(footer.getFileMetaData().getKeyValueMetaData()).containsEntry("writer.time.zone", "UTC");
    }
  }

  private void assertHiveReadsExactly(String table, List<Record> rows) throws Exception {
    List<List<Object>> read = withDefaultZone("UTC", () -> readAsHive(table));
    assertThat(read).hasSize(rows.size());
    Map<Long, List<Object>> byId = new HashMap<>();
    read.forEach(row -> byId.put((Long) row.get(0), row));
    for (Record row : rows) {
      List<Object> hive = byId.get((Long) row.getField("id"));
      assertThat(hive).as("row %s", row).isNotNull();
      assertThat(hive.get(1)).isEqualTo(row.getField("name"));
      assertThat(hive.get(2) == null ? null : ((java.sql.Timestamp) hive.get(2)).toLocalDateTime())
          .isEqualTo(row.getField("ts"));
      assertThat(hive.get(3) == null ? null : ((java.sql.Timestamp) hive.get(3)).toInstant())
          .isEqualTo(row.getField("tstz") == null ? null : ((OffsetDateTime) row.getField("tstz")).toInstant());
      assertThat(hive.get(4) == null ? null : ((java.sql.Date) hive.get(4)).toLocalDate())
          .isEqualTo(row.getField("day"));
      assertThat(hive.get(5) == null ? null : ((HiveDecimal) hive.get(5)).bigDecimalValue().setScale(2))
          .isEqualTo(row.getField("amount"));
      assertThat(hive.get(6)).isEqualTo(row.getField("ratio"));
      assertThat(hive.get(7)).isEqualTo(row.getField("flag"));
      assertThat(hive.get(8)).isEqualTo(row.getField("tags"));
      assertThat(hive.get(9)).isEqualTo(row.getField("attrs"));
      Record point = (Record) row.getField("point");
      assertThat(hive.get(10)).isEqualTo(point == null ? null : List.of(point.getField("x"), point.getField("label")));
      // The partition columns, as Hive appends them: from the partition the metastore lists.
      assertThat(hive.get(11)).isEqualTo(row.getField("region"));
      assertThat(hive.get(12)).isEqualTo(String.valueOf(row.getField("bucket")));
    }

  }

  /**
   * Hive 2.x reads INT96 in its JVM's time zone; a table whose readers run in another zone than UTC says so in
   * {@code lakecommit.parquet.int96.zone}, and they read the exact wall-clock time.
   */
  @Test
  void int96ZoneOfTheTableIsTheZoneHive2ReadersRunIn() throws Exception {
    String table = HiveFixture.newTable("zoned");
    String zone = "America/Los_Angeles";
    // Not in the zone's DST gap (02:30 on 2024-03-10 does not exist there, in Hive either).
    List<Record> rows = write(table, Map.of(HiveFileFormat.INT96_ZONE_KEY, zone), 5).stream()
        .filter(r -> !TIMES.get(0).equals(r.getField("ts"))).toList();
    assertThat(rows).hasSize(4);
    // java.sql.Timestamp shows its wall-clock time in the default zone too: read it while that is the reader's.
    Map<Long, LocalDateTime> times = withDefaultZone(zone, () -> {
      Map<Long, LocalDateTime> byId = new HashMap<>();
      readAsHive(table).forEach(row -> byId.put((Long) row.get(0), ((java.sql.Timestamp) row.get(2)).toLocalDateTime()));
      return byId;
    });
    for (Record row : rows) {
      assertThat(times.get((Long) row.getField("id"))).isEqualTo(row.getField("ts"));
    }
    for (FileStatus file : dataFiles(table)) {
      assertThat(footer(file).getFileMetaData().getKeyValueMetaData()).containsEntry("writer.time.zone", zone);
    }
  }

  /** {@code lakecommit.parquet.timestamp=int64-micros}: TIMESTAMP(MICROS) for Hive 4, Spark and Trino readers. */
  @Test
  void int64TimestampsPerTableParameter() throws Exception {
    String table = HiveFixture.newTable("micros");
    write(table, Map.of(HiveFileFormat.TIMESTAMP_KEY, "int64-micros"), 3);
    for (FileStatus file : dataFiles(table)) {
      MessageType schema = footer(file).getFileMetaData().getSchema();
      assertThat(schema.getType("ts").asPrimitiveType().getPrimitiveTypeName()).isEqualTo(PrimitiveTypeName.INT64);
      assertThat(schema.containsField("region")).isFalse();
    }
  }

  /**
   * int and float columns that the sink widened (--add-new-columns: bigint, double, in the table and its
   * partitions) read in Hive: the older files hold INT32 and FLOAT, the newer INT64 and DOUBLE, and Hive's reader
   * gives every value as the wider type.
   */
  @Test
  void intAndFloatColumnsWidenedByTheSinkReadInOlderFiles() throws Exception {
    String table = HiveFixture.newTable("widened");
    Schema narrow = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "n", Types.IntegerType.get()),
        Types.NestedField.optional(3, "r", Types.FloatType.get()),
        Types.NestedField.optional(4, "region", Types.StringType.get()));
    Schema wide = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "n", Types.LongType.get()),
        Types.NestedField.optional(3, "r", Types.DoubleType.get()),
        Types.NestedField.optional(4, "region", Types.StringType.get()));
    List<Record> before = new ArrayList<>();
    List<Record> after = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      Record row = GenericRecord.create(i < 3 ? narrow : wide);
      row.setField("id", (long) i);
      row.setField("n", i < 3 ? (Object) i : (Object) (3_000_000_000L + i));
      row.setField("r", i < 3 ? (Object) (i + 0.5f) : (Object) (i + 0.25d));
      row.setField("region", "r" + (i % 2));
      (i < 3 ? before : after).add(row);
    }
    commit(HiveSink.forRecords(fixture.config(table).createTable(narrow, List.of("region")).build()), "narrow",
        before);
    commit(HiveSink.forRecords(fixture.config(table).createTable(wide, List.of("region")).addNewColumns(true)
        .build()), "wide", after);

    assertThat(fixture.client().getTable(HiveFixture.DB, table).getSd().getCols()).extracting(FieldSchema::getType)
        .containsExactly("bigint", "bigint", "double");
    Map<Long, List<Object>> byId = new HashMap<>();
    withDefaultZone("UTC", () -> readAsHive(table)).forEach(row -> byId.put((Long) row.get(0), row));
    assertThat(byId).hasSize(6);
    assertThat(byId.get(1L).subList(1, 3)).as("an INT32 and a FLOAT of the older file").containsExactly(1L, 1.5d);
    assertThat(byId.get(4L).subList(1, 3)).containsExactly(3_000_000_004L, 4.25d);
  }

  /**
   * An int partition column that the sink widened to bigint (--add-new-columns): the older partitions keep their
   * names, the newer ones hold values beyond int, and every row's partition value is a bigint (Hive converts
   * partition names with the partition column's type).
   */
  @Test
  void anIntPartitionColumnWidenedByTheSinkReadsInEveryPartition() throws Exception {
    String table = HiveFixture.newTable("widenedkey");
    Schema narrow = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "shard", Types.IntegerType.get()));
    Schema wide = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "shard", Types.LongType.get()));
    List<Record> before = new ArrayList<>();
    List<Record> after = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      Record row = GenericRecord.create(i < 3 ? narrow : wide);
      row.setField("id", (long) i);
      row.setField("shard", i < 3 ? (Object) (i % 2) : (Object) (3_000_000_000L + i % 2));
      (i < 3 ? before : after).add(row);
    }
    commit(HiveSink.forRecords(fixture.config(table).createTable(narrow, List.of("shard")).build()), "narrow",
        before);
    commit(HiveSink.forRecords(fixture.config(table).createTable(wide, List.of("shard")).addNewColumns(true)
        .build()), "wide", after);

    assertThat(fixture.client().getTable(HiveFixture.DB, table).getPartitionKeys()).extracting(FieldSchema::getType)
        .containsExactly("bigint");
    Map<Long, Object> shardById = new HashMap<>();
    readAsHive(table).forEach(row -> shardById.put((Long) row.get(0), Long.valueOf((String) row.get(row.size() - 1))));
    assertThat(shardById).containsExactlyInAnyOrderEntriesOf(Map.of(0L, 0L, 1L, 1L, 2L, 0L,
        3L, 3_000_000_001L, 4L, 3_000_000_000L, 5L, 3_000_000_001L));
  }

  private static void commit(HiveSink<Record> sink, String job, List<Record> rows) throws IOException {
    try (HiveAggregatedCommitter committer = HiveSinkSuite.committer(sink)) {
      assertThat(committer.commit(HiveTestData.stage(sink, committer, job, 1, rows)))
          .isInstanceOf(CommitOutcome.Committed.class);
    }
  }

  private List<Record> write(String table, Map<String, String> params, int count) throws IOException {
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table)
        .createTable(SCHEMA, PARTITIONS)
        .tableProperties(params)
        .build());
    List<Record> rows = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      rows.add(row(i));
    }
    try (HiveAggregatedCommitter committer = HiveSinkSuite.committer(sink)) {
      assertThat(committer.commit(HiveTestData.stage(sink, committer, "readers", 1, rows)))
          .isInstanceOf(CommitOutcome.Committed.class);
    }
    return rows;
  }

  private static Record row(int i) {
    Record row = GenericRecord.create(SCHEMA);
    row.setField("id", (long) i);
    boolean nulls = i % 7 == 6;
    row.setField("name", nulls ? null : "name-" + i);
    LocalDateTime time = TIMES.get(i % TIMES.size()).plusDays(i / TIMES.size());
    row.setField("ts", nulls ? null : time);
    row.setField("tstz", nulls ? null : time.atOffset(ZoneOffset.ofHours(i % 5 - 2)));
    row.setField("day", nulls ? null : LocalDate.of(1960, 1, 1).plusDays(i * 997L));
    row.setField("amount", nulls ? null : new BigDecimal(i % 2 == 0 ? "-1234567890.12" : "0.05").add(BigDecimal.valueOf(i)));
    row.setField("ratio", nulls ? null : i / 3.0);
    row.setField("flag", nulls ? null : i % 2 == 0);
    row.setField("tags", nulls ? null : i % 3 == 0 ? List.of() : List.of("a" + i, "b"));
    row.setField("attrs", nulls ? null : Map.of("k" + i, i));
    Record point = GenericRecord.create(SCHEMA.findType("point").asStructType());
    point.setField("x", i);
    point.setField("label", "p" + i);
    row.setField("point", nulls ? null : point);
    row.setField("region", i % 3 == 0 ? "eu" : "us-west");
    row.setField("bucket", i % 2);
    return row;
  }

  /** The table as Hive 2.3's reader reads it ({@link HiveReader}). */
  private List<List<Object>> readAsHive(String table) throws Exception {
    return HiveReader.read(fixture.client(), fixture.conf(), HiveFixture.DB, table);
  }

  private List<FileStatus> dataFiles(String table) throws Exception {
    List<FileStatus> files = new ArrayList<>();
    Table t = fixture.client().getTable(HiveFixture.DB, table);
    for (Partition p : fixture.client().listPartitions(HiveFixture.DB, table, (short) -1)) {
      Path dir = new Path(p.getSd().getLocation());
      for (FileStatus status : dir.getFileSystem(fixture.conf()).listStatus(dir)) {
        if (status.isFile() && !HivePaths.isHidden(status.getPath().getName())) {
          files.add(status);
        }
      }
    }
    assertThat(files).as("data files of %s", t.getTableName()).isNotEmpty();
    return files;
  }

  private ParquetMetadata footer(FileStatus file) throws IOException {
    try (ParquetFileReader reader = ParquetFileReader.open(HadoopInputFile.fromStatus(file, fixture.conf()))) {
      return reader.getFooter();
    }
  }

  private interface Read<T> {
    T run() throws Exception;
  }

  /**
   * Hive 2.x converts INT96 values into its JVM's default zone, through a calendar it keeps per thread: run a read
   * as a reader in {@code zone}, on a thread of its own.
   */
  private static <T> T withDefaultZone(String zone, Read<T> read) throws Exception {
    TimeZone before = TimeZone.getDefault();
    TimeZone.setDefault(TimeZone.getTimeZone(zone));
    ExecutorService reader = Executors.newSingleThreadExecutor();
    try {
      return reader.submit(read::run).get(2, TimeUnit.MINUTES);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    } finally {
      reader.shutdownNow();
      TimeZone.setDefault(before);
    }
  }
}
