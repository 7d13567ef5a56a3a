package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bad configuration fails when the sink is built, before any data is written, naming the option. */
class IcebergSinkConfigTest {
  @TempDir Path dir;

  private IcebergSinkConfig.Builder sqlite() {
    return IcebergSinkConfig.builder().catalogName("jdbc-sqlite")
        .catalogProperties(CatalogFixture.sqlite(dir).properties()).table("db.events");
  }

  @Test
  void anUnknownCatalogTypeIsNamed() {
    assertThatThrownBy(() -> IcebergSinkConfig.builder().catalogProperty("type", "oracle").table("db.t").build())
        .hasMessageStartingWith("Unknown catalog type: type=oracle (use one of hadoop, jdbc, hive, rest");
    assertThatThrownBy(() -> IcebergSinkConfig.builder().table("db.t").build())
        .hasMessageStartingWith("Missing catalog option: set type");
    assertThatThrownBy(() -> IcebergSinkConfig.builder().table("events"))
        .hasMessageContaining("Invalid table: 'events' (use namespace.name");
    assertThatThrownBy(() -> IcebergSinkConfig.builder().writerManifestMinFiles(0))
        .hasMessage("Invalid writer manifest min files: 0 (must be > 0)");
  }

  @Test
  void aMissingTableWithoutCreateIsRefusedBeforeWriting() throws Exception {
    assertThatThrownBy(() -> IcebergSink.forRecords(sqlite().build()))
        .hasMessageContaining("Table db.events does not exist in catalog 'jdbc-sqlite'")
        .hasMessageContaining("createTable");
    assertThat(Files.exists(dir.resolve("warehouse/db/events"))).isFalse();
  }

  @Test
  void createsTheTableWithItsPartitioning() {
    IcebergSink<Record> sink = IcebergSink.forRecords(sqlite()
        .createTable(TestTables.SCHEMA, List.of("bucket(8, id)", "truncate(3, payload)")).build());

    PartitionSpec spec = sink.table().spec();
    assertThat(spec.fields()).extracting(f -> f.transform().toString()).containsExactly("bucket[8]", "truncate[3]");
    assertThat(sink.layout().root()).endsWith("/db/events/data/lakecommit");
  }

  @Test
  void malformedPartitionTransformsAreNamed() {
    assertThatThrownBy(() -> PartitionSpecs.parse(TestTables.SCHEMA, List.of("bucket(id)")))
        .hasMessageContaining("'bucket(id)'").hasMessageContaining("bucket needs a number");
    assertThatThrownBy(() -> PartitionSpecs.parse(TestTables.SCHEMA, List.of("day(missing)")))
        .hasMessageContaining("no column 'missing'");
  }

  @Test
  void anIncompatibleStagedSchemaIsRefusedNamingTheColumn() {
    TestTables.create(CatalogFixture.sqlite(dir).newCatalog());
    Schema wrongType = new Schema(
        Types.NestedField.required(1, "id", Types.StringType.get()),
        Types.NestedField.optional(2, "payload", Types.StringType.get()));
    assertThatThrownBy(() -> IcebergSink.forRecords(sqlite().createTable(wrongType, List.of()).build()))
        .hasMessage("Column 'id' is string in the staged schema but long in table jdbc-sqlite.db.events");

    Schema nullableKey = new Schema(Types.NestedField.optional(1, "id", Types.LongType.get()));
    assertThatThrownBy(() -> IcebergSink.forRecords(sqlite().createTable(nullableKey, List.of()).build()))
        .hasMessageContaining("Column 'id' may be null in the staged schema but is required");

    Schema extra = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(3, "region", Types.StringType.get()));
    assertThatThrownBy(() -> IcebergSink.forRecords(sqlite().createTable(extra, List.of()).build()))
        .hasMessageContaining("has no column 'region' of the staged schema")
        .hasMessageContaining("addNewColumns");
  }

  @Test
  void addsNewOptionalColumnsWhenAllowedAndProjectsRecordsByName() throws Exception {
    TestTables.create(CatalogFixture.sqlite(dir).newCatalog());
    Schema staged = new Schema(
        Types.NestedField.optional(7, "region", Types.StringType.get()),
        Types.NestedField.required(8, "id", Types.LongType.get()));

    IcebergSink<Record> sink = IcebergSink.forRecords(sqlite().createTable(staged, List.of())
        .addNewColumns(true).build());

    assertThat(sink.writeSchema().columns()).extracting(Types.NestedField::name)
        .containsExactly("id", "payload", "region");
    assertThat(sink.writeSchema().findField("region").fieldId()).as("the id the table's update assigns").isEqualTo(3);
    assertThat(CatalogFixture.sqlite(dir).newCatalog().loadTable(TestTables.IDENT).schema().columns())
        .as("building the sink leaves the table as it is: the first commit evolves it")
        .extracting(Types.NestedField::name).containsExactly("id", "payload");
    Record input = GenericRecord.create(staged).copy(Map.of("region", "eu", "id", 5L));
    Record laidOut = RecordProjection.of(staged, sink.writeSchema()).convert(input);
    assertThat(laidOut.getField("id")).isEqualTo(5L);
    assertThat(laidOut.getField("payload")).isNull();
    assertThat(laidOut.getField("region")).isEqualTo("eu");
  }

  @Test
  void widensIntToLongAndFloatToDoubleWhenAllowedAndOnlyThen() {
    Schema narrow = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "n", Types.IntegerType.get()),
        Types.NestedField.optional(3, "x", Types.FloatType.get()));
    IcebergSink.forRecords(sqlite().createTable(narrow, List.of()).build());
    Schema wide = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "n", Types.LongType.get()),
        Types.NestedField.optional(3, "x", Types.DoubleType.get()));

    assertThatThrownBy(() -> IcebergSink.forRecords(sqlite().createTable(wide, List.of()).build()))
        .hasMessageContaining("column 'n' narrower than long").hasMessageContaining("column 'x' narrower than double");

    Schema written = IcebergSink.forRecords(sqlite().createTable(wide, List.of()).addNewColumns(true).build())
        .writeSchema();
    assertThat(written.findField("n").type()).isEqualTo(Types.LongType.get());
    assertThat(written.findField("x").type()).isEqualTo(Types.DoubleType.get());
    assertThat(written.findField("n").fieldId()).as("the same column, widened").isEqualTo(2);

    Schema changed = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "n", Types.StringType.get()));
    assertThatThrownBy(() -> IcebergSink.forRecords(sqlite().createTable(changed, List.of()).addNewColumns(true)
        .build())).hasMessage("Column 'n' is string in the staged schema but int in table jdbc-sqlite.db.events");
  }
}
