package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.testing.TestScale;
import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.util.SnapshotUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A routed ingest of transfers (each a debit line and a credit line, routed to two tables) by the real tool in child
 * JVMs, two copies of the command racing in every round and SIGKILLed at random moments, until it finishes: every
 * transfer is once in each table, every checkpoint of the job read as a cut balances (the same transfers in both
 * tables), and the last cut that {@code lakecommit cut} names balances too.
 */
class RoutedIngestKillIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TableIdentifier DEBIT = TableIdentifier.of("bank", "debit");
  private static final TableIdentifier CREDIT = TableIdentifier.of("bank", "credit");

  @TempDir Path dir;

  @Test
  void twoCopiesRacingUnderSigkillLeaveEveryTransferOnceAndEveryCutBalanced() throws Exception {
    long seed = TestScale.seed();
    int transfers = TestScale.pick(100_000, 500_000);
    int kills = TestScale.pick(3, 50);
    Path input = dir.resolve("transfers.jsonl");
    try (BufferedWriter out = Files.newBufferedWriter(input)) {
      for (int i = 0; i < transfers; i++) {
        out.write("{\"id\": " + (2L * i) + ", \"transfer\": " + i + ", \"side\": \"debit\", \"amount\": " + (i % 997)
            + "}\n");
        out.write("{\"id\": " + (2L * i + 1) + ", \"transfer\": " + i + ", \"side\": \"credit\", \"amount\": "
            + (i % 997) + "}\n");
      }
    }
    List<String> command = KillLoop.command(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), List.of(
        "ingest", "--input", input.toString(), "--table", "bank.${side}", "--route-by", "side",
        "--warehouse", dir.resolve("wh").toString(), "--job-id", "transfers",
        // even: a transfer's two lines are never split by a checkpoint
        "--parallelism", "2", "--checkpoint-every-records", "4000",
        "--max-records-per-second", "40000"));

    KillLoop.Result result = new KillLoop(dir, "RoutedIngestKillIT", seed).runRacing(command, kills, 500);

    assertThat(result.killed()).as("kills (seed %s)", seed).isGreaterThanOrEqualTo(kills);
    Catalog catalog = catalog();
    for (TableIdentifier table : List.of(DEBIT, CREDIT)) {
      Map<Long, Integer> ids = new HashMap<>();
      read(catalog.loadTable(table), null).forEach(row -> ids.merge((Long) row.getField("id"), 1, Integer::sum));
      assertThat(ids).as("%s (seed %s)", table, seed).hasSize(transfers);
      assertThat(ids.values()).as("%s: every row once (seed %s)", table, seed).allMatch(n -> n == 1);
    }
    int cuts = assertEveryCutBalances(catalog, seed);
    assertThat(cuts).isGreaterThanOrEqualTo(2 * transfers / 4000);

    CliRun cut = CliRun.of("cut", "--job-id", "transfers", "--table", "bank.${side}", "--warehouse",
        dir.resolve("wh").toString(), "--json");
    assertThat(cut.exitCode()).as(cut.toString()).isZero();
    Map<String, Map<Long, Integer>> sides = new TreeMap<>();
    for (JsonNode table : JSON.readTree(cut.out()).get("tables")) {
      TableIdentifier name = TableIdentifier.parse(table.get("table").asText());
      Map<Long, Integer> counts = new TreeMap<>();
      read(catalog.loadTable(name), table.get("snapshot").asLong())
          .forEach(row -> counts.merge((Long) row.getField("transfer"), 1, Integer::sum));
      sides.put(name.name(), counts);
    }
    assertThat(sides.get("debit")).hasSize(transfers).isEqualTo(sides.get("credit"));
  }

  private Catalog catalog() {
    Path wh = dir.resolve("wh").toAbsolutePath();
    return CatalogUtil.buildIcebergCatalog("lakecommit", Map.of("type", "jdbc", "uri", "jdbc:sqlite:"
        + wh.resolve("catalog.db"), "warehouse", wh.toUri().toString(), "jdbc.schema-version", "V1"),
        new org.apache.hadoop.conf.Configuration());
  }

  private static List<Record> read(Table table, Long snapshot) throws Exception {
    List<Record> rows = new ArrayList<>();
    IcebergGenerics.ScanBuilder scan = IcebergGenerics.read(table);
    try (CloseableIterable<Record> records = snapshot == null ? scan.build() : scan.useSnapshot(snapshot).build()) {
      records.forEach(rows::add);
    }
    return rows;
  }

  /** Each checkpoint of the job as a cut (each table at its newest snapshot of the job at or below it) balances. */
  private static int assertEveryCutBalances(Catalog catalog, long seed) throws Exception {
    Map<TableIdentifier, TableMetadata> metadata = new HashMap<>();
    TreeSet<Long> checkpoints = new TreeSet<>();
    for (TableIdentifier table : List.of(DEBIT, CREDIT)) {
      TableMetadata current = ((HasTableOperations) catalog.loadTable(table)).operations().current();
      metadata.put(table, current);
      current.snapshots().stream().map(s -> s.summary().get(CommitId.CHECKPOINT_ID_KEY))
          .filter(java.util.Objects::nonNull).forEach(id -> checkpoints.add(Long.parseLong(id)));
    }
    // every few checkpoints, and the last: each read is a scan of the table at that snapshot
    List<Long> checked = new ArrayList<>();
    int i = 0;
    for (long checkpoint : checkpoints) {
      if (i++ % 5 == 0 || checkpoint == checkpoints.last()) {
        checked.add(checkpoint);
      }
    }
    for (long checkpoint : checked) {
      Map<TableIdentifier, Map<Long, Integer>> transfers = new HashMap<>();
      for (Map.Entry<TableIdentifier, TableMetadata> table : metadata.entrySet()) {
        Map<Long, Integer> counts = new TreeMap<>();
        Snapshot snapshot = newestAtOrBelow(table.getValue(), checkpoint);
        if (snapshot != null) {
          read(catalog.loadTable(table.getKey()), snapshot.snapshotId())
              .forEach(row -> counts.merge((Long) row.getField("transfer"), 1, Integer::sum));
        }
        transfers.put(table.getKey(), counts);
      }
      assertThat(transfers.get(DEBIT)).as("cut %s (seed %s)", checkpoint, seed).isEqualTo(transfers.get(CREDIT));
    }
    return checkpoints.size();
  }

  private static Snapshot newestAtOrBelow(TableMetadata metadata, long checkpoint) {
    for (Snapshot snapshot : SnapshotUtil.ancestorsOf(metadata.currentSnapshot().snapshotId(), metadata::snapshot)) {
      String id = snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY);
      if (id != null && Long.parseLong(id) <= checkpoint) {
        return snapshot;
      }
    }
    return null;
  }
}
