package dev.lakecommit.ingest.cli;

import dev.lakecommit.ingest.source.KafkaInput;
import dev.lakecommit.ingest.source.KafkaSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Schema;
import picocli.CommandLine.Option;

/** The options of a Kafka input ({@code --input kafka://host:9092/topic}). */
public final class KafkaOptions {
  @Option(names = {"-K", "--kafka-property"}, paramLabel = "KEY=VALUE",
      description = "Kafka consumer setting, e.g. -K security.protocol=SASL_SSL, -K client.id=ingest-7 "
          + "(repeatable; values of secret-looking keys are never printed).")
  Map<String, String> properties = new LinkedHashMap<>();

  @Option(names = "--starting-offsets", paramLabel = "WHERE", defaultValue = "earliest",
      description = "Where a new Kafka job starts: earliest (default), latest, or a time (ISO-8601 or epoch ms). "
          + "A job that ran before resumes at its checkpoint's offsets.")
  String startingOffsets;

  @Option(names = "--until", paramLabel = "end",
      description = "Kafka: stop at the end offsets seen when the run starts (backfills, tests); default: run until "
          + "SIGTERM/SIGINT, then commit the current checkpoint and exit 0.")
  String until;

  @Option(names = "--on-lost-offsets", paramLabel = "POLICY", defaultValue = "fail",
      description = "Kafka: if the job's next offsets were deleted by retention before it read them: fail "
          + "(default: stop, naming partition and offsets) or skip (go on from the earliest offset; the gap is "
          + "reported).")
  String onLostOffsets;

  @Option(names = "--kafka-metadata", paramLabel = "FIELD", split = ",",
      description = "Kafka record fields to store as columns: key, topic, partition, offset, timestamp (columns "
          + "kafka_key, kafka_topic, ...).")
  List<String> metadata = new ArrayList<>();

  @Option(names = "--partition-discovery-interval", paramLabel = "DURATION", defaultValue = "PT30S",
      converter = DurationConverter.class,
      description = "Kafka: how often partitions added to the topics (or topics matching the pattern) are looked "
          + "for (default: 30s).")
  Duration discoveryInterval;

  @Option(names = "--avro-schema", paramLabel = "FILE",
      description = "Kafka with --format avro: the values' Avro writer schema (.avsc); binary encoding or Avro's "
          + "single-object encoding. The table's columns follow it unless --schema is given.")
  java.nio.file.Path avroSchema;

  @Option(names = "--transaction-topic", paramLabel = "TOPIC",
      description = "Kafka with --format debezium: Debezium's transaction metadata topic (provide.transaction."
          + "metadata=true), read with the change events' topics: every checkpoint, and so every commit or cut, holds"
          + " whole source transactions.")
  String transactionTopic;

  @Option(names = "--group-id", paramLabel = "GROUP",
      description = "Kafka: after each table commit, write the committed offsets to this consumer group, for tools "
          + "that watch a group's lag. Never read back: the checkpoint and the table say where the job stands.")
  String groupId;

  @Option(names = "--metrics-port", paramLabel = "PORT",
      description = "Serve the job's metrics in Prometheus text format at http://HOST:PORT/metrics (committed "
          + "records and checkpoints, commit latency p50/p99 and histogram, pending checkpoints, commit retries, bad "
          + "records, Kafka lag per partition).")
  Integer metricsPort;

  @Option(names = "--metrics-host", paramLabel = "HOST", defaultValue = "0.0.0.0",
      description = "The address --metrics-port listens on (default: all interfaces).")
  String metricsHost;

  /**
   * The source's settings, checked.
   *
   * @throws IllegalArgumentException naming the option
   */
  KafkaSource.Settings settings(String input, String format, Schema valueSchema) {
    KafkaInput kafka = KafkaInput.parse(input);
    if (until != null && !until.equals("end")) {
      throw new IllegalArgumentException("Invalid value for option --until: '" + until + "' (only: end)");
    }
    if (discoveryInterval.isZero() || discoveryInterval.isNegative()) {
      throw new IllegalArgumentException("Invalid option --partition-discovery-interval: must be > 0");
    }
    List<KafkaSource.MetadataColumn> columns = metadata.stream().map(KafkaSource.MetadataColumn::of).toList();
    return new KafkaSource.Settings(kafka, format == null ? KafkaSource.ValueFormat.JSON
        : KafkaSource.ValueFormat.of(format), valueSchema, columns, Map.copyOf(properties),
        KafkaSource.StartingOffsets.parse(startingOffsets), KafkaSource.OnLostOffsets.of(onLostOffsets),
        until != null, discoveryInterval, avroSchema(avroSchema));
  }

  /**
   * The values' schema: {@code --schema} if given, else the Avro writer schema's columns, else inferred from the
   * first messages (JSON).
   */
  static Schema valueSchema(String schemaText, org.apache.avro.Schema avro, KafkaSource.Settings settings)
      throws java.io.IOException {
    if (schemaText != null) {
      return dev.lakecommit.ingest.source.SchemaParser.parse(schemaText);
    }
    return avro != null ? KafkaSource.avroTableSchema(avro)
        : KafkaSource.inferSchema(settings.input(), settings.consumerProperties(), SCHEMA_SAMPLE, settings.format());
  }

  /** Values sampled to infer the schema when {@code --schema} is not given. */
  static final int SCHEMA_SAMPLE = 1_000;

  /**
   * The Avro writer schema in a file, or null.
   *
   * @throws IllegalArgumentException naming the option and file if it cannot be read or parsed
   */
  static org.apache.avro.Schema avroSchema(java.nio.file.Path file) {
    if (file == null) {
      return null;
    }
    try {
      return new org.apache.avro.Schema.Parser().parse(file.toFile());
    } catch (java.io.IOException | RuntimeException e) {
      throw new IllegalArgumentException("Invalid option --avro-schema: cannot read an Avro schema from " + file
          + ": " + e.getMessage(), e);
    }
  }
}
