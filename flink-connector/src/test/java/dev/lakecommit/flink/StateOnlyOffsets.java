package dev.lakecommit.flink;

import java.util.Collection;
import java.util.Map;
import java.util.TreeSet;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;

/**
 * Starting offsets of a Kafka source whose positions come from Flink's state only: the consumer runs with {@code
 * auto.offset.reset=none} (the source builder sets it from {@link #getAutoOffsetResetStrategy()}), so that a
 * position gone from the topic fails the job instead of being reset, and no consumer-group offsets are read.
 *
 * <ul>
 *   <li>{@link #firstStart()}: partitions without a position in state start at their beginning (the job's first
 *       submission);
 *   <li>{@link #restoreOnly(String)}: a partition without a position in state fails the job with a message, so that
 *       a restore submitted without its checkpoint or savepoint neither re-reads the topic from its start nor skips
 *       to its end.
 * </ul>
 *
 * The enumerator asks only for partitions that the restored state does not hold.
 */
final class StateOnlyOffsets implements OffsetsInitializer {
  private static final long serialVersionUID = 1L;

  private final String job;

  private StateOnlyOffsets(String job) {
    this.job = job;
  }

  static StateOnlyOffsets firstStart() {
    return new StateOnlyOffsets(null);
  }

  /** @param job the job's name, for the message */
  static StateOnlyOffsets restoreOnly(String job) {
    return new StateOnlyOffsets(job);
  }

  @Override
  public Map<TopicPartition, Long> getPartitionOffsets(Collection<TopicPartition> partitions,
      PartitionOffsetsRetriever retriever) {
    if (job == null || partitions.isEmpty()) {
      return retriever.beginningOffsets(partitions);
    }
    TreeSet<String> names = new TreeSet<>();
    partitions.forEach(p -> names.add(p.toString()));
    throw new IllegalStateException("Job " + job + " has no position for Kafka partitions " + names
        + " in its Flink state: it reads positions only from the checkpoint or savepoint it is restored from"
        + " (auto.offset.reset=none, no group offsets). Submit it with that checkpoint or savepoint"
        + " (execution.state-recovery.path); it neither re-reads the topic from its start nor skips to its end.");
  }

  @Override
  public OffsetResetStrategy getAutoOffsetResetStrategy() {
    return OffsetResetStrategy.NONE;
  }
}
