package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.hive.testing.EmbeddedPostgres;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tool with the catalogs users run, behind real servers: Iceberg's HiveCatalog on an in-process Hive
 * Metastore, and a JDBC catalog on PostgreSQL (whose password never shows in the output).
 */
class CatalogsIngestIT {
  static final String SAMPLE = Path.of("../examples/orders.jsonl").toString();

  @TempDir Path dir;

  private static CliRun run(List<String> base, String... extra) {
    List<String> args = new ArrayList<>(List.of(extra));
    args.addAll(base);
    return CliRun.of(args.toArray(String[]::new));
  }

  private void ingestAndVerify(List<String> catalog) {
    ingestAndVerify(catalog, "shop.orders");
  }

  private void ingestAndVerify(List<String> catalog, String table) {
    CliRun ingest = run(catalog, "ingest", "--input", SAMPLE, "--table", table, "--job-id", "orders",
        "--checkpoint-every-records", "700", "--checkpoint-dir", dir.resolve("checkpoints-" + table).toString());
    assertThat(ingest.exitCode()).as(ingest.toString()).isZero();
    assertThat(ingest.out()).contains("Committed 2,000 rows in 3 checkpoint(s) (3 commit(s)");
    CliRun verify = run(catalog, "verify", "--source", SAMPLE, "--table", table, "--key", "order_id");
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(ingest.out() + ingest.err() + verify.out() + verify.err()).doesNotContain("pg-secret-4711");
  }

  /** Also with the metastore given as Hive's own key, which the tool hands to the catalog as its {@code uri}. */
  @Test
  void hiveCatalog() {
    try (HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby()) {
      ingestAndVerify(List.of("-C", "type=hive", "-C", "uri=" + hms.uri(),
          "-C", "warehouse=" + dir.resolve("warehouse").toUri()));
      ingestAndVerify(List.of("-C", "type=hive", "-C", "hive.metastore.uris=" + hms.uri(),
          "-C", "warehouse=" + dir.resolve("warehouse").toUri()), "shop.orders_by_hive_key");
      // in that metastore, not in one the Hive client could have started in this JVM (the test class path has one)
      CliRun byUri = run(List.of("-C", "type=hive", "-C", "uri=" + hms.uri()), "verify", "--source", SAMPLE,
          "--table", "shop.orders_by_hive_key", "--key", "order_id");
      assertThat(byUri.exitCode()).as(byUri.toString()).isZero();
    }
  }

  @Test
  void jdbcCatalogOnPostgres() throws Exception {
    try (EmbeddedPostgres pg = EmbeddedPostgres.startNew()) {
      String url = pg.createDatabase("catalog");
      ingestAndVerify(List.of("-C", "type=jdbc", "-C", "uri=" + url, "-C", "jdbc.user=" + pg.user(),
          "-C", "jdbc.password=pg-secret-4711", "-C", "warehouse=" + dir.resolve("warehouse").toUri()));
    }
  }
}
