package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Schema drift (issue 15, point 2): a column that first appears after the sampled rows or in a later file is never
 * dropped. A table the run creates gets every input column; an existing table gets new optional columns and
 * widened types with {@code --add-new-columns}, and without it the job stops naming the column, file and line.
 */
class SchemaDriftTest {
  @TempDir Path dir;

  private Path wh() {
    return dir.resolve("wh");
  }

  static Path jsonLines(Path file, int from, int to, IntFunction<String> line) throws IOException {
    Files.createDirectories(file.getParent());
    try (BufferedWriter out = Files.newBufferedWriter(file)) {
      for (int i = from; i < to; i++) {
        out.write(line.apply(i));
        out.write('\n');
      }
    }
    return file;
  }

  private CliRun ingest(Path input, String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString(), "--table", "drift.events",
        "--warehouse", wh().toString(), "--checkpoint-every-records", "4000"));
    args.addAll(List.of(extra));
    return CliRun.of(args.toArray(String[]::new));
  }

  private CliRun verify(String source) {
    return CliRun.of("verify", "--source", source, "--table", "drift.events", "--warehouse", wh().toString(),
        "--key", "id", "--json");
  }

  private Catalog catalog() {
    return CatalogUtil.buildIcebergCatalog("lakecommit", Map.of("type", "jdbc",
        "uri", "jdbc:sqlite:" + wh().toAbsolutePath().resolve("catalog.db"),
        "warehouse", wh().toAbsolutePath().toUri().toString(), "jdbc.schema-version", "V1"),
        new org.apache.hadoop.conf.Configuration());
  }

  private Table table() {
    return catalog().loadTable(TableIdentifier.of("drift", "events"));
  }

  /** Column values by id. */
  private Map<Long, Object> column(String name) throws IOException {
    Map<Long, Object> values = new HashMap<>();
    try (CloseableIterable<Record> rows = IcebergGenerics.read(table()).build()) {
      for (Record row : rows) {
        assertThat(values.put((Long) row.getField("id"), row.getField(name))).as("duplicate").isNull();
      }
    }
    return values;
  }

  private static void assertAudited(CliRun verify) {
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
  }

  @Test
  void aColumnFirstSeenAtRow15001IsKeptInATableTheRunCreates() throws Exception {
    Path input = jsonLines(dir.resolve("in/a.jsonl"), 0, 20_000, i -> i < 15_000
        ? "{\"id\": " + i + ", \"name\": \"n" + i + "\"}"
        : "{\"id\": " + i + ", \"name\": \"n" + i + "\", \"late\": " + (i * 2) + "}");

    CliRun run = ingest(input);

    assertThat(run.exitCode()).as(run.toString()).isZero();
    assertThat(table().schema().findField("late")).isNotNull();
    assertThat(table().schema().findField("late").type()).isEqualTo(Types.LongType.get());
    Map<Long, Object> late = column("late");
    assertThat(late).hasSize(20_000);
    assertThat(late.get(15_000L)).isEqualTo(30_000L);
    assertThat(late.get(19_999L)).isEqualTo(39_998L);
    assertThat(late.get(14_999L)).isNull();
    assertAudited(verify(input.toString()));
  }

  @Test
  void aColumnNewInALaterFileStopsTheJobNamingColumnFileAndLineUnlessAdded() throws Exception {
    Path day1 = jsonLines(dir.resolve("day1/a.jsonl"), 0, 5_000, i -> "{\"id\": " + i + ", \"name\": \"n" + i + "\"}");
    assertThat(ingest(day1).exitCode()).isZero();
    long snapshot = table().currentSnapshot().snapshotId();
    Path day2 = jsonLines(dir.resolve("day2/a.jsonl"), 5_000, 10_000, i -> i < 9_000
        ? "{\"id\": " + i + ", \"name\": \"n" + i + "\"}"
        : "{\"id\": " + i + ", \"name\": \"n" + i + "\", \"coupon\": \"c" + i + "\"}");

    CliRun stopped = ingest(day2);

    assertThat(stopped.exitCode()).as("usage: the command must change; " + stopped).isEqualTo(2);
    assertThat(stopped.err()).contains("'coupon'").contains(day2 + " line 4001").contains("--add-new-columns")
        .doesNotContain("addNewColumns");
    assertThat(table().currentSnapshot().snapshotId()).as("nothing committed").isEqualTo(snapshot);
    assertThat(table().schema().findField("coupon")).isNull();

    CliRun added = ingest(day2, "--add-new-columns");

    assertThat(added.exitCode()).as(added.toString()).isZero();
    assertThat(table().schema().findField("coupon").isOptional()).isTrue();
    Map<Long, Object> coupon = column("coupon");
    assertThat(coupon).hasSize(10_000);
    assertThat(coupon.get(9_500L)).isEqualTo("c9500");
    assertThat(coupon.get(100L)).isNull();
    assertAudited(verify(dir.resolve("day*/a.jsonl").toString()));
  }

  @Test
  void aCsvFileWithANewHeaderColumnIsCaughtToo() throws Exception {
    Path day1 = Files.createDirectories(dir.resolve("day1")).resolve("a.csv");
    Files.writeString(day1, "id,name\n1,a\n2,b\n");
    assertThat(ingest(day1).exitCode()).isZero();
    Path day2 = Files.createDirectories(dir.resolve("day2")).resolve("a.csv");
    Files.writeString(day2, "id,name,score\n3,c,1.5\n4,d,\n");

    CliRun stopped = ingest(day2);
    assertThat(stopped.exitCode()).as("usage: the command must change; " + stopped).isEqualTo(2);
    assertThat(stopped.err()).contains("'score'").contains(day2 + " line 1").contains("--add-new-columns");

    assertThat(ingest(day2, "--add-new-columns").exitCode()).isZero();
    assertThat(table().schema().findField("score").type()).isEqualTo(Types.DoubleType.get());
    assertThat(column("score")).containsEntry(3L, 1.5).containsEntry(4L, null).containsEntry(1L, null);
    assertAudited(verify(dir.resolve("day*/a.csv").toString()));
  }

  @Test
  void intWidensToLongWithTheOptionAndOtherTypeChangesStopTheJob() throws Exception {
    Path day1 = jsonLines(dir.resolve("day1/a.jsonl"), 0, 100, i -> "{\"id\": " + i + ", \"n\": " + i + "}");
    assertThat(ingest(day1, "--schema", "id long, n int").exitCode()).isZero();
    Path day2 = jsonLines(dir.resolve("day2/a.jsonl"), 100, 200,
        i -> "{\"id\": " + i + ", \"n\": " + (3_000_000_000L + i) + "}");

    CliRun stopped = ingest(day2);
    assertThat(stopped.exitCode()).as("usage: the command must change; " + stopped).isEqualTo(2);
    assertThat(stopped.err()).contains("Column 'n' is int in table drift.events but long in the input")
        .contains(day2 + " line 1").contains("--add-new-columns");

    CliRun widened = ingest(day2, "--add-new-columns");
    assertThat(widened.exitCode()).as(widened.toString()).isZero();
    assertThat(table().schema().findField("n").type()).isEqualTo(Types.LongType.get());
    assertThat(column("n")).containsEntry(5L, 5L).containsEntry(150L, 3_000_000_150L);

    Path day3 = jsonLines(dir.resolve("day3/a.jsonl"), 200, 210, i -> "{\"id\": " + i + ", \"n\": \"x" + i + "\"}");
    CliRun changed = ingest(day3, "--add-new-columns");
    assertThat(changed.exitCode()).as(changed.toString()).isNotZero();
    assertThat(changed.err()).contains("Column 'n' is long in table drift.events but string in the input")
        .contains(day3 + " line 1").contains("can only widen");
    assertAudited(verify(dir.resolve("day{1,2}/a.jsonl").toString()));
  }

  /**
   * A column the table's partitions are computed from widens too (Iceberg allows it: an int and a long of the same
   * value fall into the same identity, bucket and truncate partition): the partitions of both days' rows are read
   * back, and the audit is exact.
   */
  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(strings = {"n", "bucket(4, n)", "truncate(10, n)"})
  void aPartitionSourceColumnWidensToo(String partitionBy) throws Exception {
    Path day1 = jsonLines(dir.resolve("day1/a.jsonl"), 0, 100, i -> "{\"id\": " + i + ", \"n\": " + i + "}");
    CliRun first = ingest(day1, "--schema", "id long, n int", "--partition-by", partitionBy);
    assertThat(first.exitCode()).as(first.toString()).isZero();
    Path day2 = jsonLines(dir.resolve("day2/a.jsonl"), 100, 200,
        i -> "{\"id\": " + i + ", \"n\": " + (3_000_000_000L + i) + "}");

    CliRun widened = ingest(day2, "--add-new-columns");
    assertThat(widened.exitCode()).as(widened.toString()).isZero();
    assertThat(table().schema().findField("n").type()).isEqualTo(Types.LongType.get());
    assertThat(column("n")).hasSize(200).containsEntry(5L, 5L).containsEntry(150L, 3_000_000_150L);
    assertThat(table().spec().fields()).hasSize(1);
    // a query on the column prunes by the files' partition values: they must be the rows' own
    for (long id : new long[] {5, 150}) {
      long n = id < 100 ? id : 3_000_000_000L + id;
      List<Long> found = new ArrayList<>();
      try (CloseableIterable<Record> rows = IcebergGenerics.read(table())
          .where(org.apache.iceberg.expressions.Expressions.equal("n", n)).build()) {
        rows.forEach(row -> found.add((Long) row.getField("id")));
      }
      assertThat(found).as("rows where n = %s, pruned by partition", n).containsExactly(id);
    }
    assertAudited(verify(dir.resolve("day{1,2}/a.jsonl").toString()));
  }

  /**
   * A run that fails before its first data commit (its checkpoint directory cannot be created) leaves the table as
   * it was: the new column is added by the commit that adds the first rows, in the same transaction, never alone.
   * The same command again adds column and rows, every row once, and the audit is exact.
   */
  @Test
  void aRunThatFailsBeforeItsFirstCommitLeavesNoColumnWithoutDataAndTheRerunLosesAndDuplicatesNothing()
      throws Exception {
    Path day1 = jsonLines(dir.resolve("day1/a.jsonl"), 0, 3_000, i -> "{\"id\": " + i + "}");
    assertThat(ingest(day1).exitCode()).isZero();
    long snapshot = table().currentSnapshot().snapshotId();
    Path day2 = jsonLines(dir.resolve("day2/a.jsonl"), 3_000, 9_000, i -> i < 7_000
        ? "{\"id\": " + i + "}" : "{\"id\": " + i + ", \"extra\": true}");
    Path checkpoints = dir.resolve("ckpt");
    Files.writeString(checkpoints, "a file where the checkpoint directory should be");
    String[] args = {"--add-new-columns", "--job-id", "day2", "--checkpoint-dir", checkpoints.resolve("day2").toString()};

    CliRun crashed = ingest(day2, args);

    assertThat(crashed.exitCode()).as(crashed.toString()).isNotZero();
    assertThat(table().schema().findField("extra")).as("no schema change without the data").isNull();
    assertThat(table().currentSnapshot().snapshotId()).as("no data commit").isEqualTo(snapshot);

    Files.delete(checkpoints);
    CliRun restarted = ingest(day2, args);

    assertThat(restarted.exitCode()).as(restarted.toString()).isZero();
    assertThat(column("extra")).hasSize(9_000).containsEntry(8_000L, true).containsEntry(5_000L, null);
    Table table = table();
    for (org.apache.iceberg.Snapshot committed : table.snapshots()) {
      boolean ofDay2 = "day2".equals(committed.summary().get(dev.lakecommit.core.CommitId.JOB_ID_KEY));
      assertThat(table.schemas().get(committed.schemaId()).findField("extra") != null)
          .as("snapshot %s has the column exactly if it holds rows of day 2", committed.snapshotId())
          .isEqualTo(ofDay2);
    }
    assertAudited(verify(dir.resolve("day*/a.jsonl").toString()));
    assertThat(ingest(day2, args).out()).contains("Nothing new to commit");
  }

  /**
   * Was: a field new inside a struct column (address.zip from row 4,001 of day 2) was not read, without a word. Now
   * the job stops naming the field, file and line; with {@code --add-new-columns} the field is added to the struct
   * column (optional) and its values land; a table the run creates gets it too.
   */
  @Test
  void aFieldNewInsideAStructColumnStopsTheJobUnlessAddedAndItsValuesLand() throws Exception {
    Path day1 = jsonLines(dir.resolve("day1/a.jsonl"), 0, 3_000,
        i -> "{\"id\": " + i + ", \"address\": {\"city\": \"c" + i + "\"}}");
    assertThat(ingest(day1).exitCode()).isZero();
    long snapshot = table().currentSnapshot().snapshotId();
    Path day2 = jsonLines(dir.resolve("day2/a.jsonl"), 3_000, 9_000, i -> i < 7_000
        ? "{\"id\": " + i + ", \"address\": {\"city\": \"c" + i + "\"}}"
        : "{\"id\": " + i + ", \"address\": {\"city\": \"c" + i + "\", \"zip\": " + i + "}}");

    CliRun stopped = ingest(day2);
    assertThat(stopped.exitCode()).as("usage: the command must change; " + stopped).isEqualTo(2);
    assertThat(stopped.err()).contains("Input field 'address.zip'", day2 + " line 4001", "--add-new-columns");
    assertThat(table().currentSnapshot().snapshotId()).as("nothing committed").isEqualTo(snapshot);

    CliRun added = ingest(day2, "--add-new-columns");
    assertThat(added.exitCode()).as(added.toString()).isZero();
    Types.NestedField zip = table().schema().findField("address.zip");
    assertThat(zip).isNotNull();
    assertThat(zip.isOptional()).isTrue();
    assertThat(zip.type()).isEqualTo(Types.LongType.get());
    Map<Long, Object> address = column("address");
    assertThat(address).hasSize(9_000);
    assertThat(((Record) address.get(8_000L)).getField("zip")).isEqualTo(8_000L);
    assertThat(((Record) address.get(8_000L)).getField("city")).isEqualTo("c8000");
    assertThat(((Record) address.get(5_000L)).getField("zip")).isNull();
    assertAudited(verify(dir.resolve("day*/a.jsonl").toString()));

    Path fresh = jsonLines(dir.resolve("fresh/a.jsonl"), 0, 3_000, i -> i < 2_000
        ? "{\"id\": " + i + ", \"address\": {\"city\": \"c" + i + "\"}}"
        : "{\"id\": " + i + ", \"address\": {\"city\": \"c" + i + "\", \"zip\": \"z" + i + "\"}}");
    CliRun created = CliRun.of("ingest", "--input", fresh.toString(), "--table", "drift.fresh", "--warehouse",
        wh().toString());
    assertThat(created.exitCode()).as(created.toString()).isZero();
    Table table = catalog().loadTable(TableIdentifier.of("drift", "fresh"));
    assertThat(table.schema().findField("address.zip")).as("past the sample, in a table the run creates")
        .isNotNull();
  }
}
