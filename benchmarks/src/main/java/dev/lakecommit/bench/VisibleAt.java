package dev.lakecommit.bench;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.ingest.source.KafkaSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SortedMap;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.kafka.common.TopicPartition;

/**
 * When each Kafka record became visible in a table a job committed it to, read from the table's own history after
 * the run, without polling: every metadata version of the table carries the job's source position (the
 * {@code lakecommit.source.<job>} property, set in the same transaction as the data) and its current snapshot, whose
 * timestamp is the commit's time. A record is visible from the first commit whose position for its partition is past
 * its offset.
 */
final class VisibleAt {
  /** One commit: its time and the next offset of each partition it holds. */
  private record Commit(long millis, SortedMap<TopicPartition, Long> offsets) {}

  private final List<Commit> commits = new ArrayList<>();

  /**
   * @throws IllegalStateException if the table's metadata log holds no version with the job's position
   */
  VisibleAt(Table table, String jobId) {
    TableMetadata current = ((HasTableOperations) table).operations().current();
    List<String> files = new ArrayList<>();
    current.previousFiles().forEach(entry -> files.add(entry.file()));
    files.add(current.metadataFileLocation());
    String key = CommitId.SOURCE_POSITION_KEY_PREFIX + jobId;
    for (String file : files) {
      TableMetadata version = TableMetadataParser.read(table.io(), file);
      String position = version.properties().get(key);
      if (position != null && version.currentSnapshot() != null) {
        commits.add(new Commit(version.currentSnapshot().timestampMillis(), KafkaSource.committedOffsets(position)));
      }
    }
    if (commits.isEmpty()) {
      throw new IllegalStateException("No metadata version of " + table.name() + " records a position of job "
          + jobId + " (" + files.size() + " versions read)");
    }
    commits.sort(java.util.Comparator.comparingLong(Commit::millis));
  }

  /**
   * The commit time of the first commit holding the record.
   *
   * @throws IllegalStateException naming the record if no commit holds it
   */
  long millis(String topic, int partition, long offset) {
    TopicPartition key = new TopicPartition(topic, partition);
    for (Commit commit : commits) {
      Long next = commit.offsets().get(key);
      if (next != null && next > offset) {
        return commit.millis();
      }
    }
    throw new IllegalStateException("No commit holds record " + key + " offset " + offset + " (newest position: "
        + commits.get(commits.size() - 1).offsets() + ")");
  }

  /** The {@code q}-quantile (0 < q ≤ 1) of the values, by the nearest-rank method. */
  static long quantile(long[] values, double q) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    int rank = (int) Math.ceil(q * sorted.length);
    return sorted[Math.max(0, rank - 1)];
  }

  int commits() {
    return commits.size();
  }

  @Override
  public String toString() {
    return "VisibleAt{" + commits.size() + " commits" + (commits.isEmpty() ? "" : ", last "
        + commits.get(commits.size() - 1).offsets()) + "}";
  }
}
