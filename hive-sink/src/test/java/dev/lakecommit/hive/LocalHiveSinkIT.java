package dev.lakecommit.hive;

import static dev.lakecommit.hive.HiveTestData.PARTITIONED;
import static dev.lakecommit.hive.HiveTestData.SCHEMA;
import static dev.lakecommit.hive.HiveTestData.row;
import static dev.lakecommit.hive.HiveTestData.rows;
import static dev.lakecommit.hive.HiveTestData.stage;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.CrashHarness;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.common.FileUtils;
import org.apache.hadoop.hive.metastore.TableType;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Hive sink suite on local disk, with a metastore on embedded Derby; plus what does not depend on the storage:
 * table creation and refusal, Hive's partition directory names, and the negative crash test.
 */
class LocalHiveSinkIT extends HiveSinkSuite {
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

  @Override
  HiveFixture fixture() {
    return fixture;
  }

  @Override
  int manyPartitions() {
    return TestScale.pick(60, 1000);
  }

  @Override
  boolean thorough() {
    return true;
  }

  /**
   * The negative test: a rename that copies and then deletes (as S3A's does) stops half-way, leaving the file
   * staged and in its partition. With the checks the replay completes the move; without them it moves the file
   * again, and the table holds its rows twice.
   */
  @ParameterizedTest(name = "{0} uncommitted")
  @ValueSource(ints = {0, 1})
  void withoutTheIdempotencyCheckAHalfDoneMoveIsDuplicated(int uncommitted) throws Exception {
    Function<CrashSchedule, UnaryOperator<FileSystem>> copyRename =
        crashes -> fs -> new CopyRenameFileSystem(fs, () -> crashes.reach(CopyRenameFileSystem.COPIED, -1));
    String unsafe = HiveFixture.newTable("unsafe");
    CrashHarness.Outcome duplicated = runJob(unsafe, CrashSchedule.at(CopyRenameFileSystem.COPIED, 4), false,
        copyRename, b -> b.createTable(SCHEMA, PARTITIONED), CRASH_ROWS,
        new java.util.concurrent.CopyOnWriteArrayList<>(), uncommitted);

    assertThat(duplicated.crashes()).as("failure %s", duplicated.failure()).isEqualTo(1);
    assertThat(duplicated.audit().duplicateKeys()).as(duplicated.audit().toString()).isPositive();

    String safe = HiveFixture.newTable("safe");
    CrashHarness.Outcome exact = runJob(safe, CrashSchedule.at(CopyRenameFileSystem.COPIED, 4), true,
        copyRename, b -> b.createTable(SCHEMA, PARTITIONED), CRASH_ROWS,
        new java.util.concurrent.CopyOnWriteArrayList<>(), uncommitted);
    assertThat(exact.crashes()).isEqualTo(1);
    assertExactlyOnce(safe, exact, false, CRASH_ROWS);
  }

