package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.lakecommit.core.testing.KafkaBroker;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What users do across runs of a Kafka job, with the same documented outcomes as for file inputs (README, "Runs of
 * a job"): a restore from an older checkpoint stops (or, asked to, writes the rows after it again — duplicates,
 * never loss); a table dropped and created again under the checkpoint directory's feet stops the job (or, asked to,
 * starts it afresh from the start of the topic). Each outcome is audited against the topic with {@code verify}.
 */
class KafkaRunsIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir static Path brokerDir;
  static KafkaBroker broker;
  @TempDir Path dir;

  @BeforeAll
  static void startBroker() {
    broker = KafkaBroker.inProcess(brokerDir);
  }

  @AfterAll
  static void stopBroker() {
    if (broker != null) {
      broker.close();
    }
  }

  private String input(String topic) {
    return "kafka://" + broker.bootstrapServers() + "/" + topic;
  }

  private CliRun ingest(String topic, String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input(topic), "--table", "load.events",
        "--warehouse", dir.resolve("wh").toString(), "--schema", "id long, kind string, ts long",
        "--checkpoint-every-records", "300", "--parallelism", "2", "--until", "end", "--job-id", topic + "-job",
        "--checkpoint-dir", dir.resolve("checkpoints").toString()));
    args.addAll(List.of(extra));
    return CliRun.of(args.toArray(String[]::new));
  }

  private JsonNode verify(String topic) throws IOException {
    CliRun verify = CliRun.of("verify", "--source", input(topic), "--table", "load.events", "--warehouse",
        dir.resolve("wh").toString(), "--key", "id", "--json");
    assertThat(verify.exitCode()).as("%s", verify).isIn(0, 1);
    return JSON.readTree(verify.out().substring(verify.out().indexOf('{')));
  }

  private static void assertAudit(JsonNode report, long sourceRows, long duplicateKeys, long lostKeys) {
    assertThat(report.get("sourceRows").asLong()).as("%s", report).isEqualTo(sourceRows);
    assertThat(report.get("duplicateKeys").asLong()).as("%s", report).isEqualTo(duplicateKeys);
    assertThat(report.get("lostKeys").asLong()).as("%s", report).isEqualTo(lostKeys);
  }

  private static void copy(Path from, Path to) throws IOException {
    try (Stream<Path> paths = Files.walk(from)) {
      for (Path path : paths.toList()) {
        Path target = to.resolve(from.relativize(path).toString());
        if (Files.isDirectory(path)) {
          Files.createDirectories(target);
        } else {
          Files.copy(path, target);
        }
      }
    }
  }

  private static void delete(Path root) throws IOException {
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(path);
      }
    }
  }

  /**
   * The checkpoint directory restored from a backup taken before the last run: the table's offsets are ahead of the
   * checkpoint's. The job stops and commits nothing; with {@code --on-restore-behind CONTINUE} it reads on from the
   * checkpoint's offsets and writes exactly the rows after it again.
   */
  @Test
  void aRestoreFromAnOlderCheckpointStopsOrWritesTheRowsAfterItAgainOnPurpose() throws Exception {
    broker.createTopic("rewind", 2);
    KafkaTopics.produce(broker, "rewind", 0, 600);
    CliRun first = ingest("rewind");
    assertThat(first.exitCode()).as("%s", first).isZero();
    Path checkpoints = dir.resolve("checkpoints");
    copy(checkpoints, dir.resolve("backup"));

    KafkaTopics.produce(broker, "rewind", 600, 1_000);
    CliRun second = ingest("rewind");
    assertThat(second.exitCode()).as("%s", second).isZero();
    assertThat(second.out()).contains("Committed 400 rows");

    delete(checkpoints);
    copy(dir.resolve("backup"), checkpoints);
    KafkaTopics.produce(broker, "rewind", 1_000, 1_200);
    CliRun refused = ingest("rewind");
    assertThat(refused.exitCode()).as("%s", refused).isEqualTo(3);
    assertThat(refused.err() + refused.out()).contains("already holds checkpoint")
        .contains("newer than the checkpoint restored").contains("CONTINUE");
    // nothing was committed: the 200 new messages are not in the table, nothing is twice
    assertAudit(verify("rewind"), 1_200, 0, 200);

    CliRun rewound = ingest("rewind", "--on-restore-behind", "CONTINUE");
    assertThat(rewound.exitCode()).as("%s", rewound).isZero();
    // the documented outcome of the deliberate rewind: the 400 rows after the restored checkpoint are written again
    assertAudit(verify("rewind"), 1_200, 400, 0);
    CliRun status = CliRun.of("status", "--table", "load.events", "--warehouse", dir.resolve("wh").toString(),
        "--json", "--input", input("rewind"));
    assertThat(status.out()).as("%s", status).contains("\"total-lag\" : 0");
  }

  /**
   * The table dropped and created again while the checkpoint directory stays: the checkpoint belongs to the old
   * table, so the job stops and commits nothing into the new one; {@code --start-afresh-on-new-table} reads the topic
   * from its start into the new table, every message exactly once.
   */
  @Test
  void aTableDroppedAndCreatedAgainStopsTheJobOrStartsItAfreshFromTheStartOfTheTopic() throws Exception {
    broker.createTopic("recreated", 2);
    KafkaTopics.produce(broker, "recreated", 0, 500);
    CliRun first = ingest("recreated");
    assertThat(first.exitCode()).as("%s", first).isZero();

    Path wh = dir.resolve("wh").toAbsolutePath();
    Catalog catalog = CatalogUtil.buildIcebergCatalog("lakecommit", Map.of("type", "jdbc", "uri", "jdbc:sqlite:"
        + wh.resolve("catalog.db"), "warehouse", wh.toUri().toString(), "jdbc.schema-version", "V1"),
        new org.apache.hadoop.conf.Configuration());
    try {
      String uuid = ((org.apache.iceberg.HasTableOperations) catalog.loadTable(TableIdentifier.parse("load.events")))
          .operations().current().uuid();
      assertThat(catalog.dropTable(TableIdentifier.parse("load.events"), true)).isTrue();
      catalog.createTable(TableIdentifier.parse("load.events"), new org.apache.iceberg.Schema(
          org.apache.iceberg.types.Types.NestedField.optional(1, "id", org.apache.iceberg.types.Types.LongType.get()),
          org.apache.iceberg.types.Types.NestedField.optional(2, "kind",
              org.apache.iceberg.types.Types.StringType.get()),
          org.apache.iceberg.types.Types.NestedField.optional(3, "ts",
              org.apache.iceberg.types.Types.LongType.get())));
      assertThat(((org.apache.iceberg.HasTableOperations) catalog.loadTable(TableIdentifier.parse("load.events")))
          .operations().current().uuid()).isNotEqualTo(uuid);
    } finally {
      ((java.io.Closeable) catalog).close();
    }
    KafkaTopics.produce(broker, "recreated", 500, 700);

    CliRun refused = ingest("recreated");
    assertThat(refused.exitCode()).as("%s", refused).isEqualTo(3);
    assertThat(refused.err() + refused.out()).contains("another table").contains("dropped and created again");
    assertAudit(verify("recreated"), 700, 0, 700);

    CliRun afresh = ingest("recreated", "--start-afresh-on-new-table");
    assertThat(afresh.exitCode()).as("%s", afresh).isZero();
    assertThat(afresh.out()).contains("Committed 700 rows");
    assertAudit(verify("recreated"), 700, 0, 0);
  }

  /**
   * A job that has not committed yet is shown by {@code status} from its first seconds: the run's start offsets,
   * the topic's end offsets and the lag between them, and where its metrics are served; once it commits (here on
   * SIGTERM), its committed offsets take over.
   */
  @Test
  void statusShowsWhereAJobStartedAndItsLagBeforeItsFirstCommit() throws Exception {
    broker.createTopic("fresh", 2);
    KafkaTopics.produce(broker, "fresh", 0, 800);
    List<String> args = List.of("ingest", "--input", input("fresh"), "--table", "load.events", "--warehouse",
        dir.resolve("wh").toString(), "--schema", "id long, kind string, ts long", "--job-id", "fresh-job",
        "--checkpoint-interval", "1h", "--checkpoint-every-records", "1000000", "--metrics-host", "127.0.0.1",
        "--metrics-port", "0");
    Path log = dir.resolve("fresh.log");
    Process job = new ProcessBuilder(KillLoop.command(List.of(), args)).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    try {
      KillLoop.awaitOutput(job, log, "Metrics at ");
      JsonNode status = JSON.createObjectNode();
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(2);
      while (!status.path("newest-runs").has("fresh-job")) {
        assertThat(job.isAlive()).as("the job runs: %s", Files.readString(log)).isTrue();
        assertThat(System.nanoTime()).as("status showed the job within 2 minutes").isLessThan(deadline);
        CliRun run = CliRun.of("status", "--table", "load.events", "--warehouse", dir.resolve("wh").toString(),
            "--json", "--input", input("fresh"));
        assertThat(run.exitCode()).as("%s", run).isZero();
        status = JSON.readTree(run.out());
        job.waitFor(100, java.util.concurrent.TimeUnit.MILLISECONDS); // polling: the job is not asked anything
      }
      assertThat(status.path("jobs").size()).as("nothing committed: %s", status).isZero();
      JsonNode run = status.path("newest-runs").path("fresh-job");
      assertThat(run.path("metrics").asText()).as("%s", status).startsWith("http://127.0.0.1:").endsWith("/metrics");
      JsonNode offsets = run.path("start-offsets");
      long ends = 0;
      for (String partition : List.of("fresh-0", "fresh-1")) {
        assertThat(offsets.path(partition).path("start").asLong(-1)).as("%s", status).isZero();
        ends += offsets.path(partition).path("end").asLong();
        assertThat(offsets.path(partition).path("lag").asLong()).isEqualTo(offsets.path(partition).path("end")
            .asLong());
      }
      // offsets, as Kafka counts lag: the 800 messages and the markers of the transactions that produced them
      assertThat(ends).as("%s", status).isGreaterThanOrEqualTo(800);
      assertThat(offsets.path("total-lag").asLong()).as("%s", status).isEqualTo(ends);
      String text = CliRun.of("status", "--table", "load.events", "--warehouse", dir.resolve("wh").toString())
          .out();
      assertThat(text).contains("job fresh-job: newest run started at ").contains("nothing committed yet")
          .contains("metrics at http://127.0.0.1:");
    } finally {
      job.destroy();
      assertThat(job.waitFor(2, java.util.concurrent.TimeUnit.MINUTES)).as("the job stopped on SIGTERM").isTrue();
    }
    assertThat(job.exitValue()).as(Files.readString(log)).isZero();
    CliRun after = CliRun.of("status", "--table", "load.events", "--warehouse", dir.resolve("wh").toString(),
        "--json", "--input", input("fresh"));
    JsonNode status = JSON.readTree(after.out());
    assertThat(status.path("committed-offsets").path("fresh-job").path("total-lag").asLong(-1)).as("%s", status)
        .isZero();
    assertThat(status.path("newest-runs").path("fresh-job").has("start-offsets")).as("%s", status).isFalse();
  }
}
