package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.staging.testing.S3TestServer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * {@code --target hive} on S3 through S3A: JSON lines on an in-process S3 server into a Hive table whose location
 * is on the same server, checkpoints there too, everything configured by {@code -C fs.s3a.*}; a metastore that
 * reaches the same storage. Then the audit finds 0 duplicates and 0 losses, and no output shows the secret key.
 */
class HiveS3IngestIT {
  /** The S3A settings a user passes with {@code -C}; the metastore gets the same ones. */
  static final List<String> S3A_KEYS = List.of("fs.s3a.endpoint", "fs.s3a.endpoint.region",
      "fs.s3a.path.style.access", "fs.s3a.connection.ssl.enabled", "fs.s3a.access.key", "fs.s3a.secret.key",
      "fs.s3a.aws.credentials.provider", "fs.s3a.change.detection.version.required", "fs.s3a.fast.upload.buffer");

  private static S3TestServer s3;
  private static HiveMetastoreServer hms;
  private static String bucket;
  private static final List<String> S3A_OPTIONS = new ArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    // A bucket of its own: S3A file systems are cached per bucket, and an earlier server had another port.
    bucket = "lc-ingest-hive-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    s3 = S3TestServer.start(bucket);
    Configuration s3a = s3.s3aConfiguration();
    HiveMetastoreServer.Builder builder = HiveMetastoreServer.builder().derby();
    for (String key : S3A_KEYS) {
      builder.serverConf(key, s3a.get(key));
      S3A_OPTIONS.addAll(List.of("-C", key + "=" + s3a.get(key)));
    }
    // Staged names are unique: creating a file need not probe for an existing one first.
    S3A_OPTIONS.addAll(List.of("-C", "fs.s3a.create.performance=true"));
    hms = builder.start();
    try (S3Client client = s3.client()) {
      for (int file = 0; file < 3; file++) {
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < 4000; i++) {
          long id = file * 4000L + i;
          lines.append("{\"id\": ").append(id).append(", \"region\": \"r").append(id % 5)
              .append("\", \"amount\": ").append(id % 997).append("}\n");
        }
        client.putObject(PutObjectRequest.builder().bucket(bucket).key("landing/part-" + file + ".jsonl").build(),
            RequestBody.fromString(lines.toString()));
      }
    }
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (hms != null) {
        hms.close();
      }
    } finally {
      s3.close();
    }
  }

  private static CliRun run(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--target", "hive", "--metastore-uri", hms.uri()));
    all.addAll(S3A_OPTIONS);
    return CliRun.of(all.toArray(String[]::new));
  }

  @Test
  void ingestsFromS3ToAHiveTableOnS3ExactlyOnce() {
    String input = s3.s3aLocation(bucket, "landing/");
    String checkpoints = s3.s3aLocation(bucket, "checkpoints/s3-hive");
    String[] ingest = {"ingest", "--input", input, "--table", "sales.orders", "--partition-by", "region",
        "--job-id", "s3-hive", "--checkpoint-every-records", "2500", "--checkpoint-dir", checkpoints,
        "--table-location", s3.s3aLocation(bucket, "tables/orders"), "--external"};

    CliRun first = run(ingest);
    assertThat(first.exitCode()).as(first.toString()).isZero();
    assertThat(first.out()).contains("Committed 12,000 rows in 5 checkpoint(s) (5 commit(s)");
    CliRun again = run(ingest);
    assertThat(again.out()).as(again.toString()).contains("Nothing new to commit");

    CliRun audit = run("verify", "--source", input, "--table", "sales.orders", "--key", "id", "--json");
    assertThat(audit.exitCode()).as(audit.toString()).isZero();
    assertThat(audit.out()).contains("\"sourceRows\" : 12000").contains("\"tableRows\" : 12000")
        .contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");

    CliRun state = run("status", "--table", "sales.orders", "--job-id", "s3-hive", "--checkpoint-dir",
        checkpoints, "--json");
    assertThat(state.exitCode()).as(state.toString()).isZero();
    assertThat(state.out()).contains("\"location\" : \"" + s3.s3aLocation(bucket, "tables/orders"))
        .contains("\"s3-hive\" : 5").contains("\"partitions\" : 5").contains("\"latest-checkpoint\" : 5");

    CliRun cleanup = run("cleanup", "--table", "sales.orders", "--job-id", "s3-hive", "--checkpoint-dir",
        checkpoints);
    assertThat(cleanup.exitCode()).as(cleanup.toString()).isZero();
    assertThat(cleanup.out()).contains("0 orphan staged file(s) of job s3-hive");

    for (CliRun run : List.of(first, again, audit, state, cleanup)) {
      assertThat(run.out() + run.err()).doesNotContain(S3TestServer.SECRET_KEY);
    }
  }
}
