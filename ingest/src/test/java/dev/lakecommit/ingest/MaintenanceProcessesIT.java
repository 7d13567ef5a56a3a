package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import java.nio.file.Files;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Maintenance and a writer as separate processes on one Iceberg table: {@code lakecommit ingest} commits a checkpoint
 * every 1,000 records in its own JVM while {@code lakecommit maintain} runs round after round in others (compaction,
 * manifest rewrite, snapshot expiry, orphan removal); then every row is read back exact — append and upsert tables.
 */
class MaintenanceProcessesIT {
  @TempDir Path dir;

  /** The embedded default catalog, or with {@code hadoop} a Hadoop catalog on the local file system. */
  private boolean hadoop;

  private List<String> catalog() {
    return hadoop
        ? List.of("--table", "load.events", "-C", "type=hadoop", "-C", "warehouse=" + dir.resolve("wh").toUri())
        : List.of("--table", "load.events", "--warehouse", dir.resolve("wh").toString());
  }

  /** Runs maintain rounds in child JVMs while the writer runs; returns how many rounds committed a compaction. */
  private int maintainWhileWriting(Process writer, Path writerLog) throws Exception {
    int compacted = 0;
    int rounds = 0;
    KillLoop.awaitOutput(writer, writerLog, " complete: ");
    while (writer.isAlive()) {
      List<String> args = new ArrayList<>(List.of("maintain"));
      args.addAll(catalog());
      args.addAll(List.of("--compact", "--keep-checkpoints", "2", "--rewrite-manifests", "--min-small-manifests",
          "2", "--expire-older-than", "0s", "--retain-last", "5", "--remove-orphans", "--orphan-age", "60s"));
      Path log = dir.resolve("maintain-" + ++rounds + ".log");
      Process maintain = new ProcessBuilder(KillLoop.command(List.of("-XX:TieredStopAtLevel=1"), args))
          .redirectErrorStream(true).redirectOutput(log.toFile()).start();
      assertThat(maintain.waitFor(3, TimeUnit.MINUTES)).as("maintain round %d ended", rounds).isTrue();
      String out = Files.readString(log);
      // 0, or 3 when the table's lease is held or a compaction's outcome is unknown; never a usage error
      assertThat(maintain.exitValue()).as(out).isIn(0, 3);
      if (out.contains("committed snapshot") && writer.isAlive()) {
        compacted++;
      }
    }
    System.out.printf("MaintenanceProcessesIT: %d maintain rounds, %d compactions committed while the writer ran%n",
        rounds, compacted);
    return compacted;
  }

  /**
   * Runs the writer ({@code ingest args}, paced by {@code --max-records-per-second} so that it runs for longer than
   * a maintain process takes to start, however fast the tool is) in a child JVM to its end while maintain rounds run in others; the writer
   * must succeed and at least one compaction must have landed while it committed.
   */
  private void writeWhileMaintaining(List<String> args) throws Exception {
    Path log = dir.resolve("writer.log");
    Process writer = new ProcessBuilder(KillLoop.command(List.of(), args)).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    int compacted;
    try {
      compacted = maintainWhileWriting(writer, log);
      assertThat(writer.waitFor(5, TimeUnit.MINUTES)).isTrue();
    } finally {
      writer.destroyForcibly();
    }
    assertThat(writer.exitValue()).as(Files.readString(log)).isZero();
    assertThat(compacted).as("compactions committed while the writer committed").isPositive();
  }

  private Table table() {
    return CatalogUtil.buildIcebergCatalog("lakecommit", Map.of("type", "jdbc", "uri", "jdbc:sqlite:"
            + dir.resolve("wh/catalog.db").toAbsolutePath(), "warehouse", dir.resolve("wh").toUri().toString(),
            "jdbc.schema-version", "V1"), new org.apache.hadoop.conf.Configuration())
        .loadTable(TableIdentifier.parse("load.events"));
  }

  /**
   * Also on a local Hadoop table, where the two processes' commits are kept apart only by the commit lock across
   * processes: Iceberg's check-then-rename would otherwise let one replace the other's new version.
   */
  @ParameterizedTest(name = "hadoop catalog: {0}")
  @ValueSource(booleans = {false, true})
  void appendsStayExactWhileMaintenanceProcessesCompactExpireAndRemoveOrphans(boolean hadoop) throws Exception {
    this.hadoop = hadoop;
    int rows = TestScale.pick(150_000, 1_000_000);
    Path input = KillLoop.writeInput(dir, rows);
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString()));
    args.addAll(catalog());
    if (hadoop) { // the embedded catalog keeps the tool's state in its warehouse; others need a place for it
      args.addAll(List.of("--checkpoint-dir", dir.resolve("checkpoints").toString()));
    }
    args.addAll(List.of("--job-id", "appends", "--parallelism", "2", "--checkpoint-every-records", "1000",
        "--max-rows-per-file", "250", "--max-records-per-second", "10000"));
    writeWhileMaintaining(args);

    List<String> verify = new ArrayList<>(List.of("verify", "--source", input.toString(), "--key", "id", "--json"));
    verify.addAll(catalog());
    CliRun audit = CliRun.of(verify.toArray(String[]::new));
    assertThat(audit.exitCode()).as(audit.toString()).isZero();
    assertThat(audit.out()).contains("\"tableRows\" : " + rows).contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");
    // the restart lookup still works after expiry: a rerun finds the job's watermark and commits nothing
    List<String> rerun = new ArrayList<>(args);
    assertThat(CliRun.of(rerun.toArray(String[]::new)).out()).contains("Nothing new to commit");
    if (hadoop) {
      assertThat(dir.resolve("wh/load/events/metadata/.lakecommit-commit.lock")).as("the commit lock across processes")
          .exists();
    }
  }

  @Test
  void upsertsKeepTheNewestRowOfEveryKeyWhileMaintenanceProcessesCompact() throws Exception {
    int keys = TestScale.pick(12_000, 100_000);
    int versions = 6;
    Path input = dir.resolve("changes.jsonl");
    StringBuilder lines = new StringBuilder();
    for (int version = 0; version < versions; version++) {
      for (int id = 0; id < keys; id++) {
        lines.append("{\"id\": ").append(id).append(", \"v\": ").append(version * 1_000_000L + id).append("}\n");
      }
    }
    Files.writeString(input, lines);
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString()));
    args.addAll(catalog());
    args.addAll(List.of("--job-id", "upserts", "--schema", "id long not null, v long", "--upsert-key", "id",
        "--parallelism", "2", "--checkpoint-every-records", "1000", "--max-records-per-second", "5000"));
    writeWhileMaintaining(args);

    Map<Long, Long> rows = new HashMap<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table()).build()) {
      for (Record record : records) {
        assertThat(rows.put((Long) record.getField("id"), (Long) record.getField("v"))).as("key %s once",
            record.getField("id")).isNull();
      }
    }
    assertThat(rows).hasSize(keys);
    rows.forEach((id, v) -> assertThat(v).as("newest value of key %s", id)
        .isEqualTo((versions - 1) * 1_000_000L + id));
  }
}
