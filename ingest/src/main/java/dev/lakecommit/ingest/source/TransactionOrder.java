package dev.lakecommit.ingest.source;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * The order in which a Kafka reader of Debezium change events hands out records so that every checkpoint holds
 * whole source transactions ({@code provide.transaction.metadata=true}): transactions go out in their commit order,
 * as the END events of the transaction topic give it, each only once all of its events were fetched (END's {@code
 * event_count}), and then all of them before anything of the next; the reader is {@linkplain #atBoundary() at a
 * boundary} between two transactions only. Events outside transactions (snapshot reads, tombstones) go out at once.
 * An END goes out right after its transaction's last event, so a restart at a checkpoint never meets an END whose
 * events lie before it.
 *
 * <p>Events of one transaction are in commit order in each partition (Debezium writes them so), so the events at
 * the heads of the partitions are those of the oldest transaction not handed out. Not thread-safe: the reader's.
 */
final class TransactionOrder {
  /** A BEGIN or END event of the transaction topic. */
  record Marker(boolean end, String id, int eventCount) {}

  private final String topic;
  /** The transaction of each fetched data event that belongs to one (events outside transactions are absent). */
  private final Map<ConsumerRecord<byte[], byte[]>, String> transactionOf = new IdentityHashMap<>();
  private final Map<ConsumerRecord<byte[], byte[]>, Marker> markers = new IdentityHashMap<>();
  /** Fetched events per transaction not handed out yet (its END's count once all were fetched). */
  private final Map<String, Integer> fetched = new HashMap<>();
  /** The transaction being handed out, or null between transactions. */
  private String open;
  /** Its events handed out, and its END's count of them. */
  private int handedOut;
  private int openCount;
  /** A bounded run's end offsets: a transaction whose END lies at or beyond them is left to the next run. */
  private Map<TopicPartition, Long> bounds = Map.of();

  TransactionOrder(String topic) {
    this.topic = topic;
  }

  String topic() {
    return topic;
  }

  /** A bounded run ends at these offsets: no transaction whose END lies beyond them is begun. */
  void bounds(Map<TopicPartition, Long> ends) {
    this.bounds = Map.copyOf(ends);
  }

  /** Whether records of {@code partition} are BEGIN and END events rather than rows. */
  boolean isMarkers(TopicPartition partition) {
    return partition.topic().equals(topic);
  }

  /**
   * Notes a fetched record: an END's transaction and count, or a data event's transaction.
   *
   * @throws Values.ValueException naming the field if a record of the transaction topic is no BEGIN or END event
   */
  void fetched(ConsumerRecord<byte[], byte[]> record) throws Values.ValueException, Json.SyntaxException {
    if (record.topic().equals(topic)) {
      if (record.value() != null) {
        markers.put(record, marker(Json.parse(new String(record.value(), StandardCharsets.UTF_8))));
      }
      return;
    }
    String transaction = transactionOf(record.value());
    if (transaction != null) {
      transactionOf.put(record, transaction);
      fetched.merge(transaction, 1, Integer::sum);
    }
  }

  /**
   * The next record to hand out of the fetched ones, taken from its queue, or null if every head waits: for events
   * of a transaction not fetched whole yet, or for the END that orders it.
   */
  ConsumerRecord<byte[], byte[]> next(Map<TopicPartition, ArrayDeque<ConsumerRecord<byte[], byte[]>>> queues) {
    String following = null;
    int followingCount = 0;
    for (Map.Entry<TopicPartition, ArrayDeque<ConsumerRecord<byte[], byte[]>>> entry : queues.entrySet()) {
      ConsumerRecord<byte[], byte[]> head = entry.getValue().peekFirst();
      if (head == null || !isMarkers(entry.getKey())) {
        continue;
      }
      Marker marker = markers.get(head);
      if (marker == null || !marker.end()) {
        markers.remove(head);
        return entry.getValue().pollFirst(); // a BEGIN (or an empty message): nothing to wait for
      }
      if ((open == null || open.equals(marker.id())) && handedOut == marker.eventCount()) {
        // the transaction's last event is out (or it had none here): its END goes with it
        return takeEnd(entry.getValue(), marker);
      }
      Long bound = bounds.get(entry.getKey());
      if (open == null && fetched.getOrDefault(marker.id(), 0) >= marker.eventCount()
          && (bound == null || head.offset() < bound)) {
        following = marker.id();
        followingCount = marker.eventCount();
      }
    }
    ArrayDeque<ConsumerRecord<byte[], byte[]>> first = null;
    for (Map.Entry<TopicPartition, ArrayDeque<ConsumerRecord<byte[], byte[]>>> entry : queues.entrySet()) {
      ConsumerRecord<byte[], byte[]> head = entry.getValue().peekFirst();
      if (head == null || isMarkers(entry.getKey())) {
        continue;
      }
      String transaction = transactionOf.get(head);
      boolean ready = transaction == null || transaction.equals(open) || transaction.equals(following);
      if (ready && (first == null || head.timestamp() < first.peekFirst().timestamp())) {
        first = entry.getValue();
      }
    }
    if (first == null) {
      return null;
    }
    ConsumerRecord<byte[], byte[]> record = first.pollFirst();
    String transaction = transactionOf.remove(record);
    if (transaction != null) {
      if (open == null) {
        open = transaction;
        openCount = followingCount;
      }
      handedOut++;
    }
    return record;
  }

