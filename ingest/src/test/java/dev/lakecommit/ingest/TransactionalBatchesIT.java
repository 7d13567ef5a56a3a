package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.KafkaBroker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.LongStream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The stream audit's producer against a broker outage longer than the client's own timeouts (at -Plong one such
 * outage failed the audit in the producer, awaiting EndTxn): the batch sent into the outage is committed once the
 * broker is back, and the topic holds every id exactly once under read_committed.
 */
class TransactionalBatchesIT {
  @TempDir Path dir;
  private KafkaBroker broker;

  @AfterEach
  void stopBroker() {
    if (broker != null) {
      broker.close();
    }
  }

  @Test
  void aBatchSentIntoABrokerOutageIsCommittedOnceAfterIt() throws Exception {
    broker = KafkaBroker.inProcess(dir.resolve("kafka"));
    broker.createTopic("outage", 2);
    // client timeouts of about a second, so that a few seconds of outage outlast them
    Map<String, String> shortTimeouts = Map.of(ProducerConfig.MAX_BLOCK_MS_CONFIG, "1000",
        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "1000", ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "1500",
        ProducerConfig.LINGER_MS_CONFIG, "0");
    try (TransactionalBatches writer = new TransactionalBatches(broker, "outage-writer", Duration.ofMinutes(2),
        shortTimeouts)) {
      writer.commit("outage", 0, 200);
      broker.stop();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      Thread during = new Thread(() -> {
        try {
          writer.commit("outage", 200, 400);
        } catch (Throwable e) {
          failure.set(e);
        }
      }, "producer-during-outage");
      during.start();
      // the outage lasts until the writer met a timeout or an error of its own (bounded)
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (writer.setbacks() == 0 && during.isAlive()) {
        assertThat(System.nanoTime()).as(() -> "the writer met a timeout within 60 s: " + writer
            + "; the producing thread at " + java.util.Arrays.toString(during.getStackTrace())).isLessThan(deadline);
        during.join(100);
      }
      assertThat(during.isAlive()).as("the batch is not committed while the broker is down: %s", writer).isTrue();
      broker.start();
      during.join(TimeUnit.MINUTES.toMillis(2));
      assertThat(during.isAlive()).as("committed after the outage: %s", writer).isFalse();
      assertThat(failure.get()).as("%s", writer).isNull();
      writer.commit("outage", 400, 600);
      System.out.println("TransactionalBatchesIT: " + writer);
      assertThat(writer.setbacks()).isPositive();
    }

    List<ConsumerRecord<String, String>> records = broker.records("outage", "read_committed");
    assertThat(records).extracting(ConsumerRecord::key)
        .containsExactlyInAnyOrderElementsOf(LongStream.range(0, 600).mapToObj(Long::toString).toList());
  }
}
