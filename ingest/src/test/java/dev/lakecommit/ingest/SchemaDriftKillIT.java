package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Schema evolution under SIGKILL: the real tool in a child JVM adds a column to an existing table and is killed
 * as soon as it starts ingesting (the column then is in the table only if the run's first data commit is), then at
 * random moments until it finishes; the table holds every row once, with the new column's values, and every
 * snapshot of the run has the column.
 */
class SchemaDriftKillIT {
  @TempDir Path dir;

  @Test
  void sigkillBetweenTheSchemaChangeAndTheDataCommitAndLaterLosesAndDuplicatesNothing() throws Exception {
    long seed = TestScale.seed();
    int rows = TestScale.pick(60_000, 400_000);
    Path day1 = SchemaDriftTest.jsonLines(dir.resolve("day1/a.jsonl"), 0, 1_000, i -> "{\"id\": " + i + "}");
    Path day2 = SchemaDriftTest.jsonLines(dir.resolve("day2/a.jsonl"), 1_000, 1_000 + rows,
        i -> i < 1_000 + rows / 2 ? "{\"id\": " + i + "}" : "{\"id\": " + i + ", \"extra\": " + i + "}");
    CliRun first = CliRun.of("ingest", "--input", day1.toString(), "--table", "load.events", "--warehouse",
        dir.resolve("wh").toString());
    assertThat(first.exitCode()).as(first.toString()).isZero();
    long snapshot = table().currentSnapshot().snapshotId();
    List<String> command = KillLoop.command(List.of(), List.of(
        "ingest", "--input", day2.toString(), "--table", "load.events", "--warehouse", dir.resolve("wh").toString(),
        "--job-id", "drift-kill", "--add-new-columns", "--parallelism", "2", "--checkpoint-every-records", "5000",
        // Paced so that the input outlasts the kills: a run goes on for up to 500 ms after its first checkpoint, and
        // longer on a loaded machine, where the tool's log is read late; at 20,000 records/s three runs could finish
        // the 60,000 rows before the third kill.
        "--max-records-per-second", "10000"));

    Process process = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(dir.resolve("run-0.log").toFile()).start();
    KillLoop.awaitOutput(process, dir.resolve("run-0.log"), "Ingesting ");
    process.destroyForcibly();
    assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    Table killed = table();
    assertThat(killed.schema().findField("extra") != null)
        .as("the column is in the table exactly if data of the run is: one commit adds both")
        .isEqualTo(killed.currentSnapshot().snapshotId() != snapshot);

    KillLoop.Result result = new KillLoop(dir, "SchemaDriftKillIT", seed).run(command, TestScale.pick(3, 20), 500);

    assertThat(result.killed()).as("seed %s", seed).isGreaterThanOrEqualTo(TestScale.pick(3, 20));
    CliRun verify = CliRun.of("verify", "--source", dir.resolve("day*/a.jsonl").toString(), "--table",
        "load.events", "--warehouse", dir.resolve("wh").toString(), "--key", "id", "--json");
    assertThat(verify.exitCode()).as("seed %s: %s", seed, verify).isZero();
    assertThat(verify.out()).contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
    Map<Long, Object> extra = new HashMap<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table()).build()) {
      for (Record record : records) {
        extra.put((Long) record.getField("id"), record.getField("extra"));
      }
    }
    assertThat(extra).hasSize(1_000 + rows);
    List<Long> wrong = new ArrayList<>();
    extra.forEach((id, value) -> {
      Object expected = id < 1_000 + rows / 2 ? null : id;
      if (!java.util.Objects.equals(expected, value)) {
        wrong.add(id);
      }
    });
    assertThat(wrong).as("rows whose new column is wrong (seed %s)", seed).isEmpty();
    Table table = table();
    for (org.apache.iceberg.Snapshot committed : table.snapshots()) {
      boolean ofTheRun = "drift-kill".equals(committed.summary().get(dev.lakecommit.core.CommitId.JOB_ID_KEY));
      assertThat(table.schemas().get(committed.schemaId()).findField("extra") != null)
          .as("snapshot %s has the column exactly if it is of the run", committed.snapshotId()).isEqualTo(ofTheRun);
    }
  }

  private Table table() {
    return CatalogUtil.buildIcebergCatalog("lakecommit", Map.of("type", "jdbc",
        "uri", "jdbc:sqlite:" + dir.resolve("wh").toAbsolutePath().resolve("catalog.db"),
        "warehouse", dir.resolve("wh").toAbsolutePath().toUri().toString(), "jdbc.schema-version", "V1"),
        new org.apache.hadoop.conf.Configuration()).loadTable(TableIdentifier.of("load", "events"));
  }
}
