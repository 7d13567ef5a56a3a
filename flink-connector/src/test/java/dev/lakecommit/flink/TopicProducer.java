package dev.lakecommit.flink;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Writes a topic of the process-level tests: {@code "<id>,<send time ms>"} for ids 0..count-1 at about {@code rate}
 * per second, idempotently, the send time also the record's timestamp (the job's event time); {@link #allowed} holds
 * it back until the test's next fault is due. {@link #readTopic} reads the topic back for the audit.
 *
 * <p>The last {@link #finalMessages()} ids are one per partition, sent after all others with one event time above
 * all others: the end marks of the topic. A job that reads with monotonous event-time watermarks through {@link
 * EventTimeRelease} passes on every other message only once its watermark is above their event times, which needs
 * every partition's end mark read; the end marks themselves wait for the final watermark of a drained stop. So a
 * table that holds every message but the end marks proves that the job has read the whole topic, and only then may
 * a test stop it with a drain: a drained stop ends the sources where they are, and what they have not read yet is
 * never read (a -Plong run stopped 85 s behind the topic lacked its last 7,129 messages).
 */
final class TopicProducer extends Thread {
  final AtomicLong sent = new AtomicLong();
  /** The producer sends ids below this only; raised by the test. */
  final AtomicLong allowed = new AtomicLong();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final String bootstrap;
  private final String topic;
  private final int partitions;
  private final long count;
  private final int rate;

  /** A producer of {@code count} messages to {@code topic} of {@code partitions} partitions (at most count). */
  TopicProducer(String bootstrap, String topic, int partitions, long count, int rate) {
    super("kafka-test-producer-" + topic);
    if (partitions < 1 || partitions > count) {
      throw new IllegalArgumentException("Invalid partition count " + partitions + " for " + count + " messages to "
          + topic + " (must be 1 to the message count: the last message of each partition is its end mark)");
    }
    setDaemon(true);
    this.bootstrap = bootstrap;
    this.topic = topic;
    this.partitions = partitions;
    this.count = count;
    this.rate = rate;
  }

  /** The end marks (see the class comment): the last messages, one per partition, released by a drained stop only. */
  long finalMessages() {
    return partitions;
  }

  @Override
  public void run() {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "300000");
    props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "300000");
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
      long due = System.nanoTime();
      long firstEndMark = count - partitions;
      long latest = Long.MIN_VALUE;
      long endTime = Long.MIN_VALUE;
      for (long id = 0; id < count; id++) {
        while (id >= allowed.get()) {
          Thread.sleep(20);   // held back by the test until its next fault is due
          due = System.nanoTime();
        }
        due += 1_000_000_000L / rate;
        long wait = due - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));   // rate limiting
        }
        long now = System.currentTimeMillis();
        ProducerRecord<String, String> record;
        if (id < firstEndMark) {
          latest = Math.max(latest, now);
          record = new ProducerRecord<>(topic, null, now, Long.toString(id), id + "," + now);
        } else {
          // an end mark: in its own partition, after the partition's other messages, above all their event times
          if (endTime == Long.MIN_VALUE) {
            endTime = Math.max(now, latest + 1);
          }
          record = new ProducerRecord<>(topic, (int) (id - firstEndMark), endTime, Long.toString(id),
              id + "," + endTime);
        }
        producer.send(record,
            (metadata, e) -> {
              if (e != null) {
                failure.compareAndSet(null, e);
              }
            });
        sent.incrementAndGet();
        if (failure.get() != null) {
          return;
        }
      }
      producer.flush();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      failure.compareAndSet(null, e);
    }
  }

  /** Fails if a send failed. */
  void check() {
    Throwable e = failure.get();
    if (e != null) {
      throw new AssertionError("The test producer of " + topic + " failed after " + sent.get() + " messages", e);
    }
  }

  void join(Duration timeout) throws InterruptedException {
    join(timeout.toMillis());
    if (isAlive()) {
      throw new AssertionError("The test producer of " + topic + " did not finish within " + timeout + " ("
          + sent.get() + " of " + count + " sent)");
    }
    check();
  }

  /** Every message of the topic: id → event time (from the beginning to the end offsets). */
  static Map<Long, Long> readTopic(String bootstrap, String topic) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
    Map<Long, Long> byId = new HashMap<>();
    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
      List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
      long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
      while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError("Cannot read topic " + topic + " to its end " + end);
        }
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
          String v = record.value();
          int comma = v.indexOf(',');
          Long previous = byId.put(Long.parseLong(v.substring(0, comma)), Long.parseLong(v.substring(comma + 1)));
          if (previous != null) {
            throw new AssertionError("Topic " + topic + " holds message " + v + " twice");
          }
        }
      }
    }
    return byId;
  }
}
