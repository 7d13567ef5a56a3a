package dev.lakecommit.flink;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Collection;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;

/**
 * Starting offsets for the {@code KafkaSource} of a job that writes with a {@link LakecommitFlinkSink}, which close
 * the stateless-resubmission trap: a job submitted again without the checkpoint or savepoint that holds its Kafka
 * positions starts its source from its starting offsets, and with {@code earliest} (or stale group offsets) reads
 * again what the table already holds. The sink cannot tell those rows from new ones: they arrive under new
 * checkpoint ids of a new run, and Flink's exactly-once covers a job's restarts from its own state, not a new
 * submission.
 *
 * <p>{@link #guarding} reads the table when the source first assigns partitions that have no position in Flink's
 * state (a submission without state; a restore from a checkpoint or savepoint has positions for them, and partitions
 * discovered later start at their beginning, as the connector does). If the table holds no commit of the sink's
 * job, it is the job's first start: the given first-start offsets apply. If it does, the job fails before reading,
 * naming the job, the table, its last checkpoint and the partitions. The consumer runs with {@code
 * auto.offset.reset=none}, so a position that fell out of the topic's retention fails the job instead of being
 * reset.
 *
 * <pre>{@code
 * LakecommitFlinkSink sink = LakecommitFlinkSink.forRowData(rowType).iceberg(() -> config).jobName("orders").build();
 * KafkaSource<String> source = KafkaSource.<String>builder()
 *     .setBootstrapServers(servers).setTopics("orders").setValueOnlyDeserializer(new SimpleStringSchema())
 *     .setStartingOffsets(KafkaStartingOffsets.guarding(sink, OffsetsInitializer.earliest()))
 *     .build();
 * }</pre>
 *
 * To start a job over on purpose, give it a new job id ({@code jobId(...)} / {@code jobName(...)}) or plain
 * starting offsets.
 */
public final class KafkaStartingOffsets implements OffsetsInitializer {
  private static final long serialVersionUID = 1L;

  private final LakecommitFlinkSink sink;
  private final OffsetsInitializer firstStart;

  private KafkaStartingOffsets(LakecommitFlinkSink sink, OffsetsInitializer firstStart) {
    this.sink = Objects.requireNonNull(sink, "sink");
    this.firstStart = Objects.requireNonNull(firstStart, "firstStart");
  }

  /**
   * Offsets that apply {@code firstStart} on the job's first start only (the table holds no commit of the sink's
   * job), and fail a submission without state of a job the table already holds commits of.
   */
  public static KafkaStartingOffsets guarding(LakecommitFlinkSink sink, OffsetsInitializer firstStart) {
    return new KafkaStartingOffsets(sink, firstStart);
  }

  @Override
  public Map<TopicPartition, Long> getPartitionOffsets(Collection<TopicPartition> partitions,
      PartitionOffsetsRetriever retriever) {
    if (partitions.isEmpty()) {
      return Map.of();
    }
    long committed;
    try {
      committed = sink.lastCommittedInTable();
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read table " + sink.table() + " to check whether job "
          + sink.jobId() + " starts for the first time: " + e.getMessage(), e);
    }
    if (committed == 0) {
      return firstStart.getPartitionOffsets(partitions, retriever);
    }
    TreeSet<String> names = new TreeSet<>();
    partitions.forEach(partition -> names.add(partition.toString()));
    throw new IllegalStateException("Job " + sink.jobId() + " already committed up to checkpoint " + committed
        + " to table " + sink.table() + ", but this submission has no position for Kafka partitions " + names
        + " in its Flink state: it was started without the checkpoint or savepoint that holds them, and starting"
        + " them over would add rows the table already holds. Restore the job from its latest checkpoint or"
        + " savepoint (execution.state-recovery.path, flink run -s); to start it over on purpose, give it a new"
        + " job id.");
  }

  @Override
  public OffsetResetStrategy getAutoOffsetResetStrategy() {
    return OffsetResetStrategy.NONE;
  }
}
