package dev.lakecommit.bench;

import dev.lakecommit.core.testing.KafkaBroker;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringSerializer;

/** The Kafka benchmarks' messages and producers. */
final class BenchKafka {
  /** The columns of {@link #line}, as {@code --schema} takes them. */
  static final String SCHEMA = "id long, kind string, region string, amount double, ts long";

  private BenchKafka() {}

  /** Message {@code id}: a JSON line of {@link #SCHEMA}. */
  static String line(long id) {
    return "{\"id\": " + id + ", \"kind\": \"k" + (id % 7) + "\", \"region\": \"r" + (id % 13)
        + "\", \"amount\": " + (id % 1000) / 10.0 + ", \"ts\": " + (1_765_000_000_000L + id) + "}";
  }

  /** A producer for loading a topic fast: large batches, 20 ms linger. */
  static KafkaProducer<String, String> bulkProducer(KafkaBroker broker) {
    Properties properties = new Properties();
    properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    properties.put(ProducerConfig.LINGER_MS_CONFIG, "20");
    properties.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(256 * 1024));
    return new KafkaProducer<>(properties, new StringSerializer(), new StringSerializer());
  }
}
