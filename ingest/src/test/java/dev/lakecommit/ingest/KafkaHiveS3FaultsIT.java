package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.lakecommit.core.testing.KafkaBroker;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.staging.testing.FaultInjectingS3Proxy;
import dev.lakecommit.staging.testing.FaultRule;
import dev.lakecommit.staging.testing.FaultRule.Fault;
import dev.lakecommit.staging.testing.S3TestServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The stream audit with all four kinds of fault, into a Hive table and an Iceberg table (Hive catalog) on S3: SIGKILLs of the tool, broker restarts,
 * metastore outages and windows of S3 errors through the fault proxy (503 SlowDown, 500, connection resets), at
 * seeded random moments while a producer streams; then SIGTERM, and verify against the topic: 0 duplicates, 0
 * losses, out-of-order rate at most 0.1 %.
 */
class KafkaHiveS3FaultsIT {
  @TempDir Path dir;
  private KafkaBroker broker;
  private S3TestServer s3;
  private FaultInjectingS3Proxy proxy;
  private HiveMetastoreServer hms;
  private String bucket;

  @BeforeEach
  void start() throws Exception {
    bucket = "lc-kafka-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    s3 = S3TestServer.start(bucket);
    Configuration direct = s3.s3aConfiguration();
    HiveMetastoreServer.Builder builder = HiveMetastoreServer.builder().derby();
    for (String key : HiveS3IngestIT.S3A_KEYS) {
      builder.serverConf(key, direct.get(key));
    }
    hms = builder.start();
    proxy = FaultInjectingS3Proxy.start(s3, TestScale.seed());
    broker = KafkaBroker.inProcess(dir.resolve("kafka"));
  }

  @AfterEach
  void stop() throws Exception {
    try {
      if (broker != null) {
        broker.close();
      }
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

  /** The tool's options for the table: the metastore, and S3A through the proxy with test-sized retry waits. */
  private List<String> hive() {
    List<String> options = new ArrayList<>(List.of("--target", "hive", "--metastore-uri", hms.uri()));
    Configuration conf = proxy.s3aConfiguration();
    for (String key : HiveS3IngestIT.S3A_KEYS) {
      options.addAll(List.of("-C", key + "=" + conf.get(key)));
    }
    // upload blocks on disk: 2 writers x 7 partitions of 64 MiB direct buffers do not fit the tool's -Xmx512m
    options.addAll(List.of("-C", "fs.s3a.impl.disable.cache=true", "-C", "fs.s3a.create.performance=true",
        "-C", "fs.s3a.retry.interval=50ms", "-C", "fs.s3a.retry.throttle.interval=50ms",
        "-C", "fs.s3a.fast.upload.buffer=disk", "-C", "fs.s3a.buffer.dir=" + dir.resolve("s3a-buffer")));
    return options;
  }

  private String input() {
    return "kafka://" + broker.bootstrapServers() + "/payments";
  }

  /**
   * The four kinds of fault: SIGKILL is the loop's own; broker restarts, metastore outages, S3 error windows. An S3
   * window runs while the producer goes on (an idle tool sends no request: a window then injects nothing) and
   * closes on the proxy's count, not on time: it stays open until the tool's own requests met an error, then for
   * an outage's length. {@code s3Errors} counts the errors injected per window, one entry per window.
   */
  private KafkaFaultLoop faults(long seed, List<Long> s3Errors) {
    KafkaFaultLoop loop = new KafkaFaultLoop(dir, seed);
    return loop.fault("broker-restart", () -> {
      broker.stop();
      loop.outage(loop.process());
      broker.start();
    }).fault("metastore-outage", () -> {
      hms.stop();
      loop.outage(loop.process());
      hms.start();
    }).faultWhileProducing("s3-errors", () -> {
      long before = proxy.injected();
      proxy.rules(FaultRule.everyRequest(0.3, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR, Fault.RESET));
      loop.awaitWhileRunning(() -> proxy.injected() > before, Duration.ofMinutes(5),
          () -> "an S3 error injected into the tool's requests (" + proxy + ")");
      loop.outage(loop.process());
      proxy.rules();
      s3Errors.add(proxy.injected() - before);
    });
  }

  /** Prints the S3 faults of a run, per window and per kind, and checks that every window injected some. */
  private void assertS3Faults(long seed, List<Long> s3Errors) {
    System.out.printf("KafkaHiveS3FaultsIT seed %d: S3 errors per window %s; SLOW_DOWN %d, INTERNAL_ERROR %d, "
        + "RESET %d; %,d requests, %,d SDK retries%n", seed, s3Errors, proxy.injected(Fault.SLOW_DOWN),
        proxy.injected(Fault.INTERNAL_ERROR), proxy.injected(Fault.RESET), proxy.requests(),
        proxy.retriedRequests());
    assertThat(s3Errors).as("seed %s: S3 error windows (%s)", seed, proxy).hasSize(TestScale.pick(1, 3))
        .allSatisfy(errors -> assertThat(errors).isPositive());
  }

  /** The audit against the topic, with the table's options; asserts the rates. */
  private void audit(long seed, int messages, String table, List<String> options) throws Exception {
    List<String> verify = new ArrayList<>(List.of("verify", "--source", input(), "--table", table,
        "--key", "id", "--event-time", "ts", "--schema", "id long, kind string, ts long", "--json"));
    verify.addAll(options);
    CliRun audit = CliRun.of(verify.toArray(String[]::new));
    System.out.println("KafkaHiveS3FaultsIT audit of " + table + " (seed " + seed + "): "
        + audit.out().replaceAll("\\s+", " "));
    assertThat(audit.exitCode()).as("%s", audit).isZero();
    JsonNode report = new ObjectMapper().readTree(audit.out());
    assertThat(report.get("sourceRows").asLong()).isEqualTo(messages);
    assertThat(report.get("duplicateKeys").asLong()).as("seed %s", seed).isZero();
    assertThat(report.get("lostKeys").asLong()).as("seed %s", seed).isZero();
    assertThat(report.get("outOfOrderRows").asDouble() / messages).as("seed %s: out-of-order rate", seed)
        .isLessThanOrEqualTo(0.001);
  }

  @Test
  void fourKindsOfFaultWhileStreamingIntoHiveLoseAndDuplicateNothing() throws Exception {
    long seed = TestScale.seed();
    int messages = TestScale.pick(30_000, 1_000_000);
    broker.createTopic("payments", 3);
    List<Long> s3Errors = new ArrayList<>();
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input(), "--table", "sales.payments",
        "--schema", "id long, kind string, ts long", "--partition-by", "kind", "--job-id", "payments-stream",
        "--parallelism", "2", "--checkpoint-interval", "1s", "--checkpoint-every-records", "20000",
        "--checkpoint-dir", s3.s3aLocation(bucket, "checkpoints/payments-stream"),
        "--table-location", s3.s3aLocation(bucket, "tables/payments"), "--external"));
    args.addAll(hive());

    // 4 kinds x 1 in the default build (4 faults), x 3 in -Plong (12 faults)
    faults(seed, s3Errors).run(broker, "payments", messages, KillLoop.command(List.of("-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC"), args), TestScale.pick(1, 3), () -> caughtUp("sales.payments", hive()));

    audit(seed, messages, "sales.payments", hive());
    assertS3Faults(seed, s3Errors);
  }

