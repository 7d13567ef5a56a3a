package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.staging.testing.FaultInjectingS3Proxy;
import dev.lakecommit.staging.testing.FaultRule;
import dev.lakecommit.staging.testing.FaultRule.Fault;
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

/**
 * {@code --target hive} on S3 through S3A while 10 % of the tool's S3 requests fail (503 SlowDown, 500
 * InternalError, connection resets; seeded): S3A retries them, the ingest completes, and the audit finds every
 * row once. The metastore reaches the same server directly.
 */
class HiveS3FaultsIngestIT {
  private static final int ROWS = TestScale.pick(200_000, 1_000_000);
  private static final int FILES = 4;
  private static S3TestServer s3;
  private static FaultInjectingS3Proxy proxy;
  private static HiveMetastoreServer hms;
  private static String bucket;

  @BeforeAll
  static void start() throws Exception {
    // A bucket of its own: S3A file systems are cached per bucket.
    bucket = "lc-hive-faults-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    s3 = S3TestServer.start(bucket);
    Configuration direct = s3.s3aConfiguration();
    HiveMetastoreServer.Builder builder = HiveMetastoreServer.builder().derby();
    for (String key : HiveS3IngestIT.S3A_KEYS) {
      builder.serverConf(key, direct.get(key));
    }
    hms = builder.start();
    try (S3Client client = s3.client()) {
      int perFile = ROWS / FILES;
      for (int file = 0; file < FILES; file++) {
        StringBuilder lines = new StringBuilder(perFile * 40);
        for (int i = 0; i < perFile; i++) {
          long id = (long) file * perFile + i;
          lines.append("{\"id\": ").append(id).append(", \"region\": \"r").append(id % 4)
              .append("\", \"amount\": ").append(id % 997).append("}\n");
        }
        String key = "landing/part-" + file + ".jsonl";
        client.putObject(b -> b.bucket(bucket).key(key), RequestBody.fromString(lines.toString()));
      }
    }
    proxy = FaultInjectingS3Proxy.start(s3, TestScale.seed());
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (proxy != null) {
        proxy.close();
      }
      if (hms != null) {
        hms.close();
      }
    } finally {
      s3.close();
    }
  }

  /** The tool's S3A options: through the proxy, with test-sized waits between S3A's retries. */
  private static List<String> s3a() {
    Configuration conf = proxy.s3aConfiguration();
    List<String> options = new ArrayList<>();
    for (String key : HiveS3IngestIT.S3A_KEYS) {
      options.addAll(List.of("-C", key + "=" + conf.get(key)));
    }
    // The metastore's S3A file system of the same bucket (direct) is cached in this JVM: the tool's must not be.
    options.addAll(List.of("-C", "fs.s3a.impl.disable.cache=true", "-C", "fs.s3a.create.performance=true",
        "-C", "fs.s3a.retry.interval=50ms", "-C", "fs.s3a.retry.throttle.interval=50ms"));
    return options;
  }

  private static CliRun run(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    // --verbose: a failure under faults shows where it came from
    all.addAll(List.of("--target", "hive", "--metastore-uri", hms.uri(), "--verbose"));
    all.addAll(s3a());
    return CliRun.of(all.toArray(String[]::new));
  }

  @Test
  void tenPercentOfRequestsFailingStillIngestsExactlyOnce() {
    String input = s3.s3aLocation(bucket, "landing/");
    proxy.rules(FaultRule.everyRequest(0.10, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR, Fault.RESET));
    CliRun ingest = run("ingest", "--input", input, "--table", "sales.orders", "--partition-by", "region",
        "--job-id", "hive-faults", "--parallelism", "2", "--checkpoint-every-records", Integer.toString(ROWS / 8),
        "--checkpoint-dir", s3.s3aLocation(bucket, "checkpoints/hive-faults"),
        "--table-location", s3.s3aLocation(bucket, "tables/orders"), "--external");
    proxy.rules();

    assertThat(ingest.exitCode()).as("%s\n%s", proxy, ingest).isZero();
    assertThat(ingest.out()).contains(String.format("Committed %,d rows", ROWS));
    assertThat(proxy.injected()).as("faults injected: %s", proxy).isGreaterThan(10);
    assertThat(proxy.retriedRequests()).as("the storage client's retries: %s", proxy).isPositive();

    CliRun audit = run("verify", "--source", input, "--table", "sales.orders", "--key", "id", "--json");
    assertThat(audit.exitCode()).as(audit.toString()).isZero();
    assertThat(audit.out()).contains("\"sourceRows\" : " + ROWS).contains("\"tableRows\" : " + ROWS)
        .contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
  }
}
