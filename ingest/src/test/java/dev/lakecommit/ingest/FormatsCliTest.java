package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.zip.GZIPOutputStream;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The formats of issue 15, point 5, through the tool: a gzipped JSON lines landing file audited exactly,
 * {@code --partition-by} with a transform that takes a number, and epoch milliseconds under {@code --schema}.
 */
class FormatsCliTest {
  @TempDir Path dir;

  private Table table(String name) {
    return CatalogUtil.buildIcebergCatalog("lakecommit", Map.of("type", "jdbc",
        "uri", "jdbc:sqlite:" + dir.resolve("wh").toAbsolutePath().resolve("catalog.db"),
        "warehouse", dir.resolve("wh").toAbsolutePath().toUri().toString(), "jdbc.schema-version", "V1"),
        new org.apache.hadoop.conf.Configuration()).loadTable(TableIdentifier.parse(name));
  }

  @Test
  void aGzippedLandingFileIsIngestedPartitionedByBucketAndAuditedExactly() throws Exception {
    Path gz = Files.createDirectories(dir.resolve("in")).resolve("orders.jsonl.gz");
    try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(gz))) {
      out.write(Files.readAllBytes(CliTest.SAMPLE));
    }

    CliRun run = CliRun.of("ingest", "--input", gz.toString(), "--table", "demo.orders", "--warehouse",
        dir.resolve("wh").toString(), "--checkpoint-every-records", "700", "--partition-by", "bucket(16, order_id)",
        "--parallelism", "2");

    assertThat(run.exitCode()).as(run.toString()).isZero();
    assertThat(run.out()).contains("Committed 2,000 rows in 3 checkpoint(s)");
    assertThat(table("demo.orders").spec().fields()).extracting(f -> f.transform().toString())
        .containsExactly("bucket[16]");
    CliRun verify = CliRun.of("verify", "--source", gz.toString(), "--table", "demo.orders", "--warehouse",
        dir.resolve("wh").toString(), "--key", "order_id", "--json");
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
  }

  @Test
  void partitionTransformsWithArgumentsAndPlainColumnsMix() {
    CliRun run = CliRun.of("ingest", "--input", CliTest.SAMPLE.toString(), "--table", "demo.mixed", "--warehouse",
        dir.resolve("wh").toString(), "--partition-by", "truncate(4, region),bucket(8, order_id)",
        "--partition-by", "day(ordered_at)");

    assertThat(run.exitCode()).as(run.toString()).isZero();
    assertThat(table("demo.mixed").spec().fields()).extracting(f -> f.transform().toString())
        .containsExactly("truncate[4]", "bucket[8]", "day");
  }

  @Test
  void epochMillisecondsBecomeTimestampsUnderAnExplicitSchema() throws Exception {
    Path input = dir.resolve("in.jsonl");
    Files.writeString(input, "{\"id\": 1, \"ts\": 1700000000123}\n{\"id\": 2, \"ts\": 1700000001000}\n");

    CliRun run = CliRun.of("ingest", "--input", input.toString(), "--table", "demo.times", "--warehouse",
        dir.resolve("wh").toString(), "--schema", "id long, ts timestamptz", "--partition-by", "hour(ts)");

    assertThat(run.exitCode()).as(run.toString()).isZero();
    assertThat(run.out()).contains("Committed 2 rows");
    CliRun verify = CliRun.of("verify", "--source", input.toString(), "--schema", "id long, ts timestamptz",
        "--table", "demo.times", "--warehouse", dir.resolve("wh").toString(), "--key", "id", "--event-time", "ts");
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
  }
}
