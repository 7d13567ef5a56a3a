package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.testing.AllTypes;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.io.File;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.apache.avro.file.DataFileReader;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.avro.Avro;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileAppender;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Staged files as a table commit sees them: added to an Iceberg table by {@link StagedFile#toDataFile} or by
 * appending the writer's own manifest, then read back with {@code IcebergGenerics}, with partition pruning over
 * every transform; and Avro input.
 */
class IcebergTableStagingTest {
  private static final JobId JOB = JobId.of("table-job");

  @TempDir Path dir;

  private final Configuration conf = FastLocalFileSystem.configuration();
  private final FileIO io = new HadoopFileIO(conf);

  /** Rows spread over about two years, so that every time transform sees many values. */
  private static List<Record> spreadRows() {
    List<Record> rows = new ArrayList<>();
    for (long k = 0; k < 120; k++) {
      rows.add(AllTypes.row(k * 163));
    }
    return rows;
  }

  private Table table(String name, PartitionSpec spec) {
    return new HadoopTables(conf)
        .create(AllTypes.SCHEMA, spec, Map.of("format-version", "2"), dir.resolve(name).toString());
  }

  private StagingManifest stage(Table table, List<Record> rows, boolean icebergManifest) throws IOException {
    StagingWriterConfig.Builder config =
        StagingWriterConfig.builder()
            .forTable(table)
            .io(io)
            .layout(StagingLayout.under(table.location() + "/data"));
    if (icebergManifest) {
      config.writeIcebergManifests(2);
    }
    try (StagingWriter<Record> writer =
        StagingWriter.forRecords(config.build(), new WriterContext(JOB, 0, 1, 0, 0))) {
      for (Record row : rows) {
        writer.write(row);
      }
      return writer.prepareCommit(1).orElseThrow();
    }
  }

  @Test
  void stagedFilesCommitToATableAndPruneCorrectlyByEveryTransform() throws IOException {
    List<Record> rows = spreadRows();
    // Each spec is checked with filters on its own source columns, so pruning by the staged partition values
    // is what decides which files are read.
    Map<PartitionSpec, List<Filter>> specs =
        Map.of(
            PartitionSpec.builderFor(AllTypes.SCHEMA).identity("flag").bucket("id", 4).truncate("dec", 5000)
                .truncate("s", 4).build(),
            List.of(
                new Filter(Expressions.equal("flag", true), r -> Boolean.TRUE.equals(r.getField("flag"))),
                new Filter(Expressions.equal("id", 163L * 31), r -> r.getField("id").equals(163L * 31)),
                new Filter(Expressions.lessThan("dec", new BigDecimal("0.00")),
                    r -> r.getField("dec") != null && ((BigDecimal) r.getField("dec")).signum() < 0),
                new Filter(Expressions.startsWith("s", "row-1"),
                    r -> r.getField("s") != null && ((String) r.getField("s")).startsWith("row-1"))),
            PartitionSpec.builderFor(AllTypes.SCHEMA).year("day").month("ts").build(),
            List.of(
                new Filter(Expressions.greaterThanOrEqual("day", "2025-03-01"),
                    r -> r.getField("day") != null && r.getField("day").toString().compareTo("2025-03-01") >= 0),
                new Filter(Expressions.lessThan("ts", "2024-09-15T00:00:00"),
                    r -> r.getField("ts") != null && r.getField("ts").toString().compareTo("2024-09-15T00:00") < 0)),
            PartitionSpec.builderFor(AllTypes.SCHEMA).hour("tstz").build(),
            List.of(
                new Filter(Expressions.isNull("tstz"), r -> r.getField("tstz") == null),
                new Filter(Expressions.greaterThan("tstz", "2025-01-01T10:00:00+00:00"),
                    r -> r.getField("tstz") != null
                        && ((java.time.OffsetDateTime) r.getField("tstz")).isAfter(
                            java.time.OffsetDateTime.parse("2025-01-01T10:00:00Z")))));
    int t = 0;
    for (Map.Entry<PartitionSpec, List<Filter>> spec : specs.entrySet()) {
      Table table = table("t" + t++, spec.getKey());
      StagingManifest manifest = stage(table, rows, false);
      AppendFiles append = table.newAppend();
      manifest.files().forEach(file -> append.appendFile(file.toDataFile(table.spec())));
      append.commit();

      assertThat(read(table, Expressions.alwaysTrue())).containsExactlyInAnyOrderElementsOf(rows);
      for (Filter filter : spec.getValue()) {
        assertPrunes(table, rows, filter.expression(), filter.matches());
      }
    }
  }

  private record Filter(Expression expression, Predicate<Record> matches) {}

  /** The filter returns exactly the matching rows, and fewer files are scanned than the table has. */
  private static void assertPrunes(Table table, List<Record> rows, Expression filter, Predicate<Record> matches)
      throws IOException {
    List<Record> expected = rows.stream().filter(matches).toList();
    assertThat(read(table, filter)).as("rows matching %s", filter).containsExactlyInAnyOrderElementsOf(expected);
    assertThat(countFiles(table, filter)).as("files scanned for %s", filter)
        .isLessThan(countFiles(table, Expressions.alwaysTrue()));
  }

  private static List<Record> read(Table table, Expression filter) throws IOException {
    List<Record> result = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).where(filter).build()) {
      records.forEach(result::add);
    }
    return result;
  }

  private static int countFiles(Table table, Expression filter) throws IOException {
    int files = 0;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().filter(filter).planFiles()) {
      for (FileScanTask ignored : tasks) {
        files++;
      }
    }
    return files;
  }

  @Test
  void partitionFiltersReallyPrune() throws IOException {
    Table table = table("pruned", PartitionSpec.builderFor(AllTypes.SCHEMA).hour("tstz").build());
    StagingManifest manifest = stage(table, spreadRows(), false);
    AppendFiles append = table.newAppend();
    manifest.files().forEach(file -> append.appendFile(file.toDataFile(table.spec())));
    append.commit();
    Expression firstHour =
        Expressions.and(
            Expressions.greaterThanOrEqual("tstz", "2024-01-01T00:00:00+00:00"),
            Expressions.lessThan("tstz", "2024-01-01T01:00:00+00:00"));
    assertThat(countFiles(table, firstHour)).isEqualTo(1);
    assertThat(read(table, firstHour)).extracting(r -> r.getField("id")).containsExactly(0L);
    assertThat(countFiles(table, Expressions.alwaysTrue())).isEqualTo(manifest.files().size()).isGreaterThan(90);
  }

  @Test
  void theWritersIcebergManifestIsAppendedAsIs() throws IOException {
    Table table =
        table("manifest", PartitionSpec.builderFor(AllTypes.SCHEMA).identity("flag").bucket("id", 3).build());
    List<Record> rows = spreadRows();
    StagingManifest manifest = stage(table, rows, true);
    IcebergManifest written = manifest.icebergManifest().orElseThrow();
    assertThat(written.path()).startsWith(table.location() + "/data/table-job/ckpt-1/");
    ManifestFile manifestFile = written.manifestFile();
    assertThat(manifestFile.addedFilesCount()).isEqualTo(manifest.files().size());
    assertThat(manifestFile.addedRowsCount()).isEqualTo(rows.size());
    assertThat(manifestFile.partitionSpecId()).isEqualTo(table.spec().specId());
    assertThat(manifestFile.length()).isEqualTo(io.newInputFile(written.path()).getLength());

    table.newFastAppend().appendManifest(manifestFile).commit();
    // Appended as it is: the snapshot lists the writer's manifest itself, with exactly the staged files.
    List<ManifestFile> committed = table.currentSnapshot().dataManifests(table.io());
    assertThat(committed).extracting(ManifestFile::path).containsExactly(written.path());
    List<String> listed = new ArrayList<>();
    try (ManifestReader<DataFile> reader = ManifestFiles.read(committed.get(0), io, table.specs())) {
      reader.forEach(file -> listed.add(file.location()));
    }
    assertThat(listed).containsExactlyInAnyOrderElementsOf(
        manifest.files().stream().map(StagedFile::path).toList());
    assertThat(read(table, Expressions.alwaysTrue())).containsExactlyInAnyOrderElementsOf(rows);
    assertThat(read(table, Expressions.equal("flag", false)))
        .containsExactlyInAnyOrderElementsOf(
            rows.stream().filter(r -> Boolean.FALSE.equals(r.getField("flag"))).toList());
  }

  @Test
  void aWriterWritesNoManifestAtACheckpointWithFewerFilesThanTheMinimum() throws IOException {
    Table table = table("min-files", PartitionSpec.builderFor(AllTypes.SCHEMA).bucket("id", 4).build());
    StagingWriterConfig config = StagingWriterConfig.builder().forTable(table).io(io)
        .layout(StagingLayout.under(table.location() + "/data")).writeIcebergManifests(2, 4).build();
    String manifests = table.location() + "/data/table-job";
    try (StagingWriter<Record> writer = StagingWriter.forRecords(config, new WriterContext(JOB, 0, 1, 0, 0))) {
      // checkpoint 1: ids 0..2 land in at most 3 of the 4 buckets, so fewer files than the minimum
      for (long id = 0; id < 3; id++) {
        writer.write(AllTypes.rows(id, id + 1).get(0));
      }
      StagingManifest few = writer.prepareCommit(1).orElseThrow();
      assertThat(few.files()).hasSizeLessThan(4);
      assertThat(few.icebergManifest()).isEmpty();
      // checkpoint 2: every bucket
      List<Record> rows = AllTypes.rows(100, 200);
      for (Record row : rows) {
        writer.write(row);
      }
      StagingManifest many = writer.prepareCommit(2).orElseThrow();
      assertThat(many.files()).hasSize(4);
      assertThat(many.icebergManifest()).get().satisfies(m -> assertThat(m.addedFilesCount()).isEqualTo(4));

      AppendFiles append = table.newFastAppend();
      few.files().forEach(file -> append.appendFile(file.toDataFile(table.spec())));
      append.appendManifest(many.icebergManifest().get().manifestFile());
      append.commit();
      assertThat(read(table, Expressions.alwaysTrue())).hasSize(3 + rows.size());
    }
    assertThat(listManifests(manifests)).as("only checkpoint 2 wrote a manifest").hasSize(1);
  }

  private static List<Path> listManifests(String location) throws IOException {
    try (var paths = java.nio.file.Files.walk(Path.of(java.net.URI.create(location).getPath()))) {
      return paths.filter(p -> p.getFileName().toString().endsWith("-manifest.avro")).toList();
    }
  }

  @Test
  void avroRecordsAsReadFromAnAvroFileAreStagedAgainstTheTableSchema() throws IOException {
    List<Record> rows = AllTypes.rows(0, 300);
    File avroFile = dir.resolve("input.avro").toFile();
    try (FileAppender<Record> appender =
        Avro.write(org.apache.iceberg.Files.localOutput(avroFile))
            .schema(AllTypes.SCHEMA)
            .createWriterFunc(org.apache.iceberg.data.avro.DataWriter::create)
            .named("row")
            .build()) {
      appender.addAll(rows);
    }
    List<org.apache.avro.generic.GenericRecord> avroRows = new ArrayList<>();
    try (DataFileReader<org.apache.avro.generic.GenericRecord> reader =
        new DataFileReader<>(avroFile, new GenericDatumReader<>())) {
      reader.forEach(avroRows::add);
    }

    Table table = table("avro", PartitionSpec.builderFor(AllTypes.SCHEMA).month("ts").build());
    StagingWriterConfig config =
        StagingWriterConfig.builder().forTable(table).io(io).layout(StagingLayout.under(table.location())).build();
    StagingManifest manifest;
    try (StagingWriter<org.apache.avro.generic.GenericRecord> writer =
        StagingWriter.forAvro(config, new WriterContext(JOB, 2, 3, 0, 0))) {
      for (org.apache.avro.generic.GenericRecord avro : avroRows) {
        writer.write(avro);
      }
      org.apache.avro.generic.GenericRecord bad = avroRows.get(0);
      bad.put("i", "forty-two");
      assertThatThrownBy(() -> writer.write(bad))
          .isInstanceOf(InvalidRecordException.class)
          .hasMessageContaining("Record 300 of writer 2")
          .hasMessageContaining("field 'i'");
      manifest = writer.prepareCommit(1).orElseThrow();
    }
    AppendFiles append = table.newAppend();
    manifest.files().forEach(file -> append.appendFile(file.toDataFile(table.spec())));
    append.commit();
    assertThat(read(table, Expressions.alwaysTrue())).containsExactlyInAnyOrderElementsOf(rows);
  }

  @Test
  void toDataFileRefusesAnotherSpec() throws IOException {
    Table table = table("spec", PartitionSpec.builderFor(AllTypes.SCHEMA).identity("flag").build());
    StagedFile file = stage(table, AllTypes.rows(0, 10), false).files().get(0);
    PartitionSpec other = PartitionSpec.builderFor(AllTypes.SCHEMA).withSpecId(3).identity("flag").build();
    assertThatThrownBy(() -> file.toDataFile(other))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("partition spec 0")
        .hasMessageContaining("spec 3");
  }
}
