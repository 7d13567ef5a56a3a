package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.iceberg.MaintenanceLock;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code lakecommit maintain} on the sample table: the dry run changes nothing, the run keeps the rows exact. */
class MaintainCommandTest {
  @TempDir Path dir;

  private String[] withTable(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--table", "demo.orders", "--warehouse", dir.resolve("wh").toString()));
    return all.toArray(String[]::new);
  }

  private CliRun ingest() {
    return CliRun.of(withTable("ingest", "--input", CliTest.SAMPLE.toString(), "--checkpoint-every-records", "500",
        "--max-rows-per-file", "50"));
  }

  /** Every file under the warehouse with its size and modification time. */
  private Map<String, String> files() throws IOException {
    Map<String, String> files = new TreeMap<>();
    try (Stream<Path> walk = Files.walk(dir.resolve("wh"))) {
      for (Path path : walk.filter(Files::isRegularFile).toList()) {
        if (!path.getFileName().toString().startsWith("catalog.db")) {
          files.put(path.toString(), Files.size(path) + "@" + Files.getLastModifiedTime(path).toMillis());
        }
      }
    }
    return files;
  }

  private static final org.apache.iceberg.catalog.TableIdentifier ORDERS =
      org.apache.iceberg.catalog.TableIdentifier.parse("demo.orders");

  /** The tool's own catalog of the warehouse (JDBC on SQLite), as another process would open it. */
  private org.apache.iceberg.catalog.Catalog catalog() {
    return org.apache.iceberg.CatalogUtil.buildIcebergCatalog("lakecommit", Map.of(
        "type", "jdbc", "uri", "jdbc:sqlite:" + dir.resolve("wh/catalog.db").toAbsolutePath(),
        "warehouse", dir.resolve("wh").toUri().toString(), "jdbc.schema-version", "V1"),
        new org.apache.hadoop.conf.Configuration());
  }

  private static final String[] ALL = {"--compact", "--keep-checkpoints", "1", "--rewrite-manifests",
      "--min-small-manifests", "2", "--retain-last", "1", "--remove-orphans", "--orphan-age", "0s"};

  @Test
  void aDryRunPrintsThePlanAndChangesNothingAndTheRunKeepsTheRowsExact() throws Exception {
    CliRun first = ingest();
    assertThat(first.exitCode()).as(first.toString()).isZero();
    Map<String, String> before = files();

    List<String> dry = new ArrayList<>(List.of("maintain", "--dry-run"));
    dry.addAll(List.of(ALL));
    CliRun plan = CliRun.of(withTable(dry.toArray(String[]::new)));
    assertThat(plan.exitCode()).as(plan.toString()).isZero();
    assertThat(plan.out()).contains("Plan for table demo.orders")
        .containsPattern("compaction: [1-9][0-9]* small file\\(s\\) in 1 bin\\(s\\)")
        .contains("partition (unpartitioned): ")
        .contains("snapshot expiry: 3 snapshot(s)")
        .contains("orphan removal: ");
    assertThat(files()).as("a dry run changes no file").isEqualTo(before);

    List<String> run = new ArrayList<>(List.of("maintain"));
    run.addAll(List.of(ALL));
    CliRun maintained = CliRun.of(withTable(run.toArray(String[]::new)));
    assertThat(maintained.exitCode()).as(maintained.toString()).isZero();
    assertThat(maintained.out()).contains("Maintaining table demo.orders").contains("committed snapshot ")
        .contains("expired ");
    // the compaction's commit left its files as deleted entries in the manifests that listed them
    assertThat(maintained.out().substring(maintained.out().indexOf("committed snapshot ")))
        .as("manifests rewritten after the compaction").containsPattern("rewrote [1-9][0-9]* manifest");
    assertThat(files()).isNotEqualTo(before);

    CliRun verify = CliRun.of(withTable("verify", "--source", CliTest.SAMPLE.toString(), "--key", "order_id"));
    assertThat(verify.exitCode()).as(verify.toString()).isZero();

    CliRun again = CliRun.of(withTable(run.toArray(String[]::new)));
    assertThat(again.exitCode()).as("running it again is safe: %s", again).isZero();
    assertThat(again.out()).contains("compaction: 0 small file(s)");

    CliRun rerun = ingest();
    assertThat(rerun.exitCode()).as(rerun.toString()).isZero();
    assertThat(rerun.out()).as("the job's restart finds its last checkpoint after expiry")
        .contains("Nothing new to commit").contains("checkpoint 4");
    assertThat(CliRun.of(withTable("verify", "--source", CliTest.SAMPLE.toString(), "--key", "order_id"))
        .exitCode()).isZero();
  }

