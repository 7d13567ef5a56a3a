package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.testing.KafkaBroker;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.ExceptionUtils;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The stateless-resubmission trap, in a MiniCluster reading a real broker (in this JVM): a bounded Kafka → Iceberg
 * job with {@link KafkaStartingOffsets#guarding} reads its topic once; submitted again without its state, it fails
 * before reading, naming job, table and partitions, and the table keeps each message once. The same resubmission
 * with plain {@code earliest} offsets — the trap — adds every message a second time.
 */
class KafkaStartingOffsetsIT {
  @RegisterExtension
  static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
      new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
          .build());

  private static final String TOPIC = "orders-resubmitted";
  private static final int MESSAGES = 300;

  @TempDir
  Path dir;

  @Test
  void aSubmissionWithoutStateOfAJobTheTableHoldsFailsInsteadOfReadingTheTopicAgain() throws Exception {
    String warehouse = dir.resolve("warehouse").toString();
    try (KafkaBroker kafka = KafkaBroker.inProcess(dir.resolve("kafka"))) {
      kafka.createTopic(TOPIC, 2);
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(
          Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()), new StringSerializer(),
          new StringSerializer())) {
        for (long id = 0; id < MESSAGES; id++) {
          producer.send(new ProducerRecord<>(TOPIC, Long.toString(id), id + "," + (1_700_000_000_000L + id)));
        }
        producer.flush();
      }

      run(kafka, warehouse, true);
      assertThat(idCounts(warehouse)).as("the first start reads the topic once").hasSize(MESSAGES)
          .allSatisfy((id, n) -> assertThat(n).isOne());

      assertThatThrownBy(() -> run(kafka, warehouse, true))
          .satisfies(e -> assertThat(ExceptionUtils.findThrowableWithMessage(e, "already committed up to checkpoint"))
              .hasValueSatisfying(cause -> assertThat(cause.getMessage())
                  .contains("Job " + FlinkKafkaProcessIT.TABLE + "-resubmitted")
                  .contains("to table " + FlinkKafkaProcessIT.TABLE)
                  .contains(TOPIC + "-0").contains(TOPIC + "-1")
                  .contains("Restore the job from its latest checkpoint or savepoint")));
      assertThat(idCounts(warehouse)).as("the refused submission added nothing").hasSize(MESSAGES)
          .allSatisfy((id, n) -> assertThat(n).isOne());

      // the trap itself: the same submission with plain starting offsets reads the topic again
      run(kafka, warehouse, false);
      assertThat(idCounts(warehouse)).as("without the guard, every message twice").hasSize(MESSAGES)
          .allSatisfy((id, n) -> assertThat(n).isEqualTo(2));
    }
  }

  /** One bounded submission (no state, no restarts) of the Kafka → Iceberg job, to the end of the topic. */
  private static void run(KafkaBroker kafka, String warehouse, boolean guarded) throws Exception {
    StreamExecutionEnvironment env = TestJobs.environment(2, 0);
    LakecommitFlinkSink sink = LakecommitFlinkSink.forRowData(FlinkKafkaProcessIT.ROW_TYPE)
        .iceberg(() -> FlinkKafkaProcessIT.config(Map.of("type", "hadoop", "warehouse", warehouse)))
        .jobName("resubmitted")
        .build();
    KafkaSource<String> source = KafkaSource.<String>builder()
        .setBootstrapServers(kafka.bootstrapServers())
        .setTopics(TOPIC)
        .setGroupId("resubmitted")
        .setStartingOffsets(guarded ? KafkaStartingOffsets.guarding(sink, OffsetsInitializer.earliest())
            : OffsetsInitializer.earliest())
        .setBounded(OffsetsInitializer.latest())
        .setValueOnlyDeserializer(new SimpleStringSchema())
        .build();
    env.fromSource(source, WatermarkStrategy.noWatermarks(), "kafka").uid("kafka")
        .map(new FlinkKafkaProcessIT.ToRow()).uid("to-row")
        .returns(InternalTypeInfo.of(FlinkKafkaProcessIT.ROW_TYPE))
        .sinkTo(sink).uid("lakecommit-sink");
    env.execute("resubmitted-" + guarded);
  }

  private static Map<Long, Integer> idCounts(String warehouse) throws Exception {
    Map<Long, Integer> counts = new HashMap<>();
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(IcebergFlinkSinkIT.load(warehouse, FlinkKafkaProcessIT.TABLE)).build()) {
      for (Record record : records) {
        counts.merge((Long) record.getField("id"), 1, Integer::sum);
      }
    }
    return counts;
  }
}
