package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.EmbeddedPostgres;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.ingest.faults.Outage;
import dev.lakecommit.ingest.faults.OutageFileIO;
import dev.lakecommit.ingest.faults.OutageFileSystem;
import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The catalog goes away in the middle of a commit and comes back on the same port 5 s later: the Hive Metastore
 * under a Hive table commit and under an Iceberg HiveCatalog commit, PostgreSQL under a JDBC-catalog commit. The
 * commit in flight ends committed exactly once or is retried after the outage (settled by reading the table
 * back); the ingest completes and {@code verify} finds exactly the source's rows.
 */
class CatalogOutageIngestIT {
  /** 5 s; {@code -Dlakecommit.outage-seconds=N} measures how long an outage is ridden through (README). */
  private static final Duration OUTAGE = Duration.ofSeconds(Long.getLong("lakecommit.outage-seconds", 5));
  private static final int ROWS = TestScale.pick(12_000, 200_000);
  private static final int CHECKPOINT_ROWS = ROWS / 6;

  @TempDir Path dir;

  private Path input() throws Exception {
    Path input = dir.resolve("events.jsonl");
    try (BufferedWriter out = Files.newBufferedWriter(input)) {
      for (int i = 0; i < ROWS; i++) {
        out.write("{\"id\": " + i + ", \"region\": \"r" + (i % 4) + "\", \"amount\": " + (i * 13 % 500) + "}\n");
      }
    }
    return input;
  }

  private static CliRun run(List<String> args) {
    return CliRun.of(args.toArray(String[]::new));
  }