  /**
   * {@code ingest --maintain-every 5}: maintenance rounds run on their own thread while the job commits 20
   * checkpoints; the job succeeds, the rows are exact, at least one round compacted, and a rerun commits nothing.
   */
  @Test
  void anIngestMaintainsItsTableEveryNCommits() throws Exception {
    CliRun run = CliRun.of(withTable("ingest", "--input", CliTest.SAMPLE.toString(), "--checkpoint-every-records",
        "100", "--max-rows-per-file", "20", "--maintain-every", "5", "--maintain-retain-last", "1000"));
    assertThat(run.exitCode()).as(run.toString()).isZero();
    assertThat(run.out()).contains("Committed 2,000 rows in 20 checkpoint(s)");
    org.apache.iceberg.Table table = catalog().loadTable(ORDERS);
    List<String> maintenance = new ArrayList<>();
    table.snapshots().forEach(snapshot -> {
      if (snapshot.summary().containsKey("lakecommit.maintenance")) {
        maintenance.add(snapshot.summary().get("lakecommit.maintenance"));
      }
    });
    assertThat(maintenance).contains("compaction");
    CliRun verify = CliRun.of(withTable("verify", "--source", CliTest.SAMPLE.toString(), "--key", "order_id"));
    assertThat(verify.exitCode()).as(verify.toString()).isZero();

    CliRun hive = CliRun.of(withTable("ingest", "--input", CliTest.SAMPLE.toString(), "--target", "hive",
        "--metastore-uri", "thrift://localhost:1", "--maintain-every", "5", "--maintain-retain-last", "3"));
    assertThat(hive.exitCode()).as(hive.toString()).isEqualTo(2);
    assertThat(hive.err()).contains("a Hive table has none");
  }

  @Test
  void hiveTablesAndNothingToDoAreUsageErrors() {
    CliRun hive = CliRun.of("maintain", "--table", "demo.orders", "--target", "hive", "--metastore-uri",
        "thrift://localhost:1", "--compact", "--remove-orphans");
    assertThat(hive.exitCode()).as(hive.toString()).isEqualTo(2);
    assertThat(hive.err()).contains("A Hive table has no snapshots");

    CliRun icebergSize = CliRun.of(withTable("maintain", "--compact", "--target-file-size", "1000"));
    assertThat(icebergSize.exitCode()).as(icebergSize.toString()).isEqualTo(2);
    assertThat(icebergSize.err()).contains("--target-file-size and --min-age are for --target hive");

    CliRun nothing = CliRun.of(withTable("maintain"));
    assertThat(nothing.exitCode()).as(nothing.toString()).isEqualTo(2);
    assertThat(nothing.err()).contains("Nothing to do");

    CliRun age = CliRun.of(withTable("maintain", "--compact", "--orphan-age", "1d"));
    assertThat(age.exitCode()).as(age.toString()).isEqualTo(2);
    assertThat(age.err()).contains("--orphan-age needs --remove-orphans");

    CliRun missing = CliRun.of(withTable("maintain", "--compact"));
    assertThat(missing.exitCode()).as("a table that does not exist: %s", missing).isEqualTo(2);

    CliRun help = CliRun.of("maintain", "--help");
    assertThat(help.exitCode()).isZero();
    assertThat(help.out()).contains("Usage: lakecommit maintain").contains("--dry-run").contains("--orphan-age");
  }

  /** While another maintenance holds the table's lease, maintain does nothing (exit 3); after its release it runs. */
  @Test
  void aTableWhoseLeaseAnotherHoldsIsLeftAlone() throws Exception {
    CliRun first = ingest();
    assertThat(first.exitCode()).as(first.toString()).isZero();
    MaintenanceLock lock = MaintenanceLock.of(catalog(), ORDERS, Duration.ofMinutes(10));
    MaintenanceLock.Lease other = lock.tryAcquire("another maintainer").orElseThrow();
    Map<String, String> before = files();
    List<String> run = new ArrayList<>(List.of("maintain"));
    run.addAll(List.of(ALL));

    CliRun refused = CliRun.of(withTable(run.toArray(String[]::new)));
    assertThat(refused.exitCode()).as(refused.toString()).isEqualTo(3);
    assertThat(refused.out()).contains("Another maintenance holds the table's lease (another maintainer [")
        .contains("nothing done");
    assertThat(files()).as("nothing changed while the lease was held elsewhere").isEqualTo(before);
    assertThat(lock.holder()).contains(other.holder());

    other.close();
    CliRun maintained = CliRun.of(withTable(run.toArray(String[]::new)));
    assertThat(maintained.exitCode()).as(maintained.toString()).isZero();
    assertThat(maintained.out()).contains("committed snapshot ");
    assertThat(lock.holder()).as("the tool released its lease").isEmpty();
  }
}
