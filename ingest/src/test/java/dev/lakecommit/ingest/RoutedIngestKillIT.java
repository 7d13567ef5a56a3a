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
 * tables), the last cut that {@code lakecommit cut} names balances too, and so does every state of the two tables a
 * reader read while the job ran (both metadata pointers in one query of the catalog's database).
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

    KillLoop.Result result;
    try (CutReader reader = new CutReader(dir.resolve("wh").toAbsolutePath())) {
      reader.start();
      result = new KillLoop(dir, "RoutedIngestKillIT", seed).runRacing(command, kills, 500);
      reader.stop();
      System.out.printf("RoutedIngestKillIT: a reader read both tables %d times while the job ran, at %d different"
          + " checkpoints%n", reader.reads(), reader.checkpoints().size());
      assertThat(reader.unbalanced()).as("states of both tables read at once that do not balance (seed %s)", seed)
          .isEmpty();
      assertThat(reader.failures()).as("failed reads (seed %s)", seed).isEmpty();
      assertThat(reader.checkpoints()).as("checkpoints the reader saw while the job ran (seed %s)", seed)
          .hasSizeGreaterThanOrEqualTo(3);
    }

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

  /**
   * A reader of the catalog while the job runs, as an engine reads it: both tables' metadata pointers in one query of
   * the catalog's database (one consistent state of the JDBC catalog), then each table's current snapshot. A cut
   * committed atomically shows as many debit rows as credit rows at every such state; what it read is kept.
   */
  private static final class CutReader implements AutoCloseable {
    private final Path warehouse;
    private final org.apache.iceberg.io.FileIO io = new org.apache.iceberg.hadoop.HadoopFileIO(
        new org.apache.hadoop.conf.Configuration());
    private final java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean();
    private final List<String> unbalanced = java.util.Collections.synchronizedList(new ArrayList<>());
    private final java.util.Set<Long> checkpoints = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
    private final List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    private Thread thread;

    CutReader(Path warehouse) {
      this.warehouse = warehouse;
    }

    void start() {
      running.set(true);
      thread = new Thread(this::loop, "cut-reader");
      thread.setDaemon(true);
      thread.start();
    }

    private void loop() {
      while (running.get()) {
        try {
          readOnce();
        } catch (java.sql.SQLException | org.apache.iceberg.exceptions.NotFoundException
            | java.io.UncheckedIOException e) {
          // the database busy or not created yet, or a metadata file not there: read again
        } catch (Exception e) {
          failures.add(e.toString());
        }
        try {
          Thread.sleep(50);   // the pace of the reads, not synchronisation
        } catch (InterruptedException e) {
          return;
        }
      }
    }

    private void readOnce() throws Exception {
      Path db = warehouse.resolve("catalog.db");
      if (!Files.exists(db)) {
        return;
      }
      Map<String, String> pointers = new TreeMap<>();
      try (java.sql.Connection connection = java.sql.DriverManager.getConnection("jdbc:sqlite:" + db);
          java.sql.Statement statement = connection.createStatement();
          java.sql.ResultSet rows = statement.executeQuery("SELECT table_name, metadata_location FROM"
              + " iceberg_tables WHERE catalog_name = 'lakecommit' AND table_namespace = 'bank'")) {
        while (rows.next()) {
          pointers.put(rows.getString(1), rows.getString(2));
        }
      }
      if (pointers.size() < 2) {
        return;
      }
      Map<String, Snapshot> current = new TreeMap<>();
      for (Map.Entry<String, String> pointer : pointers.entrySet()) {
        Snapshot snapshot = org.apache.iceberg.TableMetadataParser.read(io, pointer.getValue()).currentSnapshot();
        if (snapshot == null) {
          return;
        }
        current.put(pointer.getKey(), snapshot);
      }
      reads.incrementAndGet();
      Snapshot debit = current.get("debit");
      Snapshot credit = current.get("credit");
      checkpoints.add(Long.parseLong(debit.summary().get(CommitId.CHECKPOINT_ID_KEY)));
      if (!debit.summary().get("total-records").equals(credit.summary().get("total-records"))) {
        unbalanced.add("debit at checkpoint " + debit.summary().get(CommitId.CHECKPOINT_ID_KEY) + " ("
            + debit.summary().get("total-records") + " rows), credit at checkpoint "
            + credit.summary().get(CommitId.CHECKPOINT_ID_KEY) + " (" + credit.summary().get("total-records")
            + " rows)");
      }
    }

    void stop() throws InterruptedException {
      running.set(false);
      thread.join(java.time.Duration.ofSeconds(30).toMillis());
    }

    int reads() {
      return reads.get();
    }

    java.util.Set<Long> checkpoints() {
      return checkpoints;
    }

    List<String> unbalanced() {
      return unbalanced;
    }

    /** Reads that failed other than by a busy database or a missing file. */
    List<String> failures() {
      return failures;
    }

    @Override
    public void close() throws InterruptedException {
      if (thread != null && thread.isAlive()) {
        stop();
      }
    }
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
