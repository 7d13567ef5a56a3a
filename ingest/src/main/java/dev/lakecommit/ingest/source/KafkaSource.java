package dev.lakecommit.ingest.source;

import dev.lakecommit.core.runtime.CheckpointedSource;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka topics as a {@link CheckpointedSource}: the position is the next offset of every partition (never the
 * consumer group's committed offsets), stored with each checkpoint and set in the table with its commit. Reads
 * with {@code isolation.level=read_committed}; a restored offset that fell out of retention stops the job (the
 * {@code auto.offset.reset=none} rule) unless the gap is accepted explicitly. Unbounded (until {@link #requestStop})
 * or bounded by the end offsets seen when a run starts ({@code --until end}). Partitions added to a topic while
 * the job runs are found and read from their start.
 */
public final class KafkaSource implements CheckpointedSource<Record>, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaSource.class);

  /** Columns the Kafka record's own fields can fill ({@code --kafka-metadata}). */
  public enum MetadataColumn {
    KEY("kafka_key", Types.StringType.get()),
    TOPIC("kafka_topic", Types.StringType.get()),
    PARTITION("kafka_partition", Types.IntegerType.get()),
    OFFSET("kafka_offset", Types.LongType.get()),
    TIMESTAMP("kafka_timestamp", Types.TimestampType.withZone());

    final String column;
    final org.apache.iceberg.types.Type type;

    MetadataColumn(String column, org.apache.iceberg.types.Type type) {
      this.column = column;
      this.type = type;
    }

    public String column() {
      return column;
    }

    /** @throws IllegalArgumentException naming the value and the choices */
    public static MetadataColumn of(String name) {
      for (MetadataColumn value : values()) {
        if (value.name().equalsIgnoreCase(name.trim()) || value.column.equalsIgnoreCase(name.trim())) {
          return value;
        }
      }
      throw new IllegalArgumentException("Unknown Kafka metadata column '" + name + "' (key, topic, partition,"
          + " offset, timestamp)");
    }
  }

  /** Where a job without a stored position starts: {@code earliest}, {@code latest} or a time. */
  public record StartingOffsets(String kind, Instant time) {
    public static StartingOffsets parse(String value) {
      String text = value.trim().toLowerCase(Locale.ROOT);
      if (text.equals("earliest") || text.equals("latest")) {
        return new StartingOffsets(text, null);
      }
      try {
        return new StartingOffsets("time", text.chars().allMatch(Character::isDigit)
            ? Instant.ofEpochMilli(Long.parseLong(text)) : OffsetDateTime.parse(value.trim()).toInstant());
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("Invalid starting offsets '" + value + "': earliest, latest, an"
            + " ISO-8601 time with offset (2026-12-01T10:00:00Z) or epoch milliseconds");
      }
    }
  }

  /** What the source does when a stored offset fell out of the topic's retention. */
  public enum OnLostOffsets {
    FAIL, SKIP;

    public static OnLostOffsets of(String value) {
      return switch (value.trim().toLowerCase(Locale.ROOT)) {
        case "fail" -> FAIL;
        case "skip" -> SKIP;
        default -> throw new IllegalArgumentException("Invalid value '" + value + "' for --on-lost-offsets"
            + " (fail or skip)");
      };
    }
  }

  /** The value format of the messages. */
  public enum ValueFormat {
    JSON, CSV, AVRO,
    /** Debezium's change events in JSON: upserts and deletes by key (see {@link DebeziumEvents}). */
    DEBEZIUM;

    public static ValueFormat of(String value) {
      return switch (value.trim().toLowerCase(Locale.ROOT)) {
        case "json" -> JSON;
        case "csv" -> CSV;
        case "avro" -> AVRO;
        case "debezium" -> DEBEZIUM;
        default -> throw new IllegalArgumentException("Invalid --format '" + value + "' for a Kafka input (json,"
            + " csv, avro or debezium)");
      };
    }
  }

  /**
   * @param consumerProperties extra consumer settings ({@code -K}): security, SASL/SSL, client id, fetch sizes
   * @param until end: stop at the end offsets seen at the start of each run; null: run until stopped
   * @param discoveryInterval how often new partitions are looked for while unbounded
   * @param avroSchema the writer schema of Avro values ({@code --avro-schema FILE}), or null
   */
  public record Settings(KafkaInput input, ValueFormat format, Schema valueSchema, List<MetadataColumn> metadata,
      Map<String, String> consumerProperties, StartingOffsets startingOffsets, OnLostOffsets onLostOffsets,
      boolean bounded, Duration discoveryInterval, org.apache.avro.Schema avroSchema) {

    /** The same settings with the value schema given or inferred. */
    public Settings withValueSchema(Schema schema) {
      return new Settings(input, format, schema, metadata, consumerProperties, startingOffsets, onLostOffsets,
          bounded, discoveryInterval, avroSchema);
    }

  }

  private static final Set<String> OWN_SETTINGS = Set.of(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
      ConsumerConfig.ISOLATION_LEVEL_CONFIG, ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
      ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
      ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG);

  /** The source's {@code max.poll.records} unless {@code -K} sets it. */
  private static final int MAX_POLL_RECORDS = 10_000;
  /** How long records wait at least for a partition that is behind (see {@code Reader#nextInTimestampOrder}). */
  private static final long MIN_HOLD_NANOS = Duration.ofMillis(500).toNanos();
  /** How long at most: the brokers answer, but not with that partition's records. */
  private static final long MAX_HOLD_NANOS = Duration.ofSeconds(5).toNanos();
  /** How long the reader asks the brokers for the end offsets of partitions it ran out of records for. */
  private static final Duration END_CHECK_TIMEOUT = Duration.ofMillis(500);

  private final Settings settings;
  private final Schema schema;
  private final AtomicBoolean stop = new AtomicBoolean();
  private final AtomicLong lag = new AtomicLong(-1);
  private final Map<TopicPartition, Long> lagByPartition = new java.util.concurrent.ConcurrentHashMap<>();
  private final AtomicLong skippedByGaps = new AtomicLong();
  private final ReadAhead readAhead = new ReadAhead();
  private BadRecordSink badRecords;
  private long maxBadRecords = Long.MAX_VALUE;
  private boolean ignoreUnknownColumns;
  /** Debezium's transaction topic, whose transactions every checkpoint holds whole; null: not kept. */
  private String transactionTopic;
  /** Debezium events by source table: each table's row schema; null for one table of {@link #schema}. */
  private Map<String, Schema> sourceTables;
  private final org.apache.avro.generic.GenericDatumReader<org.apache.avro.generic.GenericRecord> avro;
  private final dev.lakecommit.staging.AvroInputConverter avroConverter;
  /** The consumer {@link #startEarly} began, for the first {@link #open} to take over; null once taken. */
  private CompletableFuture<Early> early;

  /** A consumer started ahead of the first reader, and the partitions it found (null: not found in time). */
  private record Early(KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> partitions) {}

  /**
   * @throws IllegalArgumentException naming a consumer setting the source owns itself
   */
  public KafkaSource(Settings settings) {
    for (String key : settings.consumerProperties().keySet()) {
      if (OWN_SETTINGS.contains(key)) {
        throw new IllegalArgumentException("Invalid option -K " + key + ": the Kafka source sets it itself (offsets"
            + " live in the checkpoint and the table, records are read read_committed)");
      }
    }
    if (settings.format() == ValueFormat.AVRO && settings.avroSchema() == null) {
      throw new IllegalArgumentException("Missing option --avro-schema FILE: Avro values are read with the writer"
          + " schema given in a .avsc file");
    }
    this.settings = settings;
    this.schema = withMetadata(settings.valueSchema(), settings.metadata());
    this.avro = settings.avroSchema() == null ? null
        : new org.apache.avro.generic.GenericDatumReader<>(settings.avroSchema());
    this.avroConverter = settings.avroSchema() == null ? null
        : new dev.lakecommit.staging.AvroInputConverter(settings.valueSchema());
  }

  /** The schema of the records: the value's columns, then the metadata columns asked for. */
  public Schema schema() {
    return schema;
  }

  public Settings settings() {
    return settings;
  }

  /**
   * Keeps Debezium's source transactions whole: with the transaction metadata of {@code topic} (one of the input's
   * topics, {@code provide.transaction.metadata=true}), records go out in commit order and a checkpoint is taken
   * between two transactions only ({@link TransactionOrder}). A run with {@code --until end} ends at the last
   * transaction whose END the brokers held when it started.
   */
  public KafkaSource transactionTopic(String topic) {
    if (settings.format() != ValueFormat.DEBEZIUM) {
      throw new IllegalArgumentException("Option --transaction-topic is for --format debezium");
    }
    if (settings.input().pattern() == null ? !settings.input().topics().contains(topic)
        : !settings.input().pattern().matcher(topic).matches()) {
      throw new IllegalArgumentException("Invalid option --transaction-topic " + topic + ": it is not one of the"
          + " input's topics (" + settings.input() + "); read it with the change events' topics, e.g. "
          + "kafka://host:9092/shop.customers,shop.orders," + topic);
    }
    if (!settings.startingOffsets().kind().equals("earliest")) {
      throw new IllegalArgumentException("Option --transaction-topic needs the job to start at the beginning of the"
          + " topics (--starting-offsets earliest): a transaction's events before the start would never come");
    }
    this.transactionTopic = topic;
    return this;
  }

  /**
   * Reads Debezium change events as rows of their source tables ({@code source.table}), each of the schema given
   * for it: every record is a {@link SourceTableRow} (a delete a {@link dev.lakecommit.iceberg.DeletedRecord} of
   * one). An event of a table not given is a bad record naming the table.
   */
  public KafkaSource sourceTables(Map<String, Schema> schemas) {
    if (settings.format() != ValueFormat.DEBEZIUM) {
      throw new IllegalStateException("Source tables are those of Debezium change events");
    }
    this.sourceTables = Map.copyOf(schemas);
    return this;
  }

  /** What the job read that no completed checkpoint holds yet; a listener of the job that runs this source. */
  public ReadAhead readAhead() {
    return readAhead;
  }

  /** Hands records that do not parse or fit to this sink and goes on (default: they fail the job). */
  public KafkaSource badRecords(BadRecordSink sink, long max) {
    this.badRecords = sink;
    this.maxBadRecords = max;
    return this;
  }

  /** Reads fields the schema lacks as absent instead of stopping (an audit reads only the key and event time). */
  public KafkaSource ignoreUnknownColumns() {
    this.ignoreUnknownColumns = true;
    return this;
  }

  /**
   * Starts the consumer and looks up the input's partitions on a thread of its own while the job opens its table
   * and restores its checkpoint, so that the first {@link #open} only seeks: a restarted job reads (and commits)
   * sooner. Nothing is read or sought here. A lookup that does not answer within 2 s is left to {@link #open} (which
   * waits for the brokers); a consumer that cannot start is started again there, which reports why.
   */
  public synchronized KafkaSource startEarly() {
    if (early == null) {
      early = CompletableFuture.supplyAsync(this::startConsumer, task -> {
        Thread thread = new Thread(task, "lakecommit-kafka-start");
        thread.setDaemon(true);
        thread.start();
      });
    }
    return this;
  }

  private Early startConsumer() {
    KafkaConsumer<byte[], byte[]> consumer;
    try {
      consumer = consumer(settings.input(), settings.consumerProperties());
    } catch (RuntimeException e) {
      LOG.debug("Starting the Kafka consumer ahead of the first read failed; the reader starts it: {}", e.toString());
      return null;
    }
    try {
      return new Early(consumer, partitions(consumer, settings.input(), false, Duration.ofSeconds(2)));
    } catch (IOException | RuntimeException e) {
      LOG.debug("Partitions of {} not found ahead of the first read; the reader looks again: {}", settings.input(),
          e.toString());
      return new Early(consumer, null);
    }
  }

  /**
   * Takes over the consumer {@link #startEarly} began, once it is up; null if none was begun or it could not start.
   * Interrupted meanwhile, it is closed when its start ends.
   */
  private Early takeEarly() throws InterruptedIOException {
    CompletableFuture<Early> started;
    synchronized (this) {
      started = early;
      early = null;
    }
    if (started == null) {
      return null;
    }
    try {
      return started.get();
    } catch (InterruptedException e) {
      started.thenAccept(KafkaSource::closeEarly);
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("Interrupted while the Kafka consumer started");
    } catch (ExecutionException e) {
      return null;
    }
  }

  private static void closeEarly(Early started) {
    if (started != null) {
      started.consumer().close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ZERO));
    }
  }

  /**
   * Closes a consumer {@link #startEarly} began that no reader took over (readers close their own), once its start
   * is over (its lookup is bounded to 2 s).
   */
  @Override
  public void close() {
    try {
      closeEarly(takeEarly());
    } catch (InterruptedIOException e) {
      // closed when its start ends
    }
  }

  /** Ends the input at the next record boundary: the job takes its last checkpoint, commits it and returns. */
  public void requestStop() {
    stop.set(true);
  }

  /** Records behind the end offsets as the consumer last saw them; -1 before the first fetch. */
  public long lag() {
    return lag.get();
  }

  /** Records behind the end offset, per partition, as the consumer last saw them (read by metrics). */
  public Map<TopicPartition, Long> lagByPartition() {
    return java.util.Collections.unmodifiableMap(lagByPartition);
  }

  /** Records skipped because their offsets fell out of retention (with {@code --on-lost-offsets skip}). */
  public long skippedByGaps() {
    return skippedByGaps.get();
  }

  /** Whether checkpoint bytes are a Kafka source's position (a file source's start with a small version int). */
  public static boolean isKafkaPosition(byte[] position) {
    return position != null && position.length > 0 && position[0] == 'K';
  }

  /** A position in its text form ({@code topic:partition=offset,...}). */
  public static String describe(byte[] position) {
    KafkaPosition at = KafkaPosition.fromBytes(position);
    return at == null ? "start" : at.toText();
  }

  /** Bad records diverted up to a position (0 for null). */
  public static long divertedAt(byte[] position) {
    KafkaPosition at = KafkaPosition.fromBytes(position);
    return at == null ? 0 : at.diverted();
  }

  @Override
  public String commitPosition(byte[] position) {
    KafkaPosition at = KafkaPosition.fromBytes(position);
    return at == null ? null : at.toText();
  }

  /**
   * Samples up to {@code limit} values from the start of every partition to infer a schema (JSON only; with
   * {@code format} DEBEZIUM, the rows of the change events that carry one).
   *
   * @throws IOException if the topics hold no message to infer from
   */
  public static Schema inferSchema(KafkaInput input, Map<String, String> consumerProperties, int limit,
      ValueFormat format) throws IOException {
    Inference inference = new Inference();
    Map<String, org.apache.iceberg.types.Type> typed = new java.util.LinkedHashMap<>();
    sample(input, consumerProperties, limit, null, record -> {
      Object json = Json.parse(new String(record.value(), StandardCharsets.UTF_8));
      if (format == ValueFormat.DEBEZIUM) {
        DebeziumEvents.Change change = DebeziumEvents.change(json, () -> null);
        if (DebeziumEvents.hasConnectSchema(json)) {
          mergeColumns(typed, rowColumns(record));
          return true;
        }
        json = change.kind() == DebeziumEvents.Kind.UPSERT ? change.row() : null;
      }
      if (json instanceof Map<?, ?> object) {
        @SuppressWarnings("unchecked")
        Map<String, Object> fields = (Map<String, Object>) object;
        inference.addJson(fields);
        return true;
      }
      return false;
    });
    if (!typed.isEmpty()) {
      return schemaOf(typed, List.of());
    }
    if (inference.isEmpty()) {
      throw new IOException("Cannot infer a schema: " + input + " holds no JSON object to sample; give --schema");
    }
    return inference.schema();
  }

  /**
   * The columns of the rows of a change event that carries its Connect schema: the fields of its {@code after}
   * (declared also in a delete's schema).
   */
  private static Map<String, org.apache.iceberg.types.Type> rowColumns(ConsumerRecord<byte[], byte[]> record)
      throws Values.ValueException {
    try {
      org.apache.kafka.connect.data.Schema envelope = ConnectSchemas.jsonConverter(false)
          .toConnectData(record.topic(), record.value()).schema();
      org.apache.kafka.connect.data.Field after = envelope == null ? null : envelope.field("after");
      if (after == null || after.schema().type() != org.apache.kafka.connect.data.Schema.Type.STRUCT) {
        throw new Values.ValueException("after", "the event's Connect schema declares no struct 'after'");
      }
      return ConnectSchemas.columns(after.schema());
    } catch (org.apache.kafka.connect.errors.DataException e) {
      throw new Values.ValueException("schema", "the event's Connect schema does not read its payload: "
          + e.getMessage());
    }
  }

  /** Adds columns to those sampled so far: new ones at the end, a wider type of one replacing its type. */
  private static void mergeColumns(Map<String, org.apache.iceberg.types.Type> columns,
      Map<String, org.apache.iceberg.types.Type> more) {
    more.forEach((name, type) -> {
      org.apache.iceberg.types.Type known = columns.get(name);
      if (known == null || dev.lakecommit.iceberg.TypeWidening.widens(known, type)) {
        columns.put(name, type);
      }
    });
  }

  /** A schema of the columns, in order, the key's columns required and the others optional. */
  private static Schema schemaOf(Map<String, org.apache.iceberg.types.Type> columns, List<String> key) {
    List<Types.NestedField> fields = new ArrayList<>();
    int id = 1;
    for (Map.Entry<String, org.apache.iceberg.types.Type> column : columns.entrySet()) {
      fields.add(key.contains(column.getKey()) ? Types.NestedField.required(id++, column.getKey(), column.getValue())
          : Types.NestedField.optional(id++, column.getKey(), column.getValue()));
    }
    return new Schema(fields);
  }

  /**
   * A source table of Debezium change events: its columns as the sampled rows show them, the columns of its events'
   * message key (the table's primary key) required.
   */
  public record SourceTable(Schema schema, List<String> key) {}

  /**
   * Samples up to {@code limit} Debezium change events from the start of every partition and infers each source
   * table's schema ({@code source.table} of the events) from its rows and its key from its events' message keys.
   *
   * @throws IOException if the topics hold no change event that names its source table
   */
  public static Map<String, SourceTable> inferSourceTables(KafkaInput input, Map<String, String> consumerProperties,
      int limit, byte[] position) throws IOException {
    Map<String, Inference> rows = new java.util.TreeMap<>();
    Map<String, Map<String, org.apache.iceberg.types.Type>> typed = new java.util.TreeMap<>();
    Map<String, List<String>> keys = new HashMap<>();
    KafkaPosition at = position == null ? null : KafkaPosition.fromBytes(position);
    Sampled event = record -> {
      Object key = record.key() == null ? null : parseOrNull(record.key());
      Object json = Json.parse(new String(record.value(), StandardCharsets.UTF_8));
      DebeziumEvents.Change change = DebeziumEvents.change(json, () -> key);
      if (change.table() == null) {
        return false;
      }
      List<String> keyFields = DebeziumEvents.keyFields(key);
      if (!keyFields.isEmpty()) {
        keys.putIfAbsent(change.table(), keyFields);
      }
      if (DebeziumEvents.hasConnectSchema(json)) {
        // the columns and their types as the event's schema declares them
        mergeColumns(typed.computeIfAbsent(change.table(), name -> new java.util.LinkedHashMap<>()),
            rowColumns(record));
        return true;
      }
      Inference table = rows.computeIfAbsent(change.table(), name -> new Inference());
      if (change.kind() == DebeziumEvents.Kind.UPSERT) {
        table.addJson(change.row());
      }
      return true;
    };
    sample(input, consumerProperties, limit, null, event);
    if (at != null && !at.offsets().isEmpty()) {
      // where the job goes on: the events it meets next, a source table's new columns among them
      sample(input, consumerProperties, limit, at.offsets(), event);
    }
    Map<String, SourceTable> tables = new java.util.TreeMap<>();
    typed.forEach((name, columns) -> {
      List<String> key = keys.getOrDefault(name, List.of());
      tables.put(name, new SourceTable(schemaOf(columns, key), key));
    });
    rows.forEach((name, inference) -> {
      if (tables.containsKey(name)) {
        return;
      }
      if (inference.isEmpty()) {
        return; // deletes only: no row to learn its columns from
      }
      List<String> key = keys.getOrDefault(name, List.of());
      List<Types.NestedField> columns = new ArrayList<>();
      for (Types.NestedField column : inference.schema().columns()) {
        columns.add(key.contains(column.name())
            ? Types.NestedField.required(column.fieldId(), column.name(), column.type()) : column);
      }
      tables.put(name, new SourceTable(new Schema(columns), key));
    });
    if (tables.isEmpty()) {
      throw new IOException("Cannot infer the source tables: " + input + " holds no Debezium change event with a row"
          + " and a source.table to sample");
    }
    return tables;
  }

  private static Object parseOrNull(byte[] json) {
    try {
      return Json.parse(new String(json, StandardCharsets.UTF_8));
    } catch (Json.SyntaxException e) {
      return null;
    }
  }

  /** What a sample makes of a message with a value; true if it counts towards the limit. */
  @FunctionalInterface
  private interface Sampled {
    boolean take(ConsumerRecord<byte[], byte[]> record) throws Json.SyntaxException, Values.ValueException;
  }

  /**
   * Reads up to {@code limit} counted messages (at most 30 s; bad ones skipped) from the start of every partition, or
   * from {@code from} where it names a partition.
   */
  private static void sample(KafkaInput input, Map<String, String> consumerProperties, int limit,
      Map<TopicPartition, Long> from, Sampled sampled) throws IOException {
    try (KafkaConsumer<byte[], byte[]> consumer = consumer(input, consumerProperties)) {
      List<TopicPartition> partitions = partitions(consumer, input);
      consumer.assign(partitions);
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
      consumer.seekToBeginning(partitions);
      if (from != null) {
        for (TopicPartition partition : partitions) {
          Long offset = from.get(partition);
          if (offset != null) {
            consumer.seek(partition, Math.min(offset, end.getOrDefault(partition, offset)));
          }
        }
      }
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      int seen = 0;
      while (seen < limit && System.nanoTime() < deadline && !atEnd(consumer, partitions, end)) {
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
          if (record.value() == null) {
            continue;
          }
          try {
            if (sampled.take(record)) {
              seen++;
            }
          } catch (Json.SyntaxException | Values.ValueException e) {
            // a bad record: the run reports it where it meets it
          }
        }
      }
    }
  }

  private static boolean atEnd(KafkaConsumer<byte[], byte[]> consumer, Collection<TopicPartition> partitions,
      Map<TopicPartition, Long> end) {
    for (TopicPartition partition : partitions) {
      if (consumer.position(partition) < end.getOrDefault(partition, 0L)) {
        return false;
      }
    }
    return true;
  }

  static KafkaConsumer<byte[], byte[]> consumer(KafkaInput input, Map<String, String> extra) {
    Properties properties = new Properties();
    properties.put(ConsumerConfig.CLIENT_ID_CONFIG, "lakecommit");
    // Small fetches per partition and large polls: a poll holds a similar stretch of every partition, which the
    // reader hands out in timestamp order (see Reader#poll); -K overrides both.
    properties.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, Integer.toString(128 * 1024));
    properties.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(MAX_POLL_RECORDS));
    // Back within a quarter second of a broker's return, not the client's 1 s: one consumer, so a light load on a
    // broker that is coming up; -K overrides both.
    properties.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "250");
    properties.put(ConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "250");
    properties.putAll(extra);
    properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, input.bootstrapServers());
    properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    properties.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
    return new KafkaConsumer<>(properties, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  /** Every partition of the input's topics, as the brokers list them now. */
  static List<TopicPartition> partitions(KafkaConsumer<?, ?> consumer, KafkaInput input) throws IOException {
    return partitions(consumer, input, false, Duration.ofSeconds(60));
  }

  /**
   * @param fresh ask the brokers (listTopics) rather than the consumer's metadata cache, which learns of partitions
   *     added to a known topic only every metadata.max.age.ms (5 minutes by default)
   */
  private static List<TopicPartition> partitions(KafkaConsumer<?, ?> consumer, KafkaInput input, boolean fresh,
      Duration timeout) throws IOException {
    List<TopicPartition> partitions = new ArrayList<>();
    if (input.pattern() != null || fresh) {
      for (Map.Entry<String, List<PartitionInfo>> topic : consumer.listTopics(timeout).entrySet()) {
        if (input.reads(topic.getKey())) {
          topic.getValue().forEach(p -> partitions.add(new TopicPartition(p.topic(), p.partition())));
        }
      }
    } else {
      for (String topic : input.topics()) {
        List<PartitionInfo> infos = consumer.partitionsFor(topic, timeout);
        if (infos == null || infos.isEmpty()) {
          throw new IOException("Kafka topic '" + topic + "' does not exist at " + input.bootstrapServers());
        }
        infos.forEach(p -> partitions.add(new TopicPartition(p.topic(), p.partition())));
      }
    }
    partitions.sort(KafkaPosition.ORDER);
    return partitions;
  }

  private static Schema withMetadata(Schema value, List<MetadataColumn> metadata) {
    if (metadata.isEmpty()) {
      return value;
    }
    List<Types.NestedField> fields = new ArrayList<>(value.columns());
    int id = value.highestFieldId();
    for (MetadataColumn column : metadata) {
      if (value.findField(column.column) != null) {
        throw new IllegalArgumentException("Column " + column.column + " of --kafka-metadata is also a column of"
            + " the value's schema");
      }
      fields.add(Types.NestedField.optional(++id, column.column, column.type));
    }
    return new Schema(fields);
  }

  @Override
  public SourceReader<Record> open(byte[] position) throws IOException {
    Early started = takeEarly();
    KafkaConsumer<byte[], byte[]> consumer = started != null ? started.consumer()
        : consumer(settings.input(), settings.consumerProperties());
    try {
      return new Reader(consumer, KafkaPosition.fromBytes(position),
          started == null ? null : started.partitions());
    } catch (IOException | RuntimeException e) {
      consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ZERO));
      throw e;
    }
  }

  private final class Reader implements SourceReader<Record> {
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final TreeMap<TopicPartition, Long> next = new TreeMap<>(KafkaPosition.ORDER);
    /** With {@code --until end}: the end offsets (last stable offsets) seen when the run started. */
    private final Map<TopicPartition, Long> end = new HashMap<>();
    private final Set<TopicPartition> paused = new TreeSet<>(KafkaPosition.ORDER);
    /** Fetched records not handed out yet, per partition, in offset order. */
    private final Map<TopicPartition, java.util.ArrayDeque<ConsumerRecord<byte[], byte[]>>> queues = new HashMap<>();
    /** The consumer's position after each partition's last fetch: past the markers that ended it. */
    private final Map<TopicPartition, Long> fetchedTo = new HashMap<>();
    /** When the reader began to hold records back for a partition that is behind (-1: not holding). */
    private long holdingSince = -1;
    /** Partitions whose records did not come within a hold: not held for again until they bring some. */
    private final Set<TopicPartition> givenUp = new java.util.HashSet<>();
    /** The fetch responses received when the hold began. */
    private double holdingFrom;
    /** Polls since the hold began that brought records (of other partitions): the brokers serve records. */
    private int servedSinceHold;
    /**
     * End offsets (last stable) the brokers gave, since the last poll that brought records, for partitions that had
     * no record left and were at their end as the consumer saw it (Long.MAX_VALUE: the brokers did not say in time).
     */
    private final Map<TopicPartition, Long> checkedEnd = new HashMap<>();
    /**
     * The client that asks for {@link #checkedEnd}: its own connections, since a broker answers one connection's
     * requests in order and the reader's has a fetch waiting there for up to {@code fetch.max.wait.ms}.
     */
    private KafkaConsumer<byte[], byte[]> endsClient;
    private org.apache.kafka.common.Metric fetchTotal;
    private boolean fetchTotalLooked;
    /** JSON values: one parser for all messages while they are well-formed objects, and the direct read. */
    private final Json.Lines jsonLines = new Json.Lines();
    private JsonRecords jsonRecords;
    /**
     * The reader's buffer: fetched, not handed out. It is filled only while below both limits, so it never holds
     * more than {@code 3 x max.poll.records - 1} records or {@code fetch.max.bytes} plus one poll's bytes.
     */
    private final int bufferLimit;
    private final long bufferByteLimit;
    private long buffered;
    private long bufferedBytes;
    private long diverted;
    private long nextDiscovery;
    private boolean ended;
    /** The order that keeps source transactions whole; null without a transaction topic. */
    private final TransactionOrder transactions = transactionTopic == null ? null
        : new TransactionOrder(transactionTopic);
    private final BrokerReachability reachability = new BrokerReachability(settings.input().bootstrapServers(),
        BrokerReachability.quietLimit(settings.consumerProperties()), System.nanoTime());

    /** @param found the input's partitions if a lookup just found them, else null: looked up here */
    Reader(KafkaConsumer<byte[], byte[]> consumer, KafkaPosition restored, List<TopicPartition> found)
        throws IOException {
      this.consumer = consumer;
      this.diverted = restored == null ? 0 : restored.diverted();
      this.bufferLimit = 2 * intSetting(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, MAX_POLL_RECORDS);
      this.bufferByteLimit = intSetting(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, ConsumerConfig.DEFAULT_FETCH_MAX_BYTES);
      readAhead.cleared();
      List<TopicPartition> partitions = found != null ? found : firstPartitions();
      if (restored != null) {
        for (TopicPartition stored : restored.offsets().keySet()) {
          if (!partitions.contains(stored)) {
            throw new IOException("Kafka partition " + stored + " of the job's checkpoint no longer exists at "
                + settings.input().bootstrapServers() + " (was the topic deleted?); nothing was committed for it"
                + " after offset " + restored.offsets().get(stored));
          }
        }
      }
      assign(partitions, restored);
      if (settings.bounded()) {
        end.putAll(consumer.endOffsets(partitions));
        if (transactions != null) {
          transactions.bounds(end);
        }
      }
      nextDiscovery = System.nanoTime() + settings.discoveryInterval().toNanos();
    }

    /**
     * The input's partitions as the run starts. A run that starts while the brokers are away waits for them, says
     * so once and once when they answer, and reads at once then; the job's stall timeout bounds the wait.
     */
    private List<TopicPartition> firstPartitions() throws IOException {
      long since = System.nanoTime();
      boolean said = false;
      while (true) {
        try {
          List<TopicPartition> found = partitions(consumer, settings.input(), false, Duration.ofSeconds(2));
          if (said) {
            LOG.info("Kafka at {} answers after {} s: the job starts reading", settings.input().bootstrapServers(),
                (System.nanoTime() - since) / 1_000_000_000);
          }
          return found;
        } catch (org.apache.kafka.common.errors.TimeoutException e) {
          if (!said) {
            LOG.warn("Kafka at {} does not answer: the job waits for its brokers before it reads (up to"
                + " --stall-timeout; check the address if they are up)", settings.input().bootstrapServers());
            said = true;
          }
          if (stop.get()) {
            throw new IOException("Stopped while waiting for Kafka at " + settings.input().bootstrapServers()
                + " to answer (" + (System.nanoTime() - since) / 1_000_000_000 + " s): nothing was read");
          }
        }
      }
    }

    /** Assigns the partitions and positions each: stored offset, else where a new job or a new partition starts. */
    private void assign(List<TopicPartition> partitions, KafkaPosition restored) throws IOException {
      List<TopicPartition> all = new ArrayList<>(next.keySet());
      all.addAll(partitions);
      consumer.assign(all);
      Map<TopicPartition, Long> earliest = consumer.beginningOffsets(partitions);
      Map<TopicPartition, Long> latest = consumer.endOffsets(partitions);
      Map<TopicPartition, Long> byTime = new HashMap<>();
      if (restored == null && settings.startingOffsets().time() != null) {
        Map<TopicPartition, Long> query = new HashMap<>();
        partitions.forEach(p -> query.put(p, settings.startingOffsets().time().toEpochMilli()));
        for (Map.Entry<TopicPartition, OffsetAndTimestamp> found : consumer.offsetsForTimes(query).entrySet()) {
          byTime.put(found.getKey(), found.getValue() == null ? latest.get(found.getKey())
              : found.getValue().offset());
        }
      }
      boolean newJob = restored == null && next.isEmpty();
      for (TopicPartition partition : partitions) {
        long first = earliest.get(partition);
        long last = latest.get(partition);
        long offset;
        Long stored = restored == null ? null : restored.offsets().get(partition);
        if (stored != null) {
          offset = checkStored(partition, stored, first, last);
        } else if (newJob) {
          offset = switch (settings.startingOffsets().kind()) {
            case "latest" -> last;
            case "time" -> byTime.get(partition);
            default -> first;
          };
        } else {
          // a partition the job has not read before: added to the topic (or matched by the pattern) since
          offset = first;
          LOG.info("Reading new Kafka partition {} from offset {}", partition, first);
        }
        consumer.seek(partition, offset);
        next.put(partition, offset);
      }
    }

    private long checkStored(TopicPartition partition, long stored, long first, long last) throws IOException {
      if (stored < first) {
        return lost(partition, stored, first);
      }
      if (stored > last) {
        throw new IOException("Kafka partition " + partition + " ends at offset " + last + ", before the job's"
            + " stored offset " + stored + ": the topic was deleted and created again, or truncated. Nothing was"
            + " read; use a new --job-id to read the new topic from the start.");
      }
      return stored;
    }

    private long lost(TopicPartition partition, long stored, long first) throws IOException {
      long gap = first - stored;
      String message = String.format("Kafka partition %s: the job's next offset %d is no longer in the topic"
          + " (earliest offset now %d): %,d record(s) were deleted by retention before the job read them", partition,
          stored, first, gap);
      if (settings.onLostOffsets() == OnLostOffsets.FAIL) {
        throw new IOException(message + ". Nothing was read. Run again with --on-lost-offsets skip to accept the gap"
            + " and go on from offset " + first + ".");
      }
      skippedByGaps.addAndGet(gap);
      LOG.warn("{}; skipping them as --on-lost-offsets skip says", message);
      return first;
    }

    @Override
    public Record next() throws IOException {
      try {
        Record record;
        do {
          record = poll(Duration.ofSeconds(1));
        } while (record == null && !ended);
        return record;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("Interrupted while reading " + settings.input());
      }
    }

    @Override
    public Record poll(Duration maxWait) throws IOException, InterruptedException {
      while (true) {
        if (Thread.interrupted()) {
          throw new InterruptedException("Interrupted while reading " + settings.input());
        }
        ConsumerRecord<byte[], byte[]> record = transactions != null ? transactions.next(queues)
            : nextInTimestampOrder();
        if (record != null) {
          long bytes = bytes(record);
          buffered--;
          bufferedBytes -= bytes;
          TopicPartition partition = new TopicPartition(record.topic(), record.partition());
          // keeping transactions whole, a run ends with the transaction topic's bound: the events of its last
          // transactions may lie beyond the other topics' end offsets
          Long bound = transactions != null && !transactions.isMarkers(partition) ? null : end.get(partition);
          if (bound != null && record.offset() >= bound) {
            readAhead.taken(bytes, false);
            continue;
          }
          advance(partition, record, bound);
          Record parsed = parse(record);
          readAhead.taken(bytes, parsed != null);
          if (parsed != null) {
            if (transactions != null) {
              // the transaction's last event: its END goes with it, so the reader stands between two transactions
              ConsumerRecord<byte[], byte[]> closing = transactions.closing(queues);
              if (closing != null) {
                TopicPartition markers = new TopicPartition(closing.topic(), closing.partition());
                buffered--;
                bufferedBytes -= bytes(closing);
                readAhead.taken(bytes(closing), false);
                advance(markers, closing, end.get(markers));
              }
            }
            return parsed;
          }
          continue;
        }
        boolean drained = queues.values().stream().allMatch(java.util.ArrayDeque::isEmpty);
        if (drained) {
          advancePastControlRecords();
        }
        boolean done = transactions != null ? transactionsEnded()
            : stop.get() || (settings.bounded() && drained && reachedEnd());
        if (done) {
          ended = true;
          return null;
        }
        if (!settings.bounded() && System.nanoTime() >= nextDiscovery) {
          discover();
        }
        ConsumerRecords<byte[], byte[]> records;
        long polledAt = System.nanoTime();
        try {
          // holding records back for a partition that is behind: fetch again soon
          records = consumer.poll(drained ? maxWait : Duration.ofMillis(Math.min(50, maxWait.toMillis())));
        } catch (OffsetOutOfRangeException e) {
          outOfRange(e);
          continue;
        }
        // paused: a subset of the assigned
        reachability.afterPoll(consumer, paused.size() < next.size(), System.nanoTime() - polledAt);
        updateLag();
        long fetchedBytes = 0;
        for (TopicPartition partition : records.partitions()) {
          List<ConsumerRecord<byte[], byte[]>> fetched = records.records(partition);
          if (transactions != null) {
            noteTransactions(fetched);
          }
          queues.computeIfAbsent(partition, p -> new java.util.ArrayDeque<>()).addAll(fetched);
          givenUp.remove(partition);
          fetchedTo.put(partition, consumer.position(partition));
          for (ConsumerRecord<byte[], byte[]> one : fetched) {
            fetchedBytes += bytes(one);
          }
        }
        buffered += records.count();
        bufferedBytes += fetchedBytes;
        if (!records.isEmpty()) {
          checkedEnd.clear();
          servedSinceHold++;
        }
        readAhead.fetched(records.count(), fetchedBytes);
        if (records.isEmpty()) {
          return null;
        }
      }
    }

    /**
     * The fetched record with the smallest timestamp of all partitions, so that partitions progress together and a
     * checkpoint cut leaves no older event times behind it (each partition's own order is kept; its timestamps only
     * grow with the offset for producers that stamp records with their event time). While a partition with nothing
     * fetched is behind its end offset, records are held back for it: for 500 ms, until a fetch that asked for it
     * was answered (a loaded machine answers late) and until the brokers served records of other partitions (a
     * broker that shuts down answers with errors first), at most 5 s; a partition whose records did not come in that
     * time is not waited for again until it brings some, so that a slow partition never stops the others. While the
     * brokers do not answer, the records wait for them (no fetch can come; an outage then commits nothing new
     * rather than the other partitions' newer records ahead of the older ones). Never held while the buffer is at
     * its limit: memory stays bounded whatever a partition does. Null when nothing may be handed out now.
     */
    private ConsumerRecord<byte[], byte[]> nextInTimestampOrder() {
      java.util.ArrayDeque<ConsumerRecord<byte[], byte[]>> first = null;
      for (java.util.ArrayDeque<ConsumerRecord<byte[], byte[]>> queue : queues.values()) {
        if (!queue.isEmpty() && (first == null || queue.peekFirst().timestamp() < first.peekFirst().timestamp())) {
          first = queue;
        }
      }
      if (first == null) {
        holdingSince = -1;
        return null;
      }
      if (buffered < bufferLimit && bufferedBytes < bufferByteLimit
          && partitionBehind(reachability.answeredLately())) {
        if (!reachability.answeredLately()) {
          // no fetch can come while the brokers are away: the records wait for them, and nothing else is handed
          // out (so an outage commits nothing new, and the partition's older records still come first)
          holdingSince = -1;
          return null;
        }
        long now = System.nanoTime();
        double answered = fetchResponses();
        if (holdingSince < 0) {
          holdingSince = now;
          holdingFrom = answered;
          servedSinceHold = 0;
        }
        // Held until a fetch that asked for the partition was answered: two responses, since the first may answer
        // a fetch sent while the partition still had records. On a loaded machine that takes longer than the
        // minimum, and a record handed out sooner goes ahead of the partition's older ones, maybe into an earlier
        // checkpoint.
        // And until the brokers served records since the hold began (two polls brought some): a broker that is
        // shutting down answers fetches quickly, with errors and no records, before it stops answering.
        boolean answeredSince = Double.isNaN(answered) || answered - holdingFrom >= 2;
        long held = now - holdingSince;
        if (held < MIN_HOLD_NANOS || ((!answeredSince || servedSinceHold < 2) && held < MAX_HOLD_NANOS)) {
          return null;
        }
        // the brokers answer, but not with these partitions' records: no more holds for them until they bring some
        for (TopicPartition partition : next.keySet()) {
          if (behind(partition)) {
            givenUp.add(partition);
          }
        }
      }
      holdingSince = -1;
      return first.pollFirst();
    }

    /** The position after a record handed out (or skipped) of {@code partition}, {@code bound} its end or null. */
    private void advance(TopicPartition partition, ConsumerRecord<byte[], byte[]> record, Long bound) {
      long after = record.offset() + 1;
      Long fetched = fetchedTo.get(partition);
      if (fetched != null && queues.get(partition).isEmpty()) {
        // the partition's last fetched record: the transaction marker after it goes with it
        after = Math.max(after, bound == null ? fetched : Math.min(fetched, bound));
      }
      next.put(partition, after);
    }

    /** The transactions of fetched records; a record of the transaction topic that is no BEGIN or END stops the run. */
    private void noteTransactions(List<ConsumerRecord<byte[], byte[]>> fetched) throws IOException {
      for (ConsumerRecord<byte[], byte[]> record : fetched) {
        try {
          transactions.fetched(record);
        } catch (Json.SyntaxException | Values.ValueException e) {
          throw new IOException("Kafka " + record.topic() + " partition " + record.partition() + " offset "
              + record.offset() + " of the transaction topic (--transaction-topic) is not a BEGIN or END event of"
              + " Debezium's transaction metadata: " + e.getMessage());
        }
      }
      if (transactions.heldInTransactions() > 10L * bufferLimit) {
        throw new IOException("Keeping source transactions whole, the reader holds " + transactions
            .heldInTransactions() + " change events of transactions whose END or whose other events it has not read"
            + (transactions.waitingFor() == null ? "" : " (transaction " + transactions.waitingFor() + ")") + ": the"
            + " input must hold every topic the connector writes change events to, and " + transactions.topic()
            + " its transaction topic");
      }
    }

    /**
     * Keeping transactions whole, the run ends between two transactions only: when asked to stop, or (bounded) once
     * every END the transaction topic held at the start went out with its transaction and every other partition is
     * read to its end or to an event of a later transaction.
     */
    private boolean transactionsEnded() {
      if (!transactions.atBoundary()) {
        return false;
      }
      if (stop.get()) {
        return true;
      }
      if (!settings.bounded()) {
        return false;
      }
      for (Map.Entry<TopicPartition, Long> bound : end.entrySet()) {
        TopicPartition partition = bound.getKey();
        java.util.ArrayDeque<ConsumerRecord<byte[], byte[]>> queue = queues.get(partition);
        boolean empty = queue == null || queue.isEmpty();
        if (next.get(partition) >= bound.getValue() || (empty && consumer.position(partition) >= bound.getValue())) {
          continue;
        }
        // the partition's next event belongs to a transaction whose END lies beyond the run's end: the next run's
        if (!transactions.isMarkers(partition) && !empty && transactions.inTransaction(queue.peekFirst())) {
          continue;
        }
        return false;
      }
      return true;
    }

    @Override
    public boolean atBoundary() {
      return transactions == null || transactions.atBoundary();
    }

    private int intSetting(String key, int fallback) {
      String value = settings.consumerProperties().get(key);
      if (value == null) {
        return fallback;
      }
      try {
        int parsed = Integer.parseInt(value.trim());
        if (parsed > 0) {
          return parsed;
        }
      } catch (NumberFormatException e) {
        // refused below, naming the option
      }
      throw new IllegalArgumentException("Invalid option -K " + key + "=" + value + " (must be a positive integer)");
    }

    private static long bytes(ConsumerRecord<byte[], byte[]> record) {
      return Math.max(0, record.serializedKeySize()) + Math.max(0, record.serializedValueSize());
    }

    /** The fetch responses the consumer received so far ({@code fetch-total}); NaN where its metrics do not say. */
    private double fetchResponses() {
      if (!fetchTotalLooked) {
        fetchTotal = BrokerReachability.clientMetric(consumer.metrics(), "consumer-fetch-manager-metrics",
            "fetch-total");
        fetchTotalLooked = true;
      }
      return fetchTotal != null && fetchTotal.metricValue() instanceof Number number ? number.doubleValue()
          : Double.NaN;
    }

    /**
     * Whether a partition with no fetched record left is behind its end offset, leaving out those whose records did
     * not come within a hold.
     *
     * <p>The consumer's view of a partition's end is as old as its last fetch of it: a transaction's commit markers
     * reach its partitions one after the other, a partition without a leader for a moment after a broker restart is
     * left out of fetches, and a run that just started knows no end yet. Records fetched since would go ahead of
     * that partition's older ones, maybe into an earlier checkpoint. So when a partition runs out of records while
     * the consumer sees it at its end, the brokers are asked for the ends of all partitions the consumer sees at
     * theirs: once per poll that brought records, on a connection of their own (with {@code ask}: while they answer;
     * until then such a partition counts as behind).
     */
    private boolean partitionBehind(boolean ask) {
      boolean unsure = false;
      for (TopicPartition partition : next.keySet()) {
        if (givenUp.contains(partition)) {
          continue;
        }
        if (behind(partition)) {
          return true;
        }
        unsure |= ranOut(partition) && !checkedEnd.containsKey(partition);
      }
      if (!unsure) {
        return false;
      }
      if (!ask) {
        return true; // not known while the brokers do not answer: as if behind
      }
      List<TopicPartition> asked = new ArrayList<>();
      for (TopicPartition partition : next.keySet()) {
        java.util.OptionalLong lag = consumer.currentLag(partition);
        if (!givenUp.contains(partition) && !paused.contains(partition) && !checkedEnd.containsKey(partition)
            && (lag.isEmpty() || lag.getAsLong() <= 0)) {
          asked.add(partition);
        }
      }
      try {
        checkedEnd.putAll(endsClient().endOffsets(asked, END_CHECK_TIMEOUT));
      } catch (org.apache.kafka.common.errors.TimeoutException e) {
        // not known: held for as if behind (asked again after the next poll that brings records)
        asked.forEach(partition -> checkedEnd.put(partition, Long.MAX_VALUE));
      }
      return asked.stream().anyMatch(this::behind);
    }

    /** The client for {@link #checkedEnd}, started at its first question. */
    private KafkaConsumer<byte[], byte[]> endsClient() {
      if (endsClient == null) {
        Map<String, String> properties = new HashMap<>(settings.consumerProperties());
        properties.put(ConsumerConfig.CLIENT_ID_CONFIG, properties.getOrDefault(ConsumerConfig.CLIENT_ID_CONFIG,
            "lakecommit") + "-ends");
        endsClient = consumer(settings.input(), properties);
      }
      return endsClient;
    }

    /** A partition that has no fetched record left and is read (not paused at a bounded run's end). */
    private boolean ranOut(TopicPartition partition) {
      java.util.ArrayDeque<ConsumerRecord<byte[], byte[]>> queue = queues.get(partition);
      return (queue == null || queue.isEmpty()) && !paused.contains(partition);
    }

    private boolean behind(TopicPartition partition) {
      if (!ranOut(partition)) {
        return false;
      }
      java.util.OptionalLong lag = consumer.currentLag(partition);
      Long checked = checkedEnd.get(partition);
      return lag.isPresent() && lag.getAsLong() > 0 || checked != null && checked > consumer.position(partition);
    }

    /**
     * With every fetched record handed out, the consumer's position is past the transaction markers and aborted
     * records behind it too: the stored offset moves there, so a table's offsets equal the topic's end offsets when
     * the job caught up (never past a bounded run's end).
     */
    private void advancePastControlRecords() {
      for (Map.Entry<TopicPartition, Long> entry : next.entrySet()) {
        TopicPartition partition = entry.getKey();
        long position = consumer.position(partition);
        Long bound = end.get(partition);
        if (bound != null) {
          position = Math.min(position, bound);
        }
        if (position > entry.getValue()) {
          entry.setValue(position);
        }
      }
    }

    /** Retention deleted records the job had not read yet, while it ran. */
    private void outOfRange(OffsetOutOfRangeException e) throws IOException {
      Map<TopicPartition, Long> earliest = consumer.beginningOffsets(e.offsetOutOfRangePartitions().keySet());
      for (Map.Entry<TopicPartition, Long> entry : e.offsetOutOfRangePartitions().entrySet()) {
        TopicPartition partition = entry.getKey();
        long first = earliest.get(partition);
        if (entry.getValue() < first) {
          consumer.seek(partition, lost(partition, entry.getValue(), first));
          next.put(partition, first);
        } else {
          throw new IOException("Kafka partition " + partition + " has no offset " + entry.getValue()
              + " (earliest " + first + "): was the topic deleted and created again?", e);
        }
      }
    }

    private boolean reachedEnd() {
      boolean all = true;
      for (Map.Entry<TopicPartition, Long> entry : end.entrySet()) {
        TopicPartition partition = entry.getKey();
        boolean done = next.get(partition) >= entry.getValue() || consumer.position(partition) >= entry.getValue();
        if (done && paused.add(partition)) {
          consumer.pause(List.of(partition));
        }
        all &= done;
      }
      return all;
    }

    private void discover() throws IOException {
      nextDiscovery = System.nanoTime() + settings.discoveryInterval().toNanos();
      List<TopicPartition> fresh = new ArrayList<>();
      for (TopicPartition partition : partitions(consumer, settings.input(), true, Duration.ofSeconds(60))) {
        if (!next.containsKey(partition)) {
          fresh.add(partition);
        }
      }
      if (!fresh.isEmpty()) {
        assign(fresh, null);
      }
    }

    private void updateLag() {
      long total = 0;
      for (TopicPartition partition : next.keySet()) {
        java.util.OptionalLong behind = consumer.currentLag(partition);
        if (behind.isEmpty()) {
          return;
        }
        lagByPartition.put(partition, behind.getAsLong());
        total += behind.getAsLong();
      }
      lag.set(total);
    }

    /** The record, or null if it went to the bad-record sink. */
    private Record parse(ConsumerRecord<byte[], byte[]> record) throws IOException {
      String where = "Kafka " + record.topic() + " partition " + record.partition() + " offset " + record.offset();
      try {
        Record parsed = value(record, where);
        if (parsed != null && !settings.metadata().isEmpty()) {
          metadata(parsed, record);
        }
        return parsed;
      } catch (BadRecordException bad) {
        if (badRecords == null) {
          throw bad;
        }
        badRecords.reject(where, record.offset() + 1, bad.sinkReason(), bad.rawText());
        diverted++;
        if (diverted > maxBadRecords) {
          throw new BadRecordLimitException(maxBadRecords, bad);
        }
        return null;
      }
    }

    /** Kafka Connect's JSON converters of values and keys with their schemas, made on first use. */
    private org.apache.kafka.connect.json.JsonConverter connectJson;
    private org.apache.kafka.connect.json.JsonConverter connectJsonKey;

    private Record value(ConsumerRecord<byte[], byte[]> record, String where) {
      if (transactions != null && record.topic().equals(transactions.topic())) {
        return null; // a BEGIN or END of a transaction: no row
      }
      if (record.value() == null && settings.format() == ValueFormat.DEBEZIUM) {
        return null; // a tombstone after a delete: no change
      }
      if (record.value() == null) {
        throw BadRecordException.record(where, 0, false, null, "the message has no value (a tombstone)", "");
      }
      if (settings.format() == ValueFormat.AVRO) {
        return avroValue(record.value(), schema.asStruct(), where);
      }
      if (settings.format() == ValueFormat.JSON && JsonRecords.enabled
          && TextRecords.ascii(record.value(), record.value().length)) {
        if (jsonRecords == null) {
          jsonRecords = new JsonRecords(schema.asStruct());
        }
        Record direct = jsonRecords.read(jsonLines, record.value(), record.value().length, !ignoreUnknownColumns);
        if (direct != null) {
          return direct;
        }
      }
      String text;
      try {
        text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
            .decode(java.nio.ByteBuffer.wrap(record.value())).toString();
      } catch (CharacterCodingException e) {
        throw BadRecordException.record(where, 0, false, null, "not valid UTF-8",
            new String(record.value(), StandardCharsets.UTF_8));
      }
      Types.StructType struct = schema.asStruct();
      try {
        if (settings.format() == ValueFormat.CSV) {
          return csv(struct, text, where);
        }
        Object json = Json.parse(text);
        if (settings.format() == ValueFormat.DEBEZIUM) {
          DebeziumEvents.Change change = DebeziumEvents.change(json, () -> jsonKey(record));
          // the row as the event's Connect schema types it (dates, timestamps, decimals), when it carries one
          org.apache.kafka.connect.data.Struct typed = DebeziumEvents.hasConnectSchema(json)
              ? connectRow(record, change) : null;
          Record row;
          if (sourceTables == null) {
            row = typed != null ? connectFields(struct, typed, null, where) : fields(struct, change.row(), where);
          } else {
            Schema table = change.table() == null ? null : sourceTables.get(change.table());
            if (table == null) {
              throw BadRecordException.record(where, 0, false, "source", change.table() == null
                  ? "a Debezium change event without source.table: no table to write it to"
                  : "a change event of source table '" + change.table() + "', which no event sampled at the start of"
                      + " the run showed (its columns are unknown): run the job again to sample it, or take the"
                      + " event with --bad-records", text);
            }
            try {
              row = new SourceTableRow(change.table(), typed != null
                  ? connectFields(table.asStruct(), typed, change.table(), where)
                  : fields(table.asStruct(), change.row(), where));
            } catch (ColumnNotInSchemaException e) {
              throw new ColumnNotInSchemaException(e.column, change.table(), where);
            }
          }
          return change.kind() == DebeziumEvents.Kind.DELETE ? new dev.lakecommit.iceberg.DeletedRecord(row) : row;
        }
        if (!(json instanceof Map<?, ?> object)) {
          throw BadRecordException.record(where, 0, false, null, "expected a JSON object, got " + Json.kind(json),
              text);
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> fields = (Map<String, Object>) object;
        return fields(struct, fields, where);
      } catch (Json.SyntaxException e) {
        throw BadRecordException.record(where, 0, false, null, e.getMessage(), text);
      } catch (Values.ValueException e) {
        throw BadRecordException.record(where, 0, false, e.field(), e.getMessage(), text);
      }
    }

    private Record fields(Types.StructType struct, Map<String, Object> fields, String where)
        throws Values.ValueException {
      for (String name : fields.keySet()) {
        if (!ignoreUnknownColumns && struct.field(name) == null) {
          throw new ColumnNotInSchemaException(name, where);
        }
      }
      return Values.record(struct, fields, null);
    }

    /**
     * The row of a change event that carries its Connect schema, read with Kafka Connect's JSON converter: {@code
     * after} for an upsert, {@code before} (or the message key's struct) for a delete.
     */
    private org.apache.kafka.connect.data.Struct connectRow(ConsumerRecord<byte[], byte[]> record,
        DebeziumEvents.Change change) throws Values.ValueException {
      try {
        if (connectJson == null) {
          connectJson = ConnectSchemas.jsonConverter(false);
        }
        org.apache.kafka.connect.data.Struct envelope = (org.apache.kafka.connect.data.Struct)
            connectJson.toConnectData(record.topic(), record.value()).value();
        String field = change.kind() == DebeziumEvents.Kind.UPSERT ? "after" : "before";
        org.apache.kafka.connect.data.Struct row = envelope.schema().field(field) == null ? null
            : envelope.getStruct(field);
        if (row == null && record.key() != null) {
          if (connectJsonKey == null) {
            connectJsonKey = ConnectSchemas.jsonConverter(true);
          }
          row = (org.apache.kafka.connect.data.Struct) connectJsonKey.toConnectData(record.topic(), record.key())
              .value();
        }
        if (row == null) {
          throw new Values.ValueException(field, "a Debezium event without a '" + field + "' row");
        }
        return row;
      } catch (org.apache.kafka.connect.errors.DataException | ClassCastException e) {
        throw new Values.ValueException("schema", "the event's Connect schema does not read its payload: "
            + e.getMessage());
      }
    }

    /** A row read with its Connect schema, as a record of {@code struct}; {@code table} names the source table. */
    private Record connectFields(Types.StructType struct, org.apache.kafka.connect.data.Struct row, String table,
        String where) throws Values.ValueException {
      try {
        return ConnectValues.record(struct, row, false);
      } catch (ConnectValues.UnknownColumn e) {
        if (ignoreUnknownColumns && e.type == null) {
          return ConnectValues.recordOfKnown(struct, row);
        }
        String column = e.type == null ? e.column : e.column + " (widened: " + e.type + ")";
        throw table == null ? new ColumnNotInSchemaException(column, where)
            : new ColumnNotInSchemaException(column, table, where);
      }
    }

    /** The message key as JSON, or null if it has none or it is not JSON. */
    private Object jsonKey(ConsumerRecord<byte[], byte[]> record) {
      if (record.key() == null) {
        return null;
      }
      try {
        return Json.parse(new String(record.key(), StandardCharsets.UTF_8));
      } catch (Json.SyntaxException e) {
        return null;
      }
    }

    /**
     * A value in Avro's binary encoding, read with the writer schema given; Avro's single-object encoding (its
     * {@code C3 01} marker and schema fingerprint first) is read too.
     */
    private Record avroValue(byte[] value, Types.StructType struct, String where) {
      int start = value.length >= 10 && (value[0] & 0xff) == 0xC3 && value[1] == 0x01 ? 10 : 0;
      org.apache.avro.generic.GenericRecord generic;
      try {
        generic = avro.read(null, org.apache.avro.io.DecoderFactory.get().binaryDecoder(value, start,
            value.length - start, null));
      } catch (IOException | RuntimeException e) {
        throw BadRecordException.record(where, 0, false, null, "not an Avro value of the --avro-schema ("
            + e.getMessage() + ")", "");
      }
      try {
        Record converted = avroConverter.convert(generic);
        Record result = GenericRecord.create(struct);
        for (Types.NestedField field : settings.valueSchema().columns()) {
          result.setField(field.name(), converted.getField(field.name()));
        }
        return result;
      } catch (dev.lakecommit.staging.InvalidRecordException e) {
        throw BadRecordException.record(where, 0, false, e.field(), e.getMessage(), "");
      }
    }

    private Record csv(Types.StructType struct, String text, String where) throws Values.ValueException {
      List<String> cells = CsvFileRecords.parse(text);
      List<Types.NestedField> columns = settings.valueSchema().columns();
      if (cells.size() != columns.size()) {
        throw BadRecordException.record(where, 0, false, null, "expected " + columns.size() + " CSV fields, got "
            + cells.size(), text);
      }
      Record result = GenericRecord.create(struct);
      for (int i = 0; i < columns.size(); i++) {
        Types.NestedField column = columns.get(i);
        String cell = cells.get(i);
        result.setField(column.name(), cell.isEmpty() && column.isOptional() ? null
            : Values.fromText(column.type(), cell, column.name()));
      }
      return result;
    }

    private void metadata(Record record, ConsumerRecord<byte[], byte[]> source) {
      for (MetadataColumn column : settings.metadata()) {
        Object value = switch (column) {
          case KEY -> source.key() == null ? null : new String(source.key(), StandardCharsets.UTF_8);
          case TOPIC -> source.topic();
          case PARTITION -> source.partition();
          case OFFSET -> source.offset();
          case TIMESTAMP -> Instant.ofEpochMilli(source.timestamp()).atOffset(ZoneOffset.UTC);
        };
        record.setField(column.column, value);
      }
    }

    @Override
    public boolean ended() {
      return ended;
    }

    @Override
    public byte[] position() {
      return new KafkaPosition(next, diverted).toBytes();
    }

    @Override
    public void close() {
      jsonLines.close();
      if (endsClient != null) {
        endsClient.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ZERO));
      }
      consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(5)));
    }
  }

  /** A message holds a field the table's schema lacks: the job stops rather than drop it. */
  public static final class ColumnNotInSchemaException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    private final String column;

    ColumnNotInSchemaException(String column, String where) {
      super("Column '" + column + "' in " + where + " is not in the job's schema: it would be dropped. Run again"
          + " with --schema naming it (and --add-new-columns to add it to an existing table).");
      this.column = column;
    }

    /** A column of a Debezium source table that its sampled columns lack. */
    ColumnNotInSchemaException(String column, String sourceTable, String where) {
      super("Column '" + column + "' of source table '" + sourceTable + "' in " + where + " is not among the columns"
          + " sampled for it: it would be dropped. Run again with --add-new-columns: the run samples the events at"
          + " the job's position too, and adds the column to the table in the cut that commits its first rows.");
      this.column = column;
    }

    /**
     * A column of a table of a source database (direct change data capture) that was added, or whose type was
     * widened ({@code widened}: "int to long"; null for an added column), after the run started.
     */
    ColumnNotInSchemaException(String column, String widened, String sourceTable, String where) {
      super("Column '" + column + "' of source table '" + sourceTable + "' (" + where + ") was " + (widened == null
          ? "added after the run started: it would be dropped" : "widened after the run started (" + widened
          + ")") + ". Run again with --add-new-columns: the run reads the source's columns when it starts, and "
          + (widened == null ? "adds the column to" : "widens the column of") + " the table in the cut that commits"
          + " its first rows.");
      this.column = column;
    }
  }

  /** The table columns of Avro values: the schema's fields, enums as strings, unions as their widest type. */
  public static Schema avroTableSchema(org.apache.avro.Schema avro) {
    return AvroFileRecords.fileSchema(avro);
  }

  /** The end offsets (last stable offsets) of every partition of the input's topics now. */
  public static Map<TopicPartition, Long> endOffsets(KafkaInput input, Map<String, String> consumerProperties)
      throws IOException {
    try (KafkaConsumer<byte[], byte[]> consumer = consumer(input, consumerProperties)) {
      return consumer.endOffsets(partitions(consumer, input), Duration.ofSeconds(60));
    }
  }

  /** The committed positions a table records for a job, parsed; empty if none. */
  public static SortedMap<TopicPartition, Long> committedOffsets(String text) {
    return KafkaPosition.parseText(text);
  }
}