  /**
   * After a record went out: if it was the last event of the open transaction, that transaction's END, taken from
   * its queue (the transaction is closed, the reader at a boundary); else null.
   */
  ConsumerRecord<byte[], byte[]> closing(Map<TopicPartition, ArrayDeque<ConsumerRecord<byte[], byte[]>>> queues) {
    if (open == null || handedOut < openCount) {
      return null;
    }
    for (Map.Entry<TopicPartition, ArrayDeque<ConsumerRecord<byte[], byte[]>>> entry : queues.entrySet()) {
      ConsumerRecord<byte[], byte[]> head = entry.getValue().peekFirst();
      if (head != null && isMarkers(entry.getKey())) {
        Marker marker = markers.get(head);
        if (marker != null && marker.end() && marker.id().equals(open)) {
          return takeEnd(entry.getValue(), marker);
        }
      }
    }
    return null;
  }

  /** Takes the END at the head of {@code queue}, of {@code marker}'s transaction: it is closed. */
  private ConsumerRecord<byte[], byte[]> takeEnd(ArrayDeque<ConsumerRecord<byte[], byte[]>> queue, Marker marker) {
    ConsumerRecord<byte[], byte[]> end = queue.pollFirst();
    markers.remove(end);
    fetched.remove(marker.id());
    open = null;
    handedOut = 0;
    return end;
  }

  /** Whether a fetched data event belongs to a transaction. */
  boolean inTransaction(ConsumerRecord<byte[], byte[]> record) {
    return transactionOf.containsKey(record);
  }

  /** Whether the records handed out end between two transactions: a checkpoint may be taken. */
  boolean atBoundary() {
    return open == null;
  }

  /** The transaction being handed out or waited for, for messages: its id, or null. */
  String waitingFor() {
    return open;
  }

  /** Fetched events not handed out that belong to transactions. */
  int heldInTransactions() {
    return transactionOf.size();
  }

  /** A BEGIN or END event of Debezium's transaction topic (bare or in the JSON converter's envelope). */
  static Marker marker(Object json) throws Values.ValueException {
    Map<String, Object> event = DebeziumEvents.payload(json, "transaction event");
    Object status = event.get("status");
    Object id = event.get("id");
    if (!(status instanceof String text) || !(id instanceof String name)
        || !(text.equals("BEGIN") || text.equals("END"))) {
      throw new Values.ValueException("status", "not an event of Debezium's transaction topic: no 'status' BEGIN or"
          + " END with an 'id'");
    }
    if (text.equals("BEGIN")) {
      return new Marker(false, name, 0);
    }
    if (!(event.get("event_count") instanceof Number count)) {
      throw new Values.ValueException("event_count", "a Debezium transaction END event without 'event_count'");
    }
    return new Marker(true, name, count.intValue());
  }

  /** The transaction id of a change event's value ({@code transaction.id}), or null if it names none. */
  static String transactionOf(byte[] value) {
    if (value == null || !contains(value, TRANSACTION)) {
      return null;
    }
    try {
      Map<String, Object> event = DebeziumEvents.payload(Json.parse(new String(value, StandardCharsets.UTF_8)),
          "value");
      return event.get("transaction") instanceof Map<?, ?> transaction && transaction.get("id") instanceof String id
          ? id : null;
    } catch (Json.SyntaxException | Values.ValueException e) {
      return null; // a bad record: the reader reports it where it hands it out
    }
  }

  private static final byte[] TRANSACTION = "\"transaction\"".getBytes(StandardCharsets.US_ASCII);

  private static boolean contains(byte[] bytes, byte[] part) {
    outer:
    for (int i = 0; i + part.length <= bytes.length; i++) {
      for (int j = 0; j < part.length; j++) {
        if (bytes[i + j] != part[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }
}