  /**
   * The same into an Iceberg table of a Hive catalog (the metastore outage is a catalog outage), its data and
   * metadata and the job's checkpoints on S3 through S3FileIO and the fault proxy.
   */
  @Test
  void fourKindsOfFaultWhileStreamingIntoIcebergLoseAndDuplicateNothing() throws Exception {
    long seed = TestScale.seed();
    int messages = TestScale.pick(30_000, 1_000_000);
    broker.createTopic("payments", 3);
    List<Long> s3Errors = new ArrayList<>();
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input(), "--table", "sales.payments",
        "--schema", "id long, kind string, ts long", "--partition-by", "kind", "--job-id", "payments-iceberg",
        "--parallelism", "2", "--checkpoint-interval", "1s", "--checkpoint-every-records", "20000",
        "--checkpoint-dir", s3.location(bucket, "checkpoints/payments-iceberg")));
    args.addAll(iceberg());

    faults(seed, s3Errors).run(broker, "payments", messages, KillLoop.command(List.of("-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC"), args), TestScale.pick(1, 3), () -> caughtUp("sales.payments", iceberg()));

    audit(seed, messages, "sales.payments", iceberg());
    assertS3Faults(seed, s3Errors);
  }

  /** An Iceberg Hive catalog on the metastore, S3FileIO through the proxy with test-sized retry waits. */
  private List<String> iceberg() {
    List<String> options = new ArrayList<>(List.of("-C", "type=hive", "-C", "uri=" + hms.uri(), "-C",
        "warehouse=" + s3.s3aLocation(bucket, "warehouse"), "-C", "io-impl=org.apache.iceberg.aws.s3.S3FileIO"));
    java.util.Map<String, String> props = new java.util.LinkedHashMap<>(proxy.s3FileIOProperties());
    props.put("s3.retry.num-retries", "6");
    props.put("s3.retry.min-wait-ms", "20");
    props.put("s3.retry.max-wait-ms", "500");
    props.forEach((key, value) -> options.addAll(List.of("-C", key + "=" + value)));
    return options;
  }

  private boolean caughtUp(String table, List<String> options) {
    List<String> status = new ArrayList<>(List.of("status", "--table", table, "--json", "--input", input()));
    status.addAll(options);
    return KafkaTopics.caughtUp(CliRun.of(status.toArray(String[]::new)).out());
  }
}
