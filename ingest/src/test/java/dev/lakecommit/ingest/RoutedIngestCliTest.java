package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ingest --route-by}: the README's sample routed to a table per region of the embedded catalog, one atomic
 * cut per checkpoint; a rerun commits nothing; {@code cut} names each table's snapshot of the last cut and the SQL
 * that reads it; mistakes are usage errors naming the option, and a record that names no table stops the job
 * naming it.
 */
class RoutedIngestCliTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  private String[] ingest(Path input, String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString(), "--table",
        "demo.orders_${region}", "--route-by", "region", "--warehouse", dir.resolve("wh").toString(),
        "--checkpoint-every-records", "500"));
    args.addAll(List.of(extra));
    return args.toArray(String[]::new);
  }

  private Catalog catalog() {
    Path wh = dir.resolve("wh").toAbsolutePath();
    return CatalogUtil.buildIcebergCatalog("lakecommit", Map.of("type", "jdbc", "uri", "jdbc:sqlite:"
        + wh.resolve("catalog.db"), "warehouse", wh.toUri().toString(), "jdbc.schema-version", "V1"),
        new org.apache.hadoop.conf.Configuration());
  }

  private static Map<String, Integer> regionsOfTheSample() throws Exception {
    Map<String, Integer> regions = new TreeMap<>();
    for (String line : Files.readAllLines(CliTest.SAMPLE)) {
      regions.merge(JSON.readTree(line).get("region").asText(), 1, Integer::sum);
    }
    return regions;
  }

  @Test
  void theSampleRoutedByRegionLandsOnceInATablePerRegionAndItsLastCutNamesThemAll() throws Exception {
    CliRun first = CliRun.of(ingest(CliTest.SAMPLE));
    assertThat(first.exitCode()).as(first.toString()).isZero();
    assertThat(first.out()).contains("one atomic commit per cut")
        .contains("Committed 2,000 rows in 4 checkpoint(s) (4 cut(s)");
    Matcher job = Pattern.compile("as job (\\S+)").matcher(first.out());
    assertThat(job.find()).isTrue();

    Map<String, Integer> regions = regionsOfTheSample();
    assertThat(regions).hasSizeGreaterThan(2);
    Catalog catalog = catalog();
    Map<String, Long> snapshots = new HashMap<>();
    for (Map.Entry<String, Integer> region : regions.entrySet()) {
      Table table = catalog.loadTable(TableIdentifier.of("demo", "orders_" + region.getKey()));
      List<Long> ids = new ArrayList<>();
      try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
        rows.forEach(row -> {
          assertThat(row.getField("region")).isEqualTo(region.getKey());
          ids.add((Long) row.getField("order_id"));
        });
      }
      assertThat(ids).as(region.getKey()).hasSize(region.getValue()).doesNotHaveDuplicates();
      snapshots.put(table.name().substring(table.name().indexOf('.') + 1), table.currentSnapshot().snapshotId());
    }

    CliRun verify = CliRun.of("verify", "--source", CliTest.SAMPLE.toString(), "--table", "demo.orders_${region}",
        "--warehouse", dir.resolve("wh").toString(), "--key", "order_id", "--event-time", "ordered_at", "--json");
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("\"sourceRows\" : 2000").contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0").contains("\"tableRows\" : 2000");

    CliRun atCut = CliRun.of("verify", "--source", CliTest.SAMPLE.toString(), "--table", "demo.orders_${region}",
        "--warehouse", dir.resolve("wh").toString(), "--key", "order_id", "--job-id", job.group(1));
    assertThat(atCut.exitCode()).as(atCut.toString()).isZero();
    assertThat(atCut.out()).contains("As of the last cut of job " + job.group(1) + ": checkpoint 4");

    CliRun second = CliRun.of(ingest(CliTest.SAMPLE));
    assertThat(second.exitCode()).as(second.toString()).isZero();
    assertThat(second.out()).contains("Nothing new to commit").contains("checkpoint 4");

    CliRun cut = CliRun.of("cut", "--job-id", job.group(1), "--table", "demo.orders_${region}", "--warehouse",
        dir.resolve("wh").toString(), "--json");
    assertThat(cut.exitCode()).as(cut.toString()).isZero();
    JsonNode report = JSON.readTree(cut.out());
    assertThat(report.get("checkpoint").asLong()).isEqualTo(4);
    assertThat(report.get("tables")).hasSize(regions.size());
    for (JsonNode table : report.get("tables")) {
      assertThat(table.get("snapshot").asLong()).isEqualTo(snapshots.get(table.get("table").asText()));
      assertThat(table.get("checkpoint").asLong()).isBetween(1L, 4L);
    }
    assertThat(report.get("spark-sql").get(0).asText()).startsWith("SELECT * FROM lakecommit.demo.")
        .contains(" VERSION AS OF ");
    CliRun text = CliRun.of("cut", "--job-id", job.group(1), "--table", "demo.orders_${region}", "--warehouse",
        dir.resolve("wh").toString());
    assertThat(text.out()).contains("the last cut is checkpoint 4 over " + regions.size() + " table(s)")
        .contains("`orders_eu-west`");
    CliRun status = CliRun.of("status", "--table", "demo.orders_${region}", "--warehouse",
        dir.resolve("wh").toString());
    assertThat(status.exitCode()).isEqualTo(2);
    assertThat(status.err()).contains("--job-id");
    CliRun routed = CliRun.of("status", "--table", "demo.orders_${region}", "--warehouse",
        dir.resolve("wh").toString(), "--job-id", job.group(1), "--json");
    assertThat(routed.exitCode()).as(routed.toString()).isZero();
    JsonNode whole = JSON.readTree(routed.out());
    assertThat(whole.get("last-cut").asLong()).isEqualTo(4);
    assertThat(whole.get("tables")).hasSize(regions.size());
    for (JsonNode table : whole.get("tables")) {
      assertThat(table.get("snapshot").asLong()).isEqualTo(snapshots.get(table.get("table").asText()));
    }
    assertThat(whole.get("job").get("latest-checkpoint").asLong()).isEqualTo(4);
    assertThat(whole.get("job").get("pending-checkpoints")).isEmpty();
    CliRun routedText = CliRun.of("status", "--table", "demo.orders_${region}", "--warehouse",
        dir.resolve("wh").toString(), "--job-id", job.group(1));
    assertThat(routedText.out()).contains("the last cut is checkpoint 4 over " + regions.size() + " table(s)")
        .contains("demo.orders_eu-west");
    CliRun oneTable = CliRun.of("status", "--table", "demo.orders_eu-west", "--warehouse",
        dir.resolve("wh").toString(), "--json");
    assertThat(oneTable.exitCode()).as(oneTable.toString()).isZero();
    assertThat(oneTable.out()).contains(job.group(1));
  }

  /**
   * {@code --upsert-key} with {@code --route-by}: every table written by the key, each checkpoint one cut of row
   * deltas; three rounds of the same keys leave each region's table with the newest row of each of its keys once,
   * and a rerun commits nothing.
   */
  @Test
  void upsertsByKeyLeaveEachRoutedTableWithTheNewestRowOfEachKey() throws Exception {
    Path input = dir.resolve("changes.jsonl");
    StringBuilder lines = new StringBuilder();
    for (int round = 0; round < 3; round++) {
      for (int id = 0; id < 300; id++) {
        lines.append("{\"order_id\": ").append(id).append(", \"region\": \"r").append(id % 3)
            .append("\", \"v\": ").append(round * 1000 + id).append("}\n");
      }
    }
    Files.writeString(input, lines);
    String[] args = ingest(input, "--schema", "order_id long not null, region string, v long", "--upsert-key",
        "order_id", "--parallelism", "2", "--job-id", "routed-upserts");
    CliRun run = CliRun.of(args);
    assertThat(run.exitCode()).as(run.toString()).isZero();
    assertThat(run.out()).contains("Committed 900 rows in 2 checkpoint(s) (2 cut(s)");
    assertThat(CliRun.of(args).out()).contains("Nothing new to commit");

    Catalog catalog = catalog();
    for (int region = 0; region < 3; region++) {
      Table table = catalog.loadTable(TableIdentifier.of("demo", "orders_r" + region));
      assertThat(table.schema().identifierFieldNames()).containsExactly("order_id");
      Map<Long, Long> rows = new HashMap<>();
      try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
        for (Record record : records) {
          assertThat(rows.put((Long) record.getField("order_id"), (Long) record.getField("v")))
              .as("key %s once in %s", record.getField("order_id"), table.name()).isNull();
        }
      }
      assertThat(rows).as(table.name()).hasSize(100);
      rows.forEach((id, v) -> assertThat(v).as("newest value of key %s", id).isEqualTo(2000 + id));
    }
  }

  @Test
  void mistakesAreUsageErrorsNamingTheOptionAndARecordWithoutATableStopsTheJobNamingIt() throws Exception {
    CliRun noPlaceholder = CliRun.of("ingest", "--input", CliTest.SAMPLE.toString(), "--table", "demo.orders",
        "--route-by", "region", "--warehouse", dir.resolve("wh").toString());
    assertThat(noPlaceholder.exitCode()).isEqualTo(2);
    assertThat(noPlaceholder.err()).contains("--table").contains("${region}");

    CliRun noColumn = CliRun.of("ingest", "--input", CliTest.SAMPLE.toString(), "--table", "demo.o_${zone}",
        "--route-by", "zone", "--warehouse", dir.resolve("wh").toString());
    assertThat(noColumn.exitCode()).isEqualTo(2);
    assertThat(noColumn.err()).contains("--route-by").contains("zone");

    CliRun optionalKey = CliRun.of(ingest(CliTest.SAMPLE, "--upsert-key", "order_id", "--job-id", "optional-key"));
    assertThat(optionalKey.exitCode()).as(optionalKey.toString()).isEqualTo(3);
    assertThat(optionalKey.err()).contains("Invalid upsert key [order_id]").contains("not a required");

    CliRun branch = CliRun.of(ingest(CliTest.SAMPLE, "--branch", "audit"));
    assertThat(branch.exitCode()).isEqualTo(2);
    assertThat(branch.err()).contains("--branch");

    Path bad = dir.resolve("bad.jsonl");
    Files.writeString(bad, "{\"order_id\": 1, \"region\": \"eu-west\"}\n{\"order_id\": 2, \"region\": \"a b\"}\n");
    CliRun badValue = CliRun.of(ingest(bad));
    assertThat(badValue.exitCode()).as(badValue.toString()).isEqualTo(3);
    assertThat(badValue.err()).contains("orders_a b").contains("region");
    Files.writeString(bad, "{\"order_id\": 1, \"region\": \"eu.west\"}\n");
    CliRun dotted = CliRun.of(ingest(bad, "--job-id", "dotted"));
    assertThat(dotted.exitCode()).as(dotted.toString()).isEqualTo(3);
    assertThat(dotted.err()).contains("eu.west").contains("no table name");

    CliRun hiveOption = CliRun.of(ingest(CliTest.SAMPLE, "--success-files"));
    assertThat(hiveOption.exitCode()).isEqualTo(2);
    assertThat(hiveOption.err()).contains("--success-files");
  }

  /**
   * A later input with a column its tables lack: without {@code --add-new-columns} the job stops naming the table,
   * the column and the option, and nothing of it is committed; with it, the tables it writes evolve in its cuts and
   * the earlier rows read back without a value in the new column.
   */
  @Test
  void aNewColumnStopsTheJobUnlessAddNewColumnsEvolvesTheTablesInTheirCuts() throws Exception {
    Path first = dir.resolve("first.jsonl");
    Files.writeString(first, "{\"order_id\": 1, \"region\": \"eu\", \"amount\": 5}\n"
        + "{\"order_id\": 2, \"region\": \"us\", \"amount\": 7}\n");
    CliRun one = CliRun.of(ingest(first, "--job-id", "evolve-1"));
    assertThat(one.exitCode()).as(one.toString()).isZero();

    Map<String, Long> before = new TreeMap<>();
    for (String region : List.of("eu", "us")) {
      before.put(region, catalog().loadTable(TableIdentifier.of("demo", "orders_" + region)).currentSnapshot()
          .snapshotId());
    }
    Path later = dir.resolve("later.jsonl");
    Files.writeString(later, "{\"order_id\": 3, \"region\": \"eu\", \"amount\": 9, \"note\": \"gift\"}\n"
        + "{\"order_id\": 4, \"region\": \"us\", \"amount\": 3, \"note\": \"rush\"}\n");
    CliRun refused = CliRun.of(ingest(later, "--job-id", "evolve-2"));
    assertThat(refused.exitCode()).as(refused.toString()).isEqualTo(3);
    assertThat(refused.err()).contains("demo.orders_").contains("no column 'note'").contains("--add-new-columns");
    Catalog catalog = catalog();
    for (String region : List.of("eu", "us")) {
      Table table = catalog.loadTable(TableIdentifier.of("demo", "orders_" + region));
      assertThat(table.schema().findField("note")).isNull();
      assertThat(table.currentSnapshot().snapshotId()).as("nothing committed to %s", region)
          .isEqualTo(before.get(region));
    }

    CliRun evolved = CliRun.of(ingest(later, "--job-id", "evolve-2", "--add-new-columns"));
    assertThat(evolved.exitCode()).as(evolved.toString()).isZero();
    Map<Long, Object> notes = new TreeMap<>();
    for (String region : List.of("eu", "us")) {
      Table table = catalog().loadTable(TableIdentifier.of("demo", "orders_" + region));
      assertThat(table.schema().findField("note")).as("note of %s", region).isNotNull();
      try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
        rows.forEach(row -> notes.put((Long) row.getField("order_id"), String.valueOf(row.getField("note"))));
      }
    }
    assertThat(notes).containsExactlyEntriesOf(new TreeMap<>(Map.of(1L, "null", 2L, "null", 3L, "gift", 4L, "rush")));
  }
}