  /** Values that must not leave their partition directory land where Hive itself would put them. */
  @Test
  void partitionDirectoriesAreNamedAsHiveNamesThem() throws Exception {
    String table = HiveFixture.newTable("escape");
    List<String> values = Arrays.asList("../x", "..", "a/b", "a=b", "naïve ü", "%41", "c:\\d", "#?*[]{}^'\"",
        "tab\tnew\nline", null, "");
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, List.of("cat")).build());
    List<Record> records = new ArrayList<>();
    for (int i = 0; i < values.size(); i++) {
      records.add(row(i, values.get(i), 0));
    }
    try (HiveAggregatedCommitter committer = committer(sink)) {
      assertThat(committer.commit(stage(sink, committer, "escape", 1, records)))
          .isInstanceOf(CommitOutcome.Committed.class);
    }

    Table t = fixture.client().getTable(HiveFixture.DB, table);
    java.nio.file.Path tableDir = java.nio.file.Path.of(new Path(t.getSd().getLocation()).toUri().getPath());
    List<Partition> partitions = fixture.client().listPartitions(HiveFixture.DB, table, (short) -1);
    assertThat(partitions).hasSize(values.size() - 1); // null and "" are both the default partition
    for (Partition partition : partitions) {
      String value = partition.getValues().get(0);
      assertThat(partition.getSd().getLocation())
          .isEqualTo(t.getSd().getLocation() + "/" + FileUtils.makePartName(List.of("cat"), List.of(value)));
      java.nio.file.Path dir = java.nio.file.Path.of(new Path(partition.getSd().getLocation()).toUri().getPath());
      assertThat(dir.getParent()).as("directory of '%s'", value).isEqualTo(tableDir);
      try (java.util.stream.Stream<java.nio.file.Path> files = Files.list(dir)) {
        assertThat(files.filter(f -> f.toString().endsWith(".parquet")).count()).as("files of '%s'", value)
            .isEqualTo(value.equals(HivePaths.DEFAULT_PARTITION_NAME) ? 2 : 1); // null and "" share it
      }
    }
    assertThat(partitions).extracting(p -> p.getValues().get(0))
        .contains(HivePaths.DEFAULT_PARTITION_NAME, "../x", "a/b", "naïve ü");
    TableContents contents = fixture.contents(table);
    assertThat(contents.ids()).hasSize(values.size()).doesNotHaveDuplicates();
    assertThat(contents.part(FileUtils.makePartName(List.of("cat"), List.of(HivePaths.DEFAULT_PARTITION_NAME)))
        .ids()).containsExactlyInAnyOrder(9L, 10L);
  }

  @Test
  void createsManagedAndExternalParquetTables() throws Exception {
    String managed = HiveFixture.newTable("managed");
    HiveSink.forRecords(fixture.config(managed).createTable(SCHEMA, PARTITIONED).build());
    Table m = fixture.client().getTable(HiveFixture.DB, managed);
    assertThat(m.getTableType()).isEqualTo(TableType.MANAGED_TABLE.name());
    assertThat(m.getSd().getLocation()).endsWith("/lc.db/" + managed);
    assertThat(m.getSd().getCols()).extracting(FieldSchema::getName, FieldSchema::getType)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("id", "bigint"),
            org.assertj.core.groups.Tuple.tuple("payload", "string"));
    assertThat(m.getPartitionKeys()).extracting(FieldSchema::getName, FieldSchema::getType)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("cat", "string"),
            org.assertj.core.groups.Tuple.tuple("bucket", "int"));
    assertThat(m.getSd().getInputFormat()).isEqualTo(TableSetup.PARQUET_INPUT_FORMAT);
    assertThat(m.getSd().getOutputFormat()).isEqualTo(TableSetup.PARQUET_OUTPUT_FORMAT);
    assertThat(m.getSd().getSerdeInfo().getSerializationLib()).isEqualTo(TableSetup.PARQUET_SERDE);

    String external = HiveFixture.newTable("external");
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(external).createTable(SCHEMA, List.of())
        .external(true).location(fixture.location(external)).build());
    Table e = fixture.client().getTable(HiveFixture.DB, external);
    assertThat(e.getTableType()).isEqualTo(TableType.EXTERNAL_TABLE.name());
    assertThat(e.getParameters()).containsEntry("EXTERNAL", "TRUE").containsEntry("numRows", "0");
    assertThat(e.getSd().getLocation()).isEqualTo(fixture.location(external));
    assertThat(sink.layout().root()).isEqualTo(fixture.location(external) + "/.lakecommit-staging");

    // A second sink on the existing table, without a schema: the schema comes from the table.
    HiveSink<Record> derived = HiveSink.forRecords(fixture.config(managed).build());
    assertThat(derived.schema().columns()).extracting(Types.NestedField::name)
        .containsExactly("id", "payload", "cat", "bucket");
    assertThat(derived.partitionColumns()).containsExactly("cat", "bucket");
    try (CommitTarget target = derived.openTarget()) {
      assertThat(target.lastCommittedCheckpoint(JobId.of("none"))).isEmpty();
    }
  }

  @Test
  void refusesTablesItCannotWriteBeforeWriting() throws Exception {
    String orc = HiveFixture.newTable("orc");
    createTable(orc, "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat", "org.apache.hadoop.hive.ql.io.orc.OrcSerde", List.of());
    assertThatThrownBy(() -> HiveSink.forRecords(fixture.config(orc).schema(SCHEMA).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lc." + orc).hasMessageContaining("not stored as Parquet");

    String table = HiveFixture.newTable("columns");
    HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, PARTITIONED).build());
    Schema wrongType = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "payload", Types.IntegerType.get()),
        Types.NestedField.optional(3, "cat", Types.StringType.get()),
        Types.NestedField.optional(4, "bucket", Types.IntegerType.get()));
    assertThatThrownBy(() -> HiveSink.forRecords(fixture.config(table).schema(wrongType).build()))
        .hasMessage("Column 'payload' is string in table lc.%s but int in the staged schema", table);

    Schema extra = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "payload", Types.StringType.get()),
        Types.NestedField.optional(3, "cat", Types.StringType.get()),
        Types.NestedField.optional(4, "bucket", Types.IntegerType.get()),
        Types.NestedField.optional(5, "extra", Types.StringType.get()));
    assertThatThrownBy(() -> HiveSink.forRecords(fixture.config(table).schema(extra).build()))
        .hasMessageStartingWith("Column 'extra' of the staged schema is not in table lc." + table);

    Schema missing = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(3, "cat", Types.StringType.get()),
        Types.NestedField.optional(4, "bucket", Types.IntegerType.get()));
    assertThatThrownBy(() -> HiveSink.forRecords(fixture.config(table).schema(missing).build()))
        .hasMessage("Table lc.%s has column 'payload' (string), which the staged schema lacks", table);

    assertThatThrownBy(() -> HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, List.of("cat")).build()))
        .hasMessage("Table lc.%s is partitioned by [cat, bucket], not by [cat] as configured", table);

    assertThatThrownBy(() -> HiveSink.forRecords(fixture.config(HiveFixture.newTable("absent")).build()))
        .hasMessageContaining("does not exist in the metastore");
    assertThat(fixture.client().getTable(HiveFixture.DB, orc).getSd().getLocation()).isNotNull();
  }

  /**
   * The metastore applies the watermark swap but its answer is lost: the committer settles the outcome by reading
   * the table back (committed), never by guessing. A swap that failed before it was applied is retried.
   */
  @Test
  void aLostAnswerToTheWatermarkSwapIsSettledByReadingTheTableBack() throws Exception {
    String table = HiveFixture.newTable("settle");
    CountingClients clients = new CountingClients();
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, PARTITIONED)
        .clientFactory(clients).build());
    String swap = "alter_table_with_environmentContext";
    try (HiveAggregatedCommitter committer = committer(sink)) {
      clients.after((method, n) -> {
        if (method.equals(swap)) {
          throw new UndeclaredTransportFailure("answer lost");
        }
      });
      CommitOutcome settled = committer.commit(stage(sink, committer, "settle", 1, rows(0, 10, HiveTestData.MIXED)));
      assertThat(settled).isInstanceOf(CommitOutcome.Committed.class);
      assertThat(((CommitOutcome.Committed) settled).targetVersion()).startsWith("settled by reading back");

      clients.after((method, n) -> {});
      clients.before((method, n) -> {
        if (method.equals(swap)) {
          throw new UndeclaredTransportFailure("not sent");
        }
      });
      HiveCommittable second = stage(sink, committer, "settle", 2, rows(10, 20, HiveTestData.MIXED));
      CommitOutcome failed = committer.commit(second);
      assertThat(failed).isInstanceOf(CommitOutcome.Retryable.class);
      clients.before((method, n) -> {});
      assertThat(committer.commit(second)).isInstanceOf(CommitOutcome.Committed.class);
      assertThat(committer.commit(second)).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    }
    TableContents contents = fixture.contents(table);
    assertThat(contents.ids()).containsExactlyInAnyOrderElementsOf(ids(0, 20));
    contents.parts().forEach(HiveSinkSuite::assertStats);
  }

  /** What a broken connection looks like to a metastore caller. */
  private static final class UndeclaredTransportFailure extends RuntimeException {
    UndeclaredTransportFailure(String message) {
      super(new org.apache.thrift.transport.TTransportException(message));
    }
  }

  /** A Parquet table made by someone else: no Lakecommit parameters; the sink's first swap starts its counter. */
  @Test
  void writesATableItDidNotCreate() throws Exception {
    String table = HiveFixture.newTable("foreign");
    createTable(table, TableSetup.PARQUET_INPUT_FORMAT, TableSetup.PARQUET_OUTPUT_FORMAT, TableSetup.PARQUET_SERDE,
        List.of(new FieldSchema("cat", "string", null), new FieldSchema("bucket", "int", null)));
    assertThat(fixture.client().getTable(HiveFixture.DB, table).getParameters())
        .doesNotContainKey(TableParameters.VERSION_KEY);
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table).build());
    assertThat(sink.schema().asStruct()).isEqualTo(new Schema(
        Types.NestedField.optional(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "payload", Types.StringType.get()),
        Types.NestedField.optional(3, "cat", Types.StringType.get()),
        Types.NestedField.optional(4, "bucket", Types.IntegerType.get())).asStruct());
    try (HiveAggregatedCommitter committer = committer(sink)) {
      assertThat(committer.commit(stage(sink, committer, "foreign", 1, rows(0, 10, HiveTestData.MIXED))))
          .isInstanceOf(CommitOutcome.Committed.class);
      assertThat(committer.commit(stage(sink, committer, "foreign", 2, rows(10, 20, HiveTestData.MIXED))))
          .isInstanceOf(CommitOutcome.Committed.class);
    }
    try (CommitTarget target = sink.openTarget()) {
      assertThat(target.lastCommittedCheckpoint(JobId.of("foreign"))).hasValue(2);
    }
    assertThat(fixture.client().getTable(HiveFixture.DB, table).getParameters())
        .containsEntry(TableParameters.VERSION_KEY, "3")   // the fencing probe's swap, then one per commit
        .containsEntry("lakecommit.committed.foreign", "2")
        .containsEntry("EXTERNAL", "TRUE");
    TableContents contents = fixture.contents(table);
    assertThat(contents.ids()).containsExactlyInAnyOrderElementsOf(ids(0, 20));
    contents.parts().forEach(HiveSinkSuite::assertStats);
  }

  private void createTable(String name, String input, String output, String serde, List<FieldSchema> partitionKeys)
      throws Exception {
    StorageDescriptor sd = new StorageDescriptor();
    sd.setCols(List.of(new FieldSchema("id", "bigint", null), new FieldSchema("payload", "string", null)));
    sd.setLocation(fixture.location(name));
    sd.setInputFormat(input);
    sd.setOutputFormat(output);
    sd.setSerdeInfo(new SerDeInfo(name, serde, new HashMap<>()));
    sd.setParameters(new HashMap<>());
    sd.setBucketCols(new ArrayList<>());
    sd.setSortCols(new ArrayList<>());
    Table table = new Table();
    table.setDbName(HiveFixture.DB);
    table.setTableName(name);
    table.setTableType(TableType.EXTERNAL_TABLE.name());
    table.setParameters(new HashMap<>(Map.of("EXTERNAL", "TRUE")));
    table.setPartitionKeys(new ArrayList<>(partitionKeys));
    table.setSd(sd);
    fixture.client().createTable(table);
  }
}
