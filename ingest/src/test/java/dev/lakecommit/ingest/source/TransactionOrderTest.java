package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * The order that keeps Debezium's source transactions whole, on records given by hand: two data partitions and the
 * transaction topic, events fetched in pieces.
 */
class TransactionOrderTest {
  private static final TopicPartition A = new TopicPartition("shop", 0);
  private static final TopicPartition B = new TopicPartition("shop", 1);
  private static final TopicPartition TX = new TopicPartition("shop.transaction", 0);

  private final TransactionOrder order = new TransactionOrder(TX.topic());
  private final Map<TopicPartition, ArrayDeque<ConsumerRecord<byte[], byte[]>>> queues = new LinkedHashMap<>();
  private final Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
  private long time;

  private void fetch(TopicPartition partition, String value) throws Exception {
    long offset = offsets.merge(partition, 1L, Long::sum) - 1;
    ConsumerRecord<byte[], byte[]> record = new ConsumerRecord<>(partition.topic(), partition.partition(), offset,
        time++, org.apache.kafka.common.record.TimestampType.CREATE_TIME, 0, value == null ? 0 : value.length(),
        null, value == null ? null : value.getBytes(StandardCharsets.UTF_8), new org.apache.kafka.common.header
        .internals.RecordHeaders(), java.util.Optional.empty());
    order.fetched(record);
    queues.computeIfAbsent(partition, p -> new ArrayDeque<>()).add(record);
  }

  private static String event(String transaction, int id) {
    return "{\"op\":\"u\",\"after\":{\"id\":" + id + "},\"transaction\":"
        + (transaction == null ? "null" : "{\"id\":\"" + transaction + "\",\"total_order\":1}") + "}";
  }

  private static String begin(String transaction) {
    return "{\"status\":\"BEGIN\",\"id\":\"" + transaction + "\",\"event_count\":null}";
  }

  private static String end(String transaction, int events) {
    return "{\"schema\":{},\"payload\":{\"status\":\"END\",\"id\":\"" + transaction + "\",\"event_count\":" + events
        + "}}";
  }

  /** Hands out what may go now: each record's partition and offset, with the boundary after it (| = boundary). */
  private List<String> drain() {
    List<String> out = new ArrayList<>();
    ConsumerRecord<byte[], byte[]> record;
    while ((record = order.next(queues)) != null) {
      String taken = record.topic() + "-" + record.partition() + "@" + record.offset();
      ConsumerRecord<byte[], byte[]> closing = order.closing(queues);
      if (closing != null) {
        taken += "+END@" + closing.offset();
      }
      out.add(taken + (order.atBoundary() ? "|" : ""));
    }
    return out;
  }

  @Test
  void aTransactionGoesOutWholeOnceItsEndAndAllItsEventsAreFetched() throws Exception {
    fetch(A, event(null, 1));           // a snapshot read: at once
    fetch(TX, begin("t1"));
    fetch(A, event("t1", 2));
    fetch(B, null);                     // a tombstone: no transaction, at once
    assertThat(drain()).containsExactly("shop.transaction-0@0|", "shop-0@0|", "shop-1@0|");

    fetch(TX, end("t1", 3));            // three events, one of them not fetched yet
    fetch(B, event("t1", 3));
    assertThat(drain()).as("t1 waits for its third event").isEmpty();
    assertThat(order.atBoundary()).isTrue();

    fetch(A, event("t1", 4));
    fetch(TX, begin("t2"));
    fetch(A, event("t2", 5));           // t2 behind t1 in partition A, its END not fetched
    assertThat(drain()).containsExactly("shop-0@1", "shop-1@1", "shop-0@2+END@1|", "shop.transaction-0@2|");
    fetch(TX, end("t2", 1));
    assertThat(drain()).containsExactly("shop-0@3+END@3|");
  }

  @Test
  void transactionsGoInTheOrderOfTheirEndsAndEmptyOnesPass() throws Exception {
    fetch(TX, end("t0", 0));            // a transaction with no event of these tables
    fetch(TX, end("t1", 1));
    fetch(TX, end("t2", 1));
    fetch(B, event("t1", 1));
    fetch(A, event("t2", 2));           // older in time than t1's event, but t2 commits after t1
    List<String> out = drain();
    assertThat(out).containsExactly("shop.transaction-0@0|", "shop-1@0+END@1|", "shop-0@0+END@2|");
  }

  @Test
  void aBoundedRunBeginsNoTransactionWhoseEndLiesBeyondItsEnd() throws Exception {
    order.bounds(Map.of(TX, 1L));
    fetch(TX, end("t1", 1));
    fetch(TX, end("t2", 1));
    fetch(A, event("t1", 1));
    fetch(A, event("t2", 2));
    assertThat(drain()).containsExactly("shop-0@0+END@0|");
    assertThat(queues.get(A)).as("t2 is left for the next run").hasSize(1);
  }

  @Test
  void aTransactionTopicRecordThatIsNoBeginOrEndIsRefused() {
    assertThatThrownBy(() -> fetch(TX, "{\"op\":\"c\"}")).isInstanceOf(Values.ValueException.class)
        .hasMessageContaining("BEGIN or END");
    assertThatThrownBy(() -> fetch(TX, "{\"status\":\"END\",\"id\":\"t\"}"))
        .hasMessageContaining("event_count");
  }
}
