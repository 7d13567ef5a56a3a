package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.lakecommit.core.testing.KafkaBroker;
import java.nio.file.Path;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * commit-core's {@link KafkaBroker}, in this JVM and in a child JVM started from the Flink adapter's test classpath
 * (Flink 2.1, Hive Metastore 2.3, Hadoop 3.4, Iceberg): one record round-trips.
 */
class KafkaBrokerSmokeIT {
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"in-process", "child JVM"})
  void oneRecordRoundTrips(String mode, @TempDir Path dir) {
    try (KafkaBroker kafka = mode.equals("child JVM") ? KafkaBroker.childJvm(dir) : KafkaBroker.inProcess(dir)) {
      kafka.createTopic("smoke", 1);
      assertThat(kafka.send("smoke", "order-1", "{\"order_id\": 1}")).isZero();

      assertThat(kafka.records("smoke", "read_committed"))
          .extracting(ConsumerRecord::key, ConsumerRecord::value)
          .containsExactly(tuple("order-1", "{\"order_id\": 1}"));
    }
  }
}
