package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Mistakes with {@code --target hive}, caught before any server is contacted: each error names the option and
 * exits with the usage code, and nothing is created.
 */
class HiveOptionsTest {
  static final String SAMPLE = Path.of("../examples/orders.jsonl").toString();
  /** Nothing listens here: an option check that came after connecting would fail differently. */
  static final String NO_METASTORE = "thrift://127.0.0.1:1";

  @TempDir Path dir;

  private CliRun ingest(String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", SAMPLE, "--table", "shop.orders",
        "--checkpoint-dir", dir.resolve("checkpoints").toString()));
    args.addAll(List.of(extra));
    return CliRun.of(args.toArray(String[]::new));
  }

  private static void assertUsageError(CliRun run, String... fragments) {
    assertThat(run.exitCode()).as(run.toString()).isEqualTo(2);
    assertThat(run.err()).as(run.toString()).contains(fragments);
  }

  @Test
  void aHiveTargetNeedsAMetastore() {
    assertUsageError(ingest("--target", "hive"), "Missing option --metastore-uri");
    assertUsageError(CliRun.of("status", "--target", "hive", "--table", "shop.orders"),
        "Missing option --metastore-uri");
    assertUsageError(CliRun.of("verify", "--target", "hive", "--table", "shop.orders", "--source", SAMPLE,
        "--key", "order_id"), "Missing option --metastore-uri");
    assertUsageError(CliRun.of("cleanup", "--target", "hive", "--table", "shop.orders", "--job-id", "j"),
        "Missing option --metastore-uri");
  }

  /**
   * Iceberg's Hive catalog without a metastore URI would start a metastore inside the tool on an embedded database
   * (the shaded jar carries none: it failed deep inside DataNucleus with "Could not find API definition for name
   * JDO"); every command refuses it first, naming the option (the other ways to name a metastore:
   * {@code TableOptionsTest}).
   */
  @Test
  void anIcebergHiveCatalogNeedsAMetastoreUri() {
    org.junit.jupiter.api.Assumptions.assumeTrue(new org.apache.hadoop.hive.conf.HiveConf().get(
        "hive.metastore.uris", "").isBlank(), "a hive-site.xml names a metastore on this machine");
    String[] hive = {"-C", "type=hive", "-C", "warehouse=" + dir.resolve("wh").toUri()};
    String missing = "Missing option -C uri";
    assertUsageError(ingest(hive), missing, "thrift://host:port");
    assertUsageError(CliRun.of(with(hive, "status", "--table", "shop.orders")), missing);
    assertUsageError(CliRun.of(with(hive, "verify", "--table", "shop.orders", "--source", SAMPLE, "--key",
        "order_id")), missing);
    assertUsageError(CliRun.of(with(hive, "maintain", "--table", "shop.orders", "--compact")), missing);
    assertUsageError(ingest("-C", "catalog-impl=org.apache.iceberg.hive.HiveCatalog"), missing);
    assertThat(dir.resolve("wh")).doesNotExist();
    assertThat(dir.resolve("checkpoints")).doesNotExist();
  }

  private static String[] with(String[] options, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of(options));
    return all.toArray(String[]::new);
  }

  @Test
  void metastoreUrisMustBeThriftAndAgree() {
    assertUsageError(ingest("--target", "hive", "--metastore-uri", "http://127.0.0.1:9083"),
        "Invalid option --metastore-uri", "thrift://host:port");
    assertUsageError(ingest("--target", "hive", "--metastore-uri", NO_METASTORE, "-C", "uri=thrift://other:9083"),
        "Conflicting metastore URIs", "-C uri");
    assertUsageError(ingest("--target", "hive", "-C", "type=jdbc", "-C", "uri=jdbc:sqlite:x.db"),
        "-C type=jdbc", "--metastore-uri");
  }

  @Test
  void hiveOnlyOptionsAreRefusedForIcebergAndIcebergOnlyOnesForHive() {
    assertUsageError(ingest("--metastore-uri", NO_METASTORE, "--warehouse", dir.resolve("wh").toString()),
        "Option --metastore-uri is for --target hive", "-C type=hive");
    assertUsageError(ingest("--table-location", dir.toUri().toString(), "--warehouse", dir.resolve("wh").toString()),
        "--table-location");
    assertThat(dir.resolve("wh")).doesNotExist();
  }

  @Test
  void hivePartitionsAreColumnsOfTheInput() {
    assertUsageError(ingest("--target", "hive", "--metastore-uri", NO_METASTORE, "--partition-by",
        "day(ordered_at)"), "Invalid option --partition-by: 'day(ordered_at)'");
    assertUsageError(ingest("--target", "hive", "--metastore-uri", NO_METASTORE, "--partition-by", "regio"),
        "Invalid option --partition-by", "'regio'", "region");
  }

  @Test
  void anUnknownTargetIsRejectedWithTheChoices() {
    CliRun run = ingest("--target", "delta");
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("--target").contains("ICEBERG").contains("HIVE");
  }
}
