package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.runtime.CrashHarness;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.staging.testing.S3TestServer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.UnaryOperator;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Hive sink suite on S3 through S3A: an in-process S3 server (S3Proxy) on loopback, and a metastore that
 * reaches the same storage (it creates table and partition directories there). Renames are server-side copies
 * and deletes.
 */
class S3HiveSinkIT extends HiveSinkSuite {
  static final List<String> S3A_KEYS = List.of("fs.s3a.endpoint", "fs.s3a.endpoint.region",
      "fs.s3a.path.style.access", "fs.s3a.connection.ssl.enabled", "fs.s3a.access.key", "fs.s3a.secret.key",
      "fs.s3a.aws.credentials.provider", "fs.s3a.change.detection.version.required", "fs.s3a.fast.upload.buffer");

  private S3TestServer s3;
  private HiveMetastoreServer hms;
  private HiveFixture fixture;

  @BeforeAll
  void start() throws Exception {
    // A bucket of its own: S3A file systems are cached per bucket, and an earlier server had another port.
    String bucket = "lc-hive-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    s3 = S3TestServer.start(bucket);
    Configuration s3a = s3.s3aConfiguration();
    Map<String, String> properties = new LinkedHashMap<>();
    for (String key : S3A_KEYS) {
      properties.put(key, s3a.get(key));
    }
    // Staged names are unique: creating a file need not probe for an existing one first.
    properties.put("fs.s3a.create.performance", "true");
    HiveMetastoreServer.Builder builder = HiveMetastoreServer.builder().derby();
    properties.forEach(builder::serverConf);
    hms = builder.start();
    fixture = new HiveFixture(hms, s3.s3aLocation(bucket, "warehouse"), properties);
  }

  @AfterAll
  void stop() throws Exception {
    try {
      if (fixture != null) {
        fixture.close();
      }
      if (hms != null) {
        hms.close();
      }
    } finally {
      if (s3 != null) {
        s3.close();
      }
    }
  }

  /**
   * Staged files are uploads completed at commit here. Without the idempotency checks, a commit replayed after a
   * crash right before its watermark lands its files again (under new names), and the table holds rows twice.
   */
  @Test
  void withoutTheIdempotencyCheckAReplayedCommitDuplicatesRows() throws Exception {
    String unsafe = HiveFixture.newTable("unsafe");
    CrashHarness.Outcome duplicated = runJob(unsafe, CrashSchedule.at(CommitHook.BEFORE_WATERMARK, 2), false,
        crashes -> UnaryOperator.identity(), b -> b.createTable(HiveTestData.SCHEMA, HiveTestData.PARTITIONED),
        CRASH_ROWS);

    assertThat(duplicated.crashes()).as("failure %s", duplicated.failure()).isEqualTo(1);
    assertThat(duplicated.audit().duplicateKeys()).as(duplicated.audit().toString()).isPositive();
  }

  @Override
  HiveFixture fixture() {
    return fixture;
  }

  @Override
  int manyPartitions() {
    return TestScale.pick(15, 1000);
  }

  @Override
  boolean thorough() {
    return false;
  }
}
