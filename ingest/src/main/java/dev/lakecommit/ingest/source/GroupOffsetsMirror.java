package dev.lakecommit.ingest.source;

import dev.lakecommit.core.runtime.JobListener;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Mirrors a Kafka job's committed offsets to a consumer group ({@code --group-id}) after each table commit, for the
 * monitoring tools that read a group's lag. The group is written, never read: where the job stands is what its
 * checkpoint and the table say. A mirror that fails is logged and retried with the next commit; it never fails the
 * job.
 *
 * <p>Told of the reader's position when each checkpoint is taken and persisted (on the job's coordinator thread),
 * then of the checkpoint's completion (on the committer's thread when commits are pipelined, while the reader
 * already reads on): each checkpoint's own offsets are mirrored, never a position the table does not hold yet.
 */
public final class GroupOffsetsMirror implements JobListener, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(GroupOffsetsMirror.class);
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  private final String groupId;
  private final Admin admin;
  private volatile byte[] position;
  /** The positions of checkpoints persisted and not completed yet, by checkpoint id. */
  private final java.util.concurrent.ConcurrentSkipListMap<Long, byte[]> persisted =
      new java.util.concurrent.ConcurrentSkipListMap<>();
  private Map<TopicPartition, Long> mirrored = Map.of();

  /**
   * @param clientProperties the job's {@code -K} settings (security, SASL/SSL, client id): the admin client uses
   *     those it knows
   */
  public GroupOffsetsMirror(KafkaInput input, Map<String, String> clientProperties, String groupId) {
    if (groupId == null || groupId.isBlank()) {
      throw new IllegalArgumentException("Invalid option --group-id: '" + groupId + "' (give a consumer group name)");
    }
    this.groupId = groupId;
    Properties properties = new Properties();
    clientProperties.forEach((key, value) -> {
      if (AdminClientConfig.configNames().contains(key)) {
        properties.put(key, value);
      }
    });
    properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, input.bootstrapServers());
    this.admin = Admin.create(properties);
  }

  /** The reader's position, taken for the checkpoint that completes next. */
  public void position(byte[] at) {
    this.position = at;
  }

  @Override
  public void onCheckpointPersisted(long checkpointId) {
    byte[] at = position;
    if (at != null) {
      persisted.put(checkpointId, at);
    }
  }

  @Override
  public void onCheckpointComplete(long checkpointId, long recordCount) {
    byte[] bytes = persisted.get(checkpointId);
    persisted.headMap(checkpointId, true).clear();
    KafkaPosition at = bytes == null ? null : KafkaPosition.fromBytes(bytes);
    if (at == null || at.offsets().equals(mirrored)) {
      return;
    }
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    at.offsets().forEach((partition, offset) -> offsets.put(partition, new OffsetAndMetadata(offset)));
    try {
      admin.alterConsumerGroupOffsets(groupId, offsets).all().get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      mirrored = at.offsets();
    } catch (ExecutionException | TimeoutException e) {
      Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
      LOG.warn("Could not mirror the offsets of checkpoint {} to consumer group {} (the job goes on; the next commit"
          + " tries again): {}", checkpointId, groupId, cause.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    admin.close(Duration.ofSeconds(5));
  }
}