  private List<String> ingest(Path input, String job, List<String> target) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString(), "--table", "ops.events",
        "--partition-by", "region", "--job-id", job, "--parallelism", "2",
        "--checkpoint-every-records", Integer.toString(CHECKPOINT_ROWS),
        // 10 attempts from 100 ms doubling to 10 s: about 33 s of backoff, a margin over a 5 s outage plus the
        // restart of a server on a loaded machine (the default 8 give about 13 s)
        "--commit-retries", "10", "--stall-timeout", "2m",
        "--checkpoint-dir", dir.resolve("checkpoints").resolve(job).toString()));
    args.addAll(target);
    return args;
  }

  /** Runs the ingest through the armed outage, which must happen; the ingest must then complete. */
  private static CliRun runThroughOutage(Outage outage, List<String> args) throws Exception {
    CliRun ingest;
    try (outage) {
      ingest = run(args);
      assertThat(outage.happened()).as("%s\n%s", outage, ingest).isTrue();
      outage.awaitBack(Duration.ofMinutes(1));
    }
    System.out.printf("%s outage of %s: %s%n", outage, OUTAGE, ingest.out().lines()
        .filter(line -> line.startsWith("Commit retries")).findFirst().orElse("no commit retried"));
    assertThat(ingest.exitCode()).as("%s\n%s", outage, ingest).isZero();
    return ingest;
  }

  private void ingestThroughOutage(Outage outage, Path input, String job, List<String> target) throws Exception {
    CliRun ingest = runThroughOutage(outage, ingest(input, job, target));
    assertThat(ingest.out()).contains(String.format("Committed %,d rows in 6 checkpoint(s)", ROWS));

    List<String> verify = new ArrayList<>(List.of("verify", "--source", input.toString(), "--table", "ops.events",
        "--key", "id", "--json"));
    verify.addAll(target);
    CliRun audit = run(verify);
    assertThat(audit.exitCode()).as(audit.toString()).isZero();
    assertThat(audit.out()).contains("\"sourceRows\" : " + ROWS)
        .contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
  }

  @Test
  void metastoreDownInTheMiddleOfAHiveTableCommit() throws Exception {
    Path input = input();
    try (HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby()) {
      // Each checkpoint moves 8 files (4 regions, 2 writers): the 10th move is inside the commit of checkpoint 2,
      // after some of its files are in their partitions and before its partitions and watermark are recorded.
      Outage outage = Outage.arm("Hive Metastore", hms::stop, hms::start, OUTAGE, 10);
      ingestThroughOutage(outage, input, "hive-outage", List.of("--target", "hive", "--metastore-uri", hms.uri(),
          "-C", "warehouse=" + dir.resolve("wh").toUri(),
          "-C", "fs.file.impl=" + OutageFileSystem.class.getName(), "-C", "fs.file.impl.disable.cache=true"));
      assertThat(outage.where()).contains("region=");
    }
  }

  @Test
  void metastoreDownInTheMiddleOfAnIcebergHiveCatalogCommit() throws Exception {
    Path input = input();
    try (HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby()) {
      // Metadata files: 1 at table creation, then one per commit: the 3rd is the commit of checkpoint 2, written
      // before the metastore is asked to swap to it.
      Outage outage = Outage.arm("Hive Metastore", hms::stop, hms::start, OUTAGE, 3);
      ingestThroughOutage(outage, input, "hms-iceberg-outage", List.of("-C", "type=hive", "-C", "uri=" + hms.uri(),
          "-C", "warehouse=" + dir.resolve("wh").toUri(), "-C", "io-impl=" + OutageFileIO.class.getName()));
      assertThat(outage.where()).endsWith(".metadata.json");
    }
  }

  @Test
  void postgresDownInTheMiddleOfAJdbcCatalogCommit() throws Exception {
    Path input = input();
    try (EmbeddedPostgres pg = EmbeddedPostgres.startNew()) {
      String url = pg.createDatabase("catalog");
      Outage outage = Outage.arm("PostgreSQL", pg::stop, pg::start, OUTAGE, 3);
      ingestThroughOutage(outage, input, "jdbc-outage", List.of("-C", "type=jdbc", "-C", "uri=" + url,
          "-C", "jdbc.user=" + pg.user(), "-C", "jdbc.password=" + pg.password(),
          "-C", "warehouse=" + dir.resolve("wh").toUri(), "-C", "io-impl=" + OutageFileIO.class.getName()));
      assertThat(outage.where()).endsWith(".metadata.json");
    }
  }

  /**
   * A table per region, each checkpoint one atomic cut over the four tables (one PostgreSQL transaction of pointer
   * swaps): PostgreSQL goes away after some of cut 2's new metadata files were written, before the transaction. The
   * ingest completes, every region's rows are there once, and every checkpoint read as a cut holds exactly the rows
   * of the checkpoints up to it, over the four tables together.
   */
  @Test
  void postgresDownInTheMiddleOfACutOverSeveralTables() throws Exception {
    Path input = input();
    try (EmbeddedPostgres pg = EmbeddedPostgres.startNew()) {
      String url = pg.createDatabase("catalog");
      // metadata files: 4 tables created, the run's epoch carried into each, cut 1 in each; then cut 2's
      Outage outage = Outage.arm("PostgreSQL", pg::stop, pg::start, OUTAGE, 14);
      List<String> catalog = List.of("-C", "type=jdbc", "-C", "uri=" + url, "-C", "jdbc.user=" + pg.user(),
          "-C", "jdbc.password=" + pg.password(), "-C", "warehouse=" + dir.resolve("wh").toUri(),
          "-C", "io-impl=" + OutageFileIO.class.getName());
      List<String> args = new ArrayList<>(ingest(input, "cut-outage", catalog));
      args.set(args.indexOf("ops.events"), "ops.events_${region}");
      args.remove("--partition-by");
      args.remove("region");
      args.addAll(List.of("--route-by", "region", "--require-atomic-cut"));
      runThroughOutage(outage, args);
      // a table's metadata files: created, epoch carried, cut 1, then cut 2's (version 3)
      assertThat(outage.where()).contains("/metadata/00003-").endsWith(".metadata.json");

      java.util.Map<String, String> properties = new java.util.HashMap<>();
      for (int i = 0; i < catalog.size(); i += 2) {
        String[] pair = catalog.get(i + 1).split("=", 2);
        properties.put(pair[0], pair[1]);
      }
      properties.remove("io-impl");
      org.apache.iceberg.catalog.Catalog reader = org.apache.iceberg.CatalogUtil.buildIcebergCatalog("lakecommit",
          properties, new org.apache.hadoop.conf.Configuration());
      java.util.TreeMap<Long, Long> rowsAtCut = new java.util.TreeMap<>();
      java.util.Set<Long> ids = new java.util.HashSet<>();
      List<Iterable<org.apache.iceberg.Snapshot>> histories = new ArrayList<>();
      for (int region = 0; region < 4; region++) {
        org.apache.iceberg.Table table = reader.loadTable(
            org.apache.iceberg.catalog.TableIdentifier.of("ops", "events_r" + region));
        histories.add(org.apache.iceberg.util.SnapshotUtil.currentAncestors(table));
        try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.data.Record> rows =
            org.apache.iceberg.data.IcebergGenerics.read(table).build()) {
          rows.forEach(row -> assertThat(ids.add((Long) row.getField("id"))).as("id %s once", row.getField("id"))
              .isTrue());
        }
      }
      assertThat(ids).hasSize(ROWS);
      for (long checkpoint = 1; checkpoint <= 6; checkpoint++) {
        long rows = 0;
        for (Iterable<org.apache.iceberg.Snapshot> history : histories) {
          for (org.apache.iceberg.Snapshot snapshot : history) {
            String id = snapshot.summary().get(dev.lakecommit.core.CommitId.CHECKPOINT_ID_KEY);
            if (id != null && Long.parseLong(id) <= checkpoint) {
              rows += Long.parseLong(snapshot.summary().get("total-records"));
              break;
            }
          }
        }
        rowsAtCut.put(checkpoint, rows);
      }
      java.util.TreeMap<Long, Long> expected = new java.util.TreeMap<>();
      for (long checkpoint = 1; checkpoint <= 6; checkpoint++) {
        expected.put(checkpoint, checkpoint * CHECKPOINT_ROWS);
      }
      assertThat(rowsAtCut).as("rows of the four tables at each cut").isEqualTo(expected);
    }
  }
}
