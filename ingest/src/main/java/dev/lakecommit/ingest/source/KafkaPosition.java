package dev.lakecommit.ingest.source;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Comparator;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.kafka.common.TopicPartition;

/**
 * Where a Kafka source stands: for every partition it reads, the offset of the next record to read, plus the
 * records it diverted to dead-letter files so far. Stored in the checkpoint (bytes) and, in text form, in the
 * commit of each checkpoint ({@code topic:partition=offset,...}), so the table alone tells where the job is.
 *
 * @param offsets next offset per partition
 * @param diverted bad records diverted up to here, over all runs of the job
 */
public record KafkaPosition(SortedMap<TopicPartition, Long> offsets, long diverted) {
  private static final int VERSION = 1;
  /** Partitions in topic, then partition order. */
  static final Comparator<TopicPartition> ORDER =
      Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

  public KafkaPosition {
    TreeMap<TopicPartition, Long> copy = new TreeMap<>(ORDER);
    copy.putAll(offsets);
    offsets = java.util.Collections.unmodifiableSortedMap(copy);
  }

  static KafkaPosition empty() {
    return new KafkaPosition(new TreeMap<>(ORDER), 0);
  }

  byte[] toBytes() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte('K');
      out.writeInt(VERSION);
      out.writeLong(diverted);
      out.writeInt(offsets.size());
      for (Map.Entry<TopicPartition, Long> entry : offsets.entrySet()) {
        out.writeUTF(entry.getKey().topic());
        out.writeInt(entry.getKey().partition());
        out.writeLong(entry.getValue());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /**
   * @param bytes what {@link #toBytes} wrote, or null/empty for a job that has read nothing yet
   * @throws IllegalArgumentException if the bytes are not a Kafka position (e.g. the job read files before)
   */
  static KafkaPosition fromBytes(byte[] bytes) {
    if (bytes == null || bytes.length == 0) {
      return null;
    }
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      if (in.readByte() != 'K') {
        throw new IllegalArgumentException("The job's checkpoint holds no Kafka position: was it written by an"
            + " ingest of files under the same job id? Use another --job-id.");
      }
      int version = in.readInt();
      if (version != VERSION) {
        throw new IllegalArgumentException("Unknown Kafka position version " + version);
      }
      long diverted = in.readLong();
      int count = in.readInt();
      TreeMap<TopicPartition, Long> offsets = new TreeMap<>(ORDER);
      for (int i = 0; i < count; i++) {
        offsets.put(new TopicPartition(in.readUTF(), in.readInt()), in.readLong());
      }
      return new KafkaPosition(offsets, diverted);
    } catch (IOException e) {
      throw new IllegalArgumentException("Corrupt Kafka position in the checkpoint: " + e, e);
    }
  }

  /** The text form: {@code topic:partition=offset} by topic and partition, comma-separated. */
  public String toText() {
    return offsets.entrySet().stream()
        .map(e -> e.getKey().topic() + ":" + e.getKey().partition() + "=" + e.getValue())
        .collect(Collectors.joining(","));
  }

  /**
   * Parses {@link #toText()}.
   *
   * @throws IllegalArgumentException naming the part that is not {@code topic:partition=offset}
   */
  public static SortedMap<TopicPartition, Long> parseText(String text) {
    TreeMap<TopicPartition, Long> offsets = new TreeMap<>(ORDER);
    if (text == null || text.isBlank()) {
      return offsets;
    }
    for (String part : text.split(",")) {
      int colon = part.lastIndexOf(':');
      int equals = part.lastIndexOf('=');
      if (colon <= 0 || equals < colon) {
        throw new IllegalArgumentException("Not a Kafka offset (topic:partition=offset): " + part);
      }
      try {
        offsets.put(new TopicPartition(part.substring(0, colon), Integer.parseInt(part.substring(colon + 1, equals))),
            Long.parseLong(part.substring(equals + 1)));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("Not a Kafka offset (topic:partition=offset): " + part, e);
      }
    }
    return offsets;
  }
}
