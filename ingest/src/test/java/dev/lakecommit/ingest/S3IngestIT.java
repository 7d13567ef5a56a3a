package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.staging.testing.S3TestServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * The tool against an in-process S3 server: JSON lines on S3 into an Iceberg table on S3 (SQLite catalog, S3FileIO),
 * checkpoints on S3 too; then the audit finds 0 duplicates and 0 losses, and no credential appears in any output.
 */
class S3IngestIT {
  private static S3TestServer s3;

  @TempDir Path dir;

  @BeforeAll
  static void start() throws Exception {
    s3 = S3TestServer.start("landing", "lake");
    try (S3Client client = s3.client()) {
      for (int file = 0; file < 3; file++) {
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < 4000; i++) {
          long id = file * 4000L + i;
          lines.append("{\"id\": ").append(id).append(", \"region\": \"r").append(id % 5).append("\"}\n");
        }
        client.putObject(PutObjectRequest.builder().bucket("landing").key("orders/part-" + file + ".jsonl").build(),
            RequestBody.fromString(lines.toString()));
      }
    }
  }

  @AfterAll
  static void stop() throws Exception {
    s3.close();
  }

  private List<String> catalog() {
    List<String> args = new ArrayList<>(List.of(
        "-C", "type=jdbc", "-C", "uri=jdbc:sqlite:" + dir.resolve("catalog.db"),
        "-C", "jdbc.schema-version=V1",
        "-C", "warehouse=" + s3.location("lake", "warehouse"),
        "-C", "io-impl=org.apache.iceberg.aws.s3.S3FileIO"));
    for (Map.Entry<String, String> property : s3.s3FileIOProperties().entrySet()) {
      args.addAll(List.of("-C", property.getKey() + "=" + property.getValue()));
    }
    return args;
  }

  @Test
  void ingestsFromS3ToAnIcebergTableOnS3ExactlyOnce() throws Exception {
    List<String> ingest = new ArrayList<>(List.of("ingest", "--input", s3.location("landing", "orders/"),
        "--table", "sales.orders", "--partition-by", "region", "--job-id", "s3-orders",
        "--checkpoint-every-records", "2500", "--checkpoint-dir", s3.location("lake", "checkpoints/s3-orders")));
    ingest.addAll(catalog());

    CliRun first = CliRun.of(ingest.toArray(String[]::new));
    assertThat(first.exitCode()).as(first.toString()).isZero();
    assertThat(first.out()).contains("Committed 12,000 rows in 5 checkpoint(s)");
    CliRun again = CliRun.of(ingest.toArray(String[]::new));
    assertThat(again.out()).as(again.toString()).contains("Nothing new to commit");

    List<String> verify = new ArrayList<>(List.of("verify", "--source", s3.location("landing", "orders/"),
        "--table", "sales.orders", "--key", "id", "--json"));
    verify.addAll(catalog());
    CliRun audit = CliRun.of(verify.toArray(String[]::new));
    assertThat(audit.exitCode()).as(audit.toString()).isZero();
    assertThat(audit.out()).contains("\"sourceRows\" : 12000").contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");

    List<String> status = new ArrayList<>(List.of("status", "--table", "sales.orders", "--job-id", "s3-orders",
        "--checkpoint-dir", s3.location("lake", "checkpoints/s3-orders"), "--json"));
    status.addAll(catalog());
    CliRun state = CliRun.of(status.toArray(String[]::new));
    assertThat(state.exitCode()).as(state.toString()).isZero();
    assertThat(state.out()).contains("\"latest-checkpoint\" : 5");

    // The planted secret (the S3 secret key) is in no output of any command.
    for (CliRun run : List.of(first, again, audit, state)) {
      assertThat(run.out() + run.err()).doesNotContain(S3TestServer.SECRET_KEY);
    }
    Files.writeString(dir.resolve("outputs.txt"), first.out() + state.out());
  }
}
