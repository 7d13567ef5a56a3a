package dev.lakecommit.flink;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.hive.HiveCommittable;
import dev.lakecommit.iceberg.CutCommittable;
import dev.lakecommit.iceberg.IcebergCommittable;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;

/**
 * The committer's Flink metrics, in the group {@value #GROUP} of the sink committer operator's metric group (so a
 * reporter sees, for example, {@code <job>.<operator>.<subtask>.lakecommit.committedRecords}). Only the committer
 * subtask that receives the commits (subtask 0) reports non-zero values; every subtask registers them.
 *
 * <ul>
 *   <li>{@code lastCommitDurationMs} (gauge): how long the last table commit took, retries included; -1 before the
 *       first;
 *   <li>{@code commitLatencyMs} (histogram, last {@value #HISTOGRAM_WINDOW} commits): from the moment Flink handed
 *       the checkpoint's commit to the committer (its checkpoint completed, or the job restored it) until the
 *       table commit was done — a commit left pending and retried counts from the first hand-over;
 *   <li>{@code committedCheckpoints}, {@code committedFiles}, {@code committedRecords}, {@code committedBytes}
 *       (counters): what this committer made visible; a replay the table already held is not counted again (data
 *       and delete files; records and bytes of data files);
 *   <li>{@code replaysSkipped} (counter): commits Flink handed over again (after a restore) that the table already
 *       held, acknowledged without a commit;
 *   <li>{@code pendingCheckpoints} (gauge): commits handed over and not settled (left pending for a retry, or
 *       being committed);
 *   <li>{@code commitRetries} (counter): commit attempts after the first, for any checkpoint;
 *   <li>{@code lastCutTables} (gauge, sinks of several tables): how many tables the last cut touched; -1 before the
 *       first. The commit of such a sink is its cut: {@code lastCommitDurationMs} and {@code commitLatencyMs} time
 *       the whole cut, every table's commit and the cut record included.
 * </ul>
 *
 * <p>Counters restart at 0 with every restart of the committer's task, as Flink's own do.
 */
final class CommitMetrics {
  static final String GROUP = "lakecommit";
  static final int HISTOGRAM_WINDOW = 1024;

  private final Counter committedCheckpoints;
  private final Counter committedFiles;
  private final Counter committedRecords;
  private final Counter committedBytes;
  private final Counter replaysSkipped;
  private final Counter commitRetries;
  private final Histogram commitLatency;
  private final Map<CommitId, Long> handedOverNanos = new ConcurrentHashMap<>();
  private volatile long lastCommitDurationMs = -1;
  private volatile int lastCutTables = -1;

  private CommitMetrics(MetricGroup group) {
    committedCheckpoints = group.counter("committedCheckpoints");
    committedFiles = group.counter("committedFiles");
    committedRecords = group.counter("committedRecords");
    committedBytes = group.counter("committedBytes");
    replaysSkipped = group.counter("replaysSkipped");
    commitRetries = group.counter("commitRetries");
    commitLatency = group.histogram("commitLatencyMs", new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW));
    group.gauge("lastCommitDurationMs", () -> lastCommitDurationMs);
    group.gauge("pendingCheckpoints", handedOverNanos::size);
    group.gauge("lastCutTables", () -> lastCutTables);
  }

  /** Registers the metrics in {@code operatorGroup}'s subgroup {@value #GROUP}. */
  static CommitMetrics register(MetricGroup operatorGroup) {
    return new CommitMetrics(operatorGroup.addGroup(GROUP));
  }

  /** Flink handed the commit over (again): the latency counts from the first time. */
  void handedOver(CommitId id, long nowNanos) {
    handedOverNanos.putIfAbsent(id, nowNanos);
  }

  /** The table commit of {@code id} was made, in {@code durationNanos}, with what {@code committable} holds. */
  void committed(CommitId id, Object committable, long durationNanos, long nowNanos) {
    lastCommitDurationMs = durationNanos / 1_000_000;
    Long since = handedOverNanos.remove(id);
    if (since != null) {
      commitLatency.update((nowNanos - since) / 1_000_000);
    }
    committedCheckpoints.inc();
    if (committable instanceof IcebergCommittable iceberg) {
      add(iceberg.fileCount(), iceberg.recordCount(), iceberg.totalBytes());
    } else if (committable instanceof HiveCommittable hive) {
      add(hive.fileCount(), hive.recordCount(), hive.totalBytes());
    } else if (committable instanceof CutCommittable cut) {
      lastCutTables = cut.tables().size();
      add(cut.fileCount(), cut.recordCount(), cut.totalBytes());
    }
  }

  private void add(long files, long records, long bytes) {
    committedFiles.inc(files);
    committedRecords.inc(records);
    committedBytes.inc(bytes);
  }

  /** The table already held {@code id}: a replay, skipped. */
  void replaySkipped(CommitId id) {
    handedOverNanos.remove(id);
    replaysSkipped.inc();
  }

  /** One more commit attempt after the first. */
  void retried() {
    commitRetries.inc();
  }
}
