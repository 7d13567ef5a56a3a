package dev.lakecommit.ingest.verify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.ingest.source.FileSource;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The exactly-once audit on real Iceberg tables (Hadoop catalog on local disk). */
class AuditTest {
  private static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "ts", Types.LongType.get()));

  @TempDir
  Path dir;

  private Catalog catalog;
  private FileSource source;

  @BeforeEach
  void setUp() throws IOException {
    catalog = CatalogUtil.buildIcebergCatalog("audit", Map.of("type", "hadoop", "warehouse",
        dir.resolve("warehouse").toUri().toString()), new Configuration());
    StringBuilder lines = new StringBuilder();
    for (long id = 0; id < 100; id++) {
      lines.append("{\"id\": ").append(id).append(", \"ts\": ").append(id).append("}\n");
    }
    Files.createDirectories(dir.resolve("source"));
    Files.writeString(dir.resolve("source/events.jsonl"), lines);
    source = FileSource.of(dir.resolve("source").toString(), null, null, Map.of(), null);
  }

  @Test
  void aCleanTablePasses() throws IOException {
    Table table = table("clean");
    append(table, LongStream.range(0, 50));
    append(table, LongStream.range(50, 100));
    AuditReport report = Audit.run(source, table, "id", "ts", dir.resolve("spill"));
    assertThat(report).isEqualTo(new AuditReport(100, 100, 0, 0, 0, 0, "ts"));
    assertThat(report.passed()).isTrue();
    assertThat(report.toTable()).contains("| duplicate rate ", "0 keys of 100 rows", "0.0000 %", "PASSED");
  }

  @Test
  void aPlantedDuplicateAndAPlantedGapAreBothReported() throws IOException {
    Table table = table("broken");
    append(table, LongStream.range(0, 50));
    append(table, LongStream.range(49, 100).filter(id -> id != 70)); // 49 twice, 70 never
    AuditReport report = Audit.run(source, table, "id", null, dir.resolve("spill"));
    assertThat(report.sourceRows()).isEqualTo(100);
    assertThat(report.tableRows()).isEqualTo(100);
    assertThat(report.duplicateKeys()).isEqualTo(1);
    assertThat(report.lostKeys()).isEqualTo(1);
    assertThat(report.unexpectedKeys()).isZero();
    assertThat(report.duplicateRate()).isEqualTo(0.01);
    assertThat(report.lossRate()).isEqualTo(0.01);
    assertThat(report.passed()).isFalse();
    assertThat(report.toTable()).contains("| duplicate rate ", "| 1 key of 100 rows ", "| 1.0000 % ", "| FAIL ",
        "not measured", "FAILED: 1 duplicate key, 1 lost key");
    assertThat(report.toJson()).contains("\"duplicateKeys\" : 1", "\"lostKeys\" : 1", "\"duplicateRate\" : 0.01",
        "\"outOfOrderRows\" : null", "\"passed\" : false");
  }

  @Test
  void spillingToDiskGivesTheSameFigures() throws IOException {
    Table table = table("spilled");
    append(table, LongStream.range(0, 50));
    append(table, LongStream.range(49, 100).filter(id -> id != 70));
    append(table, LongStream.of(1000, 1001)); // not in the source
    Path spill = dir.resolve("spill");
    AuditReport inMemory = Audit.run(source, table, "id", null, spill);
    AuditReport spilled = Audit.run(source, table, "id", null, spill, 10);
    assertThat(spilled).isEqualTo(inMemory);
    assertThat(spilled.unexpectedKeys()).isEqualTo(2);
    try (Stream<Path> left = Files.list(spill)) {
      assertThat(left).as("spill files are removed").isEmpty();
    }
  }

  @Test
  void keyComparisonSpillsPastItsBoundAndRepartitions() throws IOException {
    try (KeyComparison keys = new KeyComparison(dir.resolve("spill"), 20)) {
      for (int i = 0; i < 1000; i++) {
        keys.addSource("k" + i);
        if (i != 7) {
          keys.addTable("k" + i);
        }
      }
      keys.addTable("k9");
      keys.addTable("k9");
      keys.addTable("x");
      assertThat(keys.spilled()).isTrue();
      assertThat(keys.compare()).isEqualTo(new KeyComparison.Counts(1, 1, 1));
    }
  }

  @Test
  void rowsCommittedLateAreOutOfOrder() throws IOException {
    Table table = table("late");
    append(table, LongStream.range(10, 20));   // max committed 19
    append(table, LongStream.of(5, 25));       // 5 is late
    append(table, LongStream.of(20, 30, 24));  // 20 and 24 are late (max committed 25)
    StringBuilder lines = new StringBuilder();
    LongStream.of(10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 5, 25, 20, 30, 24)
        .forEach(id -> lines.append("{\"id\": ").append(id).append(", \"ts\": ").append(id).append("}\n"));
    Files.writeString(dir.resolve("late.jsonl"), lines);
    FileSource lateSource = FileSource.of(dir.resolve("late.jsonl").toString(), null, null, Map.of(), null);
    AuditReport report = Audit.run(lateSource, table, "id", "ts", dir.resolve("spill"));
    assertThat(report.outOfOrderRows()).isEqualTo(3);
    assertThat(report.outOfOrderRate()).isEqualTo(3 / 15.0);
    assertThat(report.passed()).isTrue();
    assertThat(report.toTable()).contains("out-of-order rate (ts)", "3 rows of 15 rows", "over");
  }

  @Test
  void missingColumnsAreNamed() throws IOException {
    Table table = table("cols");
    assertThatThrownBy(() -> Audit.run(source, table, "key", null, dir.resolve("spill")))
        .hasMessage("The source " + dir.resolve("source") + " has no column 'key' (columns: id, ts)");
    assertThatThrownBy(() -> Audit.run(source, table, "id", "when", dir.resolve("spill")))
        .hasMessage("The table audit.db.cols has no column 'when' (columns: id, ts)");
  }

  private Table table(String name) {
    return catalog.createTable(TableIdentifier.of("db", name), SCHEMA, PartitionSpec.unpartitioned());
  }

  /** One snapshot appending the given keys (ts = key) in one Parquet file. */
  private static void append(Table table, LongStream ids) throws IOException {
    List<Record> rows = new ArrayList<>();
    ids.forEach(id -> {
      Record row = GenericRecord.create(SCHEMA);
      row.setField("id", id);
      row.setField("ts", id);
      rows.add(row);
    });
    DataWriter<Record> writer = Parquet.writeData(table.io().newOutputFile(
            table.locationProvider().newDataLocation("part-" + System.nanoTime() + ".parquet")))
        .forTable(table)
        .createWriterFunc(GenericParquetWriter::create)
        .withSpec(table.spec())
        .overwrite()
        .build();
    try (writer) {
      rows.forEach(writer::write);
    }
    DataFile file = writer.toDataFile();
    table.newAppend().appendFile(file).commit();
  }
}
