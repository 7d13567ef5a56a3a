package dev.lakecommit.core.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link KafkaBroker} in this JVM and in a child JVM: transactions (committed and aborted) read with
 * read_committed, outages by stop/start and SIGKILL with data and port kept, partitions added, and records deleted
 * as retention would.
 */
class KafkaBrokerIT {
  private static final Duration POLL_TIMEOUT = Duration.ofSeconds(30);
  private static final int ABORTED = 2;

  @Test
  void inProcessBrokerKeepsCommittedTransactionsAcrossRestartAndDeletesRecords(@TempDir Path dir) {
    long begin = System.nanoTime();
    try (KafkaBroker kafka = KafkaBroker.inProcess(dir)) {
      long started = System.nanoTime();
      kafka.createTopic("orders", 2);
      List<String> committed = produceTransactions(kafka, "orders", "writer-1", "a");
      assertThat(values(kafka.records("orders", "read_committed"))).containsExactlyInAnyOrderElementsOf(committed);
      assertThat(kafka.records("orders", "read_uncommitted")).hasSize(committed.size() + ABORTED);
      String bootstrap = kafka.bootstrapServers();

      long stopping = System.nanoTime();
      kafka.stop();
      long stopped = System.nanoTime();
      kafka.start();
      long restarted = System.nanoTime();
      assertThat(kafka.bootstrapServers()).isEqualTo(bootstrap);
      assertThat(values(kafka.records("orders", "read_committed"))).containsExactlyInAnyOrderElementsOf(committed);
      List<String> more = produceTransactions(kafka, "orders", "writer-1", "b");
      assertThat(values(kafka.records("orders", "read_committed"))).hasSize(committed.size() + more.size());

      kafka.addPartitions("orders", 4);
      assertThat(kafka.endOffsets("orders")).hasSize(4);
      List<String> added = produceTransactions(kafka, "orders", "writer-1", "c");
      assertThat(kafka.endOffsets("orders").get(new TopicPartition("orders", 3))).isPositive();
      assertThat(values(kafka.records("orders", "read_committed")))
          .containsExactlyInAnyOrderElementsOf(concat(concat(committed, more), added));

      TopicPartition first = new TopicPartition("orders", 0);
      long end = kafka.endOffsets("orders").get(first);
      assertThat(end).isGreaterThan(2);
      assertThat(kafka.earliestOffsets("orders").get(first)).isZero();
      assertThat(kafka.deleteRecordsBefore("orders", 0, 2)).isEqualTo(2L);
      assertThat(kafka.earliestOffsets("orders").get(first)).isEqualTo(2L);
      assertThatThrownBy(() -> pollFrom(kafka, first, 0))
          .isInstanceOf(OffsetOutOfRangeException.class)
          .hasMessageContaining("orders-0");
      assertThat(pollFrom(kafka, first, 2)).isNotEmpty();
      System.out.printf("In-process Kafka broker: start %d ms, stop %d ms, restart %d ms, test %d ms%n",
          millis(begin, started), millis(stopping, stopped), millis(stopped, restarted),
          millis(begin, System.nanoTime()));
    }
  }

  @Test
  void childJvmBrokerRecoversFromSigkill(@TempDir Path dir) {
    long begin = System.nanoTime();
    KafkaBroker kafka = KafkaBroker.childJvm(dir);
    try {
      long started = System.nanoTime();
      kafka.createTopic("events", 3);
      List<String> committed = produceTransactions(kafka, "events", "writer-2", "a");
      String bootstrap = kafka.bootstrapServers();

      kafka.kill();
      long killed = System.nanoTime();
      kafka.start();
      long recovered = System.nanoTime();
      assertThat(kafka.bootstrapServers()).isEqualTo(bootstrap);
      assertThat(values(kafka.records("events", "read_committed"))).containsExactlyInAnyOrderElementsOf(committed);
      List<String> more = produceTransactions(kafka, "events", "writer-2", "b");

      long stopping = System.nanoTime();
      kafka.stop();
      long stopped = System.nanoTime();
      kafka.start();
      long restarted = System.nanoTime();
      assertThat(values(kafka.records("events", "read_committed")))
          .containsExactlyInAnyOrderElementsOf(concat(committed, more));
      System.out.printf("Child-JVM Kafka broker: start %d ms, start after SIGKILL %d ms, stop %d ms, restart %d ms,"
          + " test %d ms%n", millis(begin, started), millis(killed, recovered), millis(stopping, stopped),
          millis(stopped, restarted), millis(begin, System.nanoTime()));
    } finally {
      kafka.close();
    }
    assertThat(ProcessHandle.current().children()
            .filter(ProcessHandle::isAlive)
            .map(p -> p.info().commandLine().orElse(""))
            .filter(command -> command.contains(KafkaChildMain.class.getName())))
        .as("child JVMs left after close()")
        .isEmpty();
  }

  /**
   * Commits 4 records, aborts {@value #ABORTED}, commits 2 more (one producer, one transactional id; records spread
   * over the partitions in turn); returns the committed.
   */
  static List<String> produceTransactions(KafkaBroker kafka, String topic, String transactionalId, String prefix) {
    List<String> committed = new ArrayList<>();
    int partitions = kafka.endOffsets(topic).size();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
        ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId,
        ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
        ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class))) {
      producer.initTransactions();
      for (String outcome : List.of("commit", "abort", "commit")) {
        producer.beginTransaction();
        int count = committed.isEmpty() ? 4 : ABORTED;
        for (int i = 0; i < count; i++) {
          String value = prefix + "-" + outcome + "-" + committed.size() + "-" + i;
          producer.send(new ProducerRecord<>(topic, i % partitions, value, value));
          if (outcome.equals("commit")) {
            committed.add(value);
          }
        }
        if (outcome.equals("commit")) {
          producer.commitTransaction();
        } else {
          producer.flush(); // else the abort may drop the records before they reach the broker
          producer.abortTransaction();
        }
      }
    }
    return committed;
  }

  /** The first records at or after {@code offset} of a partition, by a consumer that never resets its position. */
  private static List<ConsumerRecord<String, String>> pollFrom(KafkaBroker kafka, TopicPartition tp, long offset) {
    try (KafkaConsumer<String, String> consumer = consumer(kafka, "read_committed", "none")) {
      consumer.assign(List.of(tp));
      consumer.seek(tp, offset);
      long deadline = System.nanoTime() + POLL_TIMEOUT.toNanos();
      List<ConsumerRecord<String, String>> records = List.of();
      while (records.isEmpty() && System.nanoTime() < deadline) {
        records = consumer.poll(Duration.ofMillis(200)).records(tp);
      }
      return records;
    }
  }

  private static KafkaConsumer<String, String> consumer(KafkaBroker kafka, String isolation, String reset) {
    return new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
        ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation,
        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, reset,
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class));
  }

  private static List<String> values(List<ConsumerRecord<String, String>> records) {
    return records.stream().map(ConsumerRecord::value).toList();
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  private static long millis(long from, long to) {
    return (to - from) / 1_000_000;
  }
}
