package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.iceberg.ExpireSnapshots;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.util.SnapshotUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Snapshot expiry with Iceberg's {@code ExpireSnapshots} (keep the newest N of each branch and everything newer
 * than T; files only expired snapshots referenced are deleted), limited so that every job's restart lookup keeps
 * working. The lookup reads the job's watermark property {@code lakecommit.committed.<job>}, which expiry never
 * touches; only for a job whose property is missing does it walk the main branch's history for the job's newest
 * snapshot. So for each job that has snapshots in the history but no watermark property, expiry keeps the history
 * from the head down to that job's newest snapshot (it lowers the age cut-off to that snapshot's time). A job's
 * older checkpoints may go: the lookup needs only the newest. Removing a watermark property after its job's
 * snapshots were expired loses the lookup for that job; don't.
 */
public final class SnapshotExpiry {
  private static final Logger LOG = LoggerFactory.getLogger(SnapshotExpiry.class);

  private SnapshotExpiry() {}

  /**
   * @param expire snapshot ids that would go, oldest first
   * @param protectedBy jobs without a watermark property whose newest snapshot made expiry keep more history
   * @param cutoff the age cut-off actually applied
   */
  public record Plan(List<Long> expire, Map<String, Long> protectedBy, Instant cutoff) {}

  /** {@code expired} as committed; {@code filesDeleted} counts data, delete, manifest and manifest-list files. */
  public record Result(List<Long> expired, long filesDeleted) {}

  static Plan plan(Table table, Instant olderThan, int retainLast) {
    ExpireSnapshots expire = configure(table, olderThan, retainLast, new LinkedHashMap<>());
    Map<String, Long> protectedBy = new LinkedHashMap<>();
    Instant cutoff = cutoff(table, olderThan, protectedBy);
    List<Long> expired = new ArrayList<>();
    expire.apply().forEach(snapshot -> expired.add(snapshot.snapshotId())); // apply() names what would go
    java.util.Collections.sort(expired);
    return new Plan(expired, protectedBy, cutoff);
  }

  static Result run(Supplier<Table> load, Instant olderThan, int retainLast) {
    Table table = load.get();
    List<String> deleted = java.util.Collections.synchronizedList(new ArrayList<>());
    Set<Long> before = new HashSet<>();
    table.snapshots().forEach(snapshot -> before.add(snapshot.snapshotId()));
    ExpireSnapshots expire = configure(table, olderThan, retainLast, new LinkedHashMap<>())
        .deleteWith(location -> {
          table.io().deleteFile(location);
          deleted.add(location);
        });
    if (expire.apply().isEmpty()) {
      return new Result(List.of(), 0);
    }
    expire.commit();
    // Loaded anew: while the commit deleted files, checkpoint commits may have outrun what the table object can
    // refresh from (a Hadoop table deletes metadata files beyond write.metadata.previous-versions-max).
    Set<Long> gone = new HashSet<>(before);
    load.get().snapshots().forEach(snapshot -> gone.remove(snapshot.snapshotId()));
    List<Long> expired = new ArrayList<>(gone);
    java.util.Collections.sort(expired);
    LOG.info("Expired {} snapshots of table {} and deleted {} files only they referenced", expired.size(),
        table.name(), deleted.size());
    return new Result(expired, deleted.size());
  }

  private static ExpireSnapshots configure(Table table, Instant olderThan, int retainLast,
      Map<String, Long> protectedBy) {
    if (retainLast < 1) {
      throw new IllegalArgumentException(String.format("Invalid snapshots to retain: %s (must be >= 1)", retainLast));
    }
    return table.expireSnapshots()
        .expireOlderThan(cutoff(table, olderThan, protectedBy).toEpochMilli())
        .retainLast(retainLast);
  }

  /**
   * {@code olderThan}, lowered to the time of the newest snapshot of each job that has no watermark property, so
   * that the main branch's history down to it stays walkable.
   */
  static Instant cutoff(Table table, Instant olderThan, Map<String, Long> protectedBy) {
    long cutoff = olderThan.toEpochMilli();
    Snapshot head = table.currentSnapshot();
    if (head == null) {
      return olderThan;
    }
    Set<String> seen = new HashSet<>();
    for (Snapshot snapshot : SnapshotUtil.ancestorsOf(head.snapshotId(), table::snapshot)) {
      String job = snapshot.summary() == null ? null : snapshot.summary().get(CommitId.JOB_ID_KEY);
      if (job == null || !seen.add(job)) {
        continue; // not a checkpoint commit, or not the job's newest
      }
      if (Watermarks.parse(table.properties(), JobId.of(job)).isEmpty() && snapshot.timestampMillis() < cutoff) {
        cutoff = snapshot.timestampMillis();
        protectedBy.put(job, snapshot.snapshotId());
      }
    }
    return Instant.ofEpochMilli(cutoff);
  }
}
