package dev.lakecommit.ingest;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * A source table {@code (id, name, qty)} keyed by {@code id}, and the Debezium change events of its changes in a
 * topic, as a Debezium source connector writes them with Kafka Connect's JSON converter: a snapshot read of every
 * row first, then creates, updates and deletes in seeded random order — bare and in the converter's schema envelope,
 * deletes with the whole row, with the key only and with no {@code before} (the message key says which row), each
 * delete followed by a tombstone. A key's events go to one partition, in order. {@link #model} is the source table
 * after the events produced so far.
 */
final class DebeziumTopic {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String topic;
  private final int partitions;
  private final int keys;
  private final Random random;
  private final String table;
  private final String keyColumn;
  private final Map<Long, Map<String, Object>> rows = new HashMap<>();
  private long produced;
  /** A column the source table gained (an ALTER TABLE ... ADD COLUMN), or null. */
  private String added;
  /** The source transaction of the events being produced, or null (outside transactions: snapshot reads). */
  private String transaction;
  private int inTransaction;

  DebeziumTopic(String topic, int partitions, int keys, long seed) {
    this(topic, partitions, keys, seed, "customers", "id");
  }

  /** The events of source table {@code table}, keyed by {@code keyColumn}, into {@code topic}. */
  DebeziumTopic(String topic, int partitions, int keys, long seed, String table, String keyColumn) {
    this.topic = topic;
    this.partitions = partitions;
    this.keys = keys;
    this.random = new Random(seed);
    this.table = table;
    this.keyColumn = keyColumn;
  }

  /** The snapshot: a read ({@code op r}) of each of the first {@code count} keys. */
  void snapshot(KafkaProducer<String, String> producer, int count) throws Exception {
    for (long id = 0; id < count; id++) {
      Map<String, Object> row = row(id);
      send(producer, id, event("r", null, row));
      rows.put(id, row);
    }
  }

  /**
   * The events produced from now on belong to source transaction {@code id} (null: none), with Debezium's
   * transaction block; {@link #changes} returns how many of them it produced.
   */
  void transaction(String id) {
    this.transaction = id;
    this.inTransaction = 0;
  }

  /**
   * Debezium's BEGIN or END event of a transaction in its transaction topic ({@code eventCount}: the END's count of
   * the transaction's change events).
   */
  static void marker(KafkaProducer<String, String> producer, String topic, String id, boolean end, int eventCount)
      throws Exception {
    Map<String, Object> event = new LinkedHashMap<>();
    event.put("status", end ? "END" : "BEGIN");
    event.put("id", id);
    event.put("event_count", end ? eventCount : null);
    event.put("ts_ms", 1_700_000_000_000L);
    producer.send(new ProducerRecord<>(topic, 0, "{\"id\":\"" + id + "\"}", JSON.writeValueAsString(event)));
  }

  /**
   * {@code count} changes of random keys: a create of a missing key, else an update or (3 in 10) a delete.
   *
   * @return the change events produced (tombstones are none)
   */
  int changes(KafkaProducer<String, String> producer, int count) throws Exception {
    for (int i = 0; i < count; i++) {
      long id = random.nextInt(keys);
      Map<String, Object> old = rows.get(id);
      if (old != null && random.nextInt(10) < 3) {
        int shape = random.nextInt(3);
        Map<String, Object> before = shape == 0 ? old : shape == 1 ? keyOnly(id) : null;
        send(producer, id, event("d", before, null));
        send(producer, id, null); // the tombstone
        rows.remove(id);
      } else {
        Map<String, Object> after = row(id);
        send(producer, id, event(old == null ? "c" : "u", old, after));
        rows.put(id, after);
      }
    }
    return count;
  }

  /** The source table gains a text column: the rows of later events have it. */
  void addColumn(String column) {
    this.added = column;
  }

  /** The source table now: {@code id -> "name|qty"}, and {@code "|value"} of an added column where a row has one. */
  Map<Long, String> model() {
    Map<Long, String> model = new TreeMap<>();
    rows.forEach((id, row) -> model.put(id, row.get("name") + "|" + row.get("qty")
        + (added != null && row.get(added) != null ? "|" + row.get(added) : "")));
    return model;
  }

  private Map<String, Object> row(long id) {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put(keyColumn, id);
    row.put("name", "name-" + id + "-" + produced);
    row.put("qty", random.nextInt(5) == 0 ? null : random.nextInt(1000));
    if (added != null) {
      row.put(added, added + "-" + id + "-" + produced);
    }
    return row;
  }

  private Map<String, Object> keyOnly(long id) {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put(keyColumn, id);
    row.put("name", null);
    row.put("qty", null);
    return row;
  }

  private String event(String op, Map<String, Object> before, Map<String, Object> after) throws Exception {
    Map<String, Object> payload = new LinkedHashMap<>();
    payload.put("before", before);
    payload.put("after", after);
    payload.put("source", Map.of("connector", "postgresql", "db", "shop", "table", table, "lsn", produced));
    payload.put("op", op);
    payload.put("ts_ms", 1_700_000_000_000L + produced);
    if (transaction != null) {
      inTransaction++;
      payload.put("transaction", Map.of("id", transaction, "total_order", inTransaction, "data_collection_order",
          inTransaction));
    }
    return JSON.writeValueAsString(random.nextBoolean() ? payload
        : Map.of("schema", Map.of("type", "struct", "name", "shop." + table + ".Envelope"), "payload", payload));
  }

  private void send(KafkaProducer<String, String> producer, long id, String value) {
    String key = random.nextBoolean() ? "{\"" + keyColumn + "\":" + id + "}"
        : "{\"schema\":{\"type\":\"struct\"},\"payload\":{\"" + keyColumn + "\":" + id + "}}";
    // a key's events in one partition, in order, whatever the key's envelope
    producer.send(new ProducerRecord<>(topic, (int) (id % partitions), key, value));
    produced++;
  }

  /** The rows of table {@code shop.customers} in the tool's default catalog of {@code warehouse}: id to "name|qty". */
  static Map<Long, String> tableRows(java.nio.file.Path warehouse) throws java.io.IOException {
    return tableRows(warehouse, "shop.customers", "id");
  }

  /**
   * The rows of {@code name} in the tool's default catalog of {@code warehouse}: key to "name|qty", and "|value" of a
   * fourth column where a row has a value in it.
   */
  static Map<Long, String> tableRows(java.nio.file.Path warehouse, String name, String keyColumn)
      throws java.io.IOException {
    org.apache.iceberg.Table table = org.apache.iceberg.CatalogUtil.buildIcebergCatalog("lakecommit", Map.of(
        "type", "jdbc", "uri", "jdbc:sqlite:" + warehouse.resolve("catalog.db").toAbsolutePath(), "warehouse",
        warehouse.toUri().toString(), "jdbc.schema-version", "V1"), new org.apache.hadoop.conf.Configuration())
        .loadTable(org.apache.iceberg.catalog.TableIdentifier.parse(name));
    Map<Long, String> rows = new TreeMap<>();
    try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.data.Record> read =
        org.apache.iceberg.data.IcebergGenerics.read(table).build()) {
      for (org.apache.iceberg.data.Record row : read) {
        Object added = table.schema().columns().size() > 3 ? row.get(3, Object.class) : null;
        String before = rows.put(((Number) row.getField(keyColumn)).longValue(), row.getField("name") + "|"
            + row.getField("qty") + (added != null ? "|" + added : ""));
        if (before != null) {
          throw new AssertionError("Two rows of key " + row.getField(keyColumn) + " in " + table);
        }
      }
    }
    return rows;
  }
}
