package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.KafkaBroker;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Kafka topic into a partitioned Hive table (in-process metastore, real broker): the offsets are a table parameter
 * swapped in with the job's watermark, a rerun resumes exactly, and the audit against the topic is exact.
 */
class KafkaHiveIngestIT {
  @TempDir static Path shared;
  private static KafkaBroker broker;
  private static HiveMetastoreServer hms;
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    broker = KafkaBroker.inProcess(shared.resolve("kafka"));
    hms = HiveMetastoreServer.startOnDerby();
  }

  @AfterAll
  static void stop() {
    if (hms != null) {
      hms.close();
    }
    if (broker != null) {
      broker.close();
    }
  }

  private List<String> hive(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--target", "hive", "--metastore-uri", hms.uri(), "-C",
        "warehouse=" + dir.resolve("wh").toUri()));
    return all;
  }

  @Test
  void offsetsAreATableParameterCommittedWithTheWatermark() throws Exception {
    broker.createTopic("payments", 3);
    KafkaTopics.produce(broker, "payments", 0, 900);
    String input = "kafka://" + broker.bootstrapServers() + "/payments";
    List<String> ingest = hive("ingest", "--input", input, "--table", "shop.payments", "--schema",
        "id long, kind string, ts long", "--partition-by", "kind", "--job-id", "payments-job", "--checkpoint-dir",
        dir.resolve("checkpoints").toString(), "--checkpoint-every-records", "250", "--until", "end");

    CliRun first = CliRun.of(ingest.toArray(String[]::new));
    assertThat(first.exitCode()).as("%s", first).isZero();
    KafkaTopics.produce(broker, "payments", 900, 1_200);
    CliRun second = CliRun.of(ingest.toArray(String[]::new));
    assertThat(second.exitCode()).as("%s", second).isZero();
    assertThat(second.out()).contains("Committed 300 rows");

    Map<String, String> parameters;
    HiveMetaStoreClient client = hms.newClient();
    try {
      parameters = client.getTable("shop", "payments").getParameters();
    } finally {
      client.close();
    }
    String expected = broker.endOffsets("payments").entrySet().stream()
        .sorted(Map.Entry.comparingByKey(java.util.Comparator.comparingInt(TopicPartition::partition)))
        .map(e -> "payments:" + e.getKey().partition() + "=" + e.getValue())
        .collect(java.util.stream.Collectors.joining(","));
    assertThat(parameters).containsEntry("lakecommit.source.payments-job", expected)
        .containsKey("lakecommit.committed.payments-job");

    CliRun verify = CliRun.of(hive("verify", "--source", input, "--table", "shop.payments", "--key", "id",
        "--json").toArray(String[]::new));
    assertThat(verify.exitCode()).as("%s", verify).isZero();
    assertThat(verify.out()).contains("\"sourceRows\" : 1200").contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");
  }
}
