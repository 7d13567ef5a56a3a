package dev.lakecommit.ingest;

import dev.lakecommit.core.testing.KafkaBroker;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InterruptException;
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
    KafkaProducer<String, String> producer = uninitialisedProducer(broker, transactionalId, Map.of());
    producer.initTransactions();
    return producer;
  }

  /**
   * A transactional producer whose {@code initTransactions()} is the caller's (to retry it on a timeout);
   * {@code overrides} are further producer properties (shorter client timeouts in a test).
   */
  static KafkaProducer<String, String> uninitialisedProducer(KafkaBroker broker, String transactionalId,
      Map<String, String> overrides) {
    Properties properties = new Properties();
    properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    properties.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    properties.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    properties.put(ProducerConfig.ACKS_CONFIG, "all");
    properties.putAll(overrides);
    return new KafkaProducer<>(properties, new StringSerializer(), new StringSerializer());
  }

  /**
   * Produces ids {@code [from, to)} in transactions of {@code perTransaction}; with {@code abort} the transactions
   * are aborted (a read_committed reader must never see them).
   */
  static void produce(KafkaProducer<String, String> producer, String topic, long from, long to, int perTransaction,
      boolean abort) {
    for (long start = from; start < to; start += perTransaction) {
      long first = start;
      if (abort) {
        producer.beginTransaction();
        send(producer, topic, first, Math.min(to, first + perTransaction));
        producer.abortTransaction();
      } else {
        inTransaction(producer, () -> send(producer, topic, first, Math.min(to, first + perTransaction)));
      }
    }
  }

  /**
   * Runs {@code sends} in a transaction and commits it. A transaction the broker refused as not in a valid state —
   * seen now and then for the first transaction to a topic created a moment before — is aborted and sent again
   * (it did not commit, so nothing is written twice), at most three times.
   */
  static void inTransaction(KafkaProducer<String, String> producer, Runnable sends) {
    for (int attempt = 1; ; attempt++) {
      producer.beginTransaction();
      try {
        sends.run();
        producer.commitTransaction();
        return;
      } catch (KafkaException e) {
        if (attempt == 3 || !refusedState(e)) {
          throw e;
        }
        System.out.println("KafkaTopics: transaction refused (" + e + "), aborted and sent again");
        producer.abortTransaction();
      }
    }
  }

  private static boolean refusedState(Throwable e) {
    for (Throwable cause = e; cause != null; cause = cause.getCause()) {
      if (cause instanceof org.apache.kafka.common.errors.InvalidTxnStateException) {
        return true;
      }
    }
    return false;
  }

  /**
   * Sends ids {@code [from, to)} into the producer's open transaction. A send that failed before it was queued (the
   * topic's metadata not found within {@code max.block.ms}, say, in a broker outage) is thrown at once: each later
   * send would wait as long again before the transaction could be aborted.
   *
   * @throws KafkaException the error of the first send that failed at once
   */
  static void send(KafkaProducer<String, String> producer, String topic, long from, long to) {
    for (long id = from; id < to; id++) {
      // stamped with the event time, as event pipelines do: the reader orders a poll's records by it
      Future<RecordMetadata> sent =
          producer.send(new ProducerRecord<>(topic, null, eventTime(id), Long.toString(id), value(id)));
      if (sent.isDone()) {
        try {
          sent.get();
        } catch (ExecutionException e) {
          throw e.getCause() instanceof KafkaException kafka ? kafka : new KafkaException(e.getCause());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new InterruptException(e);
        }
      }
    }
  }

  static void produce(KafkaBroker broker, String topic, long from, long to) {
    try (KafkaProducer<String, String> producer = producer(broker, "test-" + topic + "-" + from)) {
      produce(producer, topic, from, to, 100, false);
    }
  }

  /**
   * Whether {@code status --json --input ...} output shows every job's committed offsets at the topic's end (a job
   * that has not committed yet, whose start offsets may be at an empty topic's end, is not caught up).
   */
  static boolean caughtUp(String statusJson) {
    com.fasterxml.jackson.databind.JsonNode committed;
    try {
      committed = new com.fasterxml.jackson.databind.ObjectMapper().readTree(statusJson).path("committed-offsets");
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      return false;
    }
    if (committed.isEmpty()) {
      return false;
    }
    for (com.fasterxml.jackson.databind.JsonNode job : committed) {
      if (job.path("total-lag").asLong(-1) != 0) {
        return false;
      }
    }
    return true;
  }
}
