package dev.lakecommit.ingest;

import dev.lakecommit.core.testing.KafkaBroker;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Test messages: JSON objects {@code {"id": i, "kind": "k<i % 7>", "ts": <event time ms>}}, keyed by id, each record
 * stamped with its event time.
 */
final class KafkaTopics {
  private KafkaTopics() {}

  /** Event times start now: the broker's time-based retention (7 days) never sees them as expired. */
  private static final long START = System.currentTimeMillis();

  static long eventTime(long id) {
    return START + id;
  }

  static String value(long id) {
    return "{\"id\": " + id + ", \"kind\": \"k" + (id % 7) + "\", \"ts\": " + eventTime(id) + "}";
  }

  static KafkaProducer<String, String> producer(KafkaBroker broker, String transactionalId) {
    Properties properties = new Properties();
    properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    properties.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    properties.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    properties.put(ProducerConfig.ACKS_CONFIG, "all");
    KafkaProducer<String, String> producer =
        new KafkaProducer<>(properties, new StringSerializer(), new StringSerializer());
    producer.initTransactions();
    return producer;
  }

  /**
   * Produces ids {@code [from, to)} in transactions of {@code perTransaction}; with {@code abort} the transactions
   * are aborted (a read_committed reader must never see them).
   */
  static void produce(KafkaProducer<String, String> producer, String topic, long from, long to, int perTransaction,
      boolean abort) {
    for (long start = from; start < to; start += perTransaction) {
      producer.beginTransaction();
      for (long id = start; id < Math.min(to, start + perTransaction); id++) {
        // stamped with the event time, as event pipelines do: the reader orders a poll's records by it
        producer.send(new ProducerRecord<>(topic, null, eventTime(id), Long.toString(id), value(id)));
      }
      if (abort) {
        producer.abortTransaction();
      } else {
        producer.commitTransaction();
      }
    }
  }

  static void produce(KafkaBroker broker, String topic, long from, long to) {
    try (KafkaProducer<String, String> producer = producer(broker, "test-" + topic + "-" + from)) {
      produce(producer, topic, from, to, 100, false);
    }
  }
}
