package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.iceberg.CommitMetrics;
import dev.lakecommit.iceberg.Compaction;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.iceberg.MaintenanceLock;
import dev.lakecommit.iceberg.MaintenanceOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.TimeUnit;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sink's post-commit maintenance stage in a MiniCluster: jobs checkpoint every 100 ms (rows limited to a rate in
 * the source, so that a run spans many commits) with a round after every 3 commits; rows stay exact, every referenced file exists, the live data files and the snapshots
 * stay bounded while the commits pile up, and the job's watermark still numbers a new run's checkpoints after
 * expiry. A lease held by another maintainer makes the stage skip its rounds.
 */
class FlinkMaintenanceIT {
  @RegisterExtension
  static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
      new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
          .build());

  /** Commits and files committed per table, counted by the sinks' commit metrics (same JVM). */
  static final Map<String, AtomicLong> COMMITS = new ConcurrentHashMap<>();
  static final Map<String, AtomicLong> FILES = new ConcurrentHashMap<>();
  static final Map<String, AtomicLong> LAST_CHECKPOINT = new ConcurrentHashMap<>();

  @TempDir
  static Path dir;

  private static final int EVERY = 3;
  private static final int RETAIN = 3;
  private static final int PARALLELISM = 2;

  static IcebergSinkConfig config(String warehouse, String table) {
    return IcebergSinkConfig.builder()
        .catalogProperties(Map.of("type", "hadoop", "warehouse", warehouse))
        .table(table)
        .createTable(TestJobs.SCHEMA, List.of("part"))
        .tableProperties(Map.of("format-version", "2"))
        .metrics(new Counting(table))
        .build();
  }

  static LakecommitFlinkSink sink(String warehouse, String table, MaintenanceOptions options) {
    return LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE)
        .iceberg(() -> config(warehouse, table))
        .jobName("maintained")
        .maintenance(EVERY, options)
        .build();
  }

  static MaintenanceOptions options() {
    return MaintenanceOptions.builder().keepCheckpoints(EVERY).minSmallManifests(2).expire(RETAIN, Duration.ZERO)
        .leaseDuration(Duration.ofMinutes(1)).build();
  }

  /**
   * One run writing ids {@code [from, from + rows)} in about {@code seconds} (rate-limited in the source, so that
   * it spans many checkpoints), then cancelled once the table holds {@code expected} (what earlier runs wrote and
   * this one's ids); returns when the job is terminal, its maintenance operator closed (a running round finished).
   */
  static void run(String warehouse, String table, long from, long rows, double seconds, MaintenanceOptions options,
      Set<Long> expected) throws Exception {
    StreamExecutionEnvironment env = TestJobs.environment(PARALLELISM, 0);
    env.enableCheckpointing(100);
    TestJobs.unboundedRows(env, table + "-" + from, rows, rows / seconds, PARALLELISM)
        .map(row -> (org.apache.flink.table.data.RowData) org.apache.flink.table.data.GenericRowData.of(
            row.getLong(0) + from, row.getString(1), row.getString(2))).uid("offset")
        .returns(org.apache.flink.table.runtime.typeutils.InternalTypeInfo.of(TestJobs.ROW_TYPE))
        .sinkTo(sink(warehouse, table, options)).uid("lakecommit-sink");
    JobClient job = env.executeAsync(table + "-" + from);
    try {
      IcebergFlinkSinkIT.awaitAll(warehouse, table, expected, Duration.ofMinutes(3),
          table + " from " + from);
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
      FlinkRunFencingIT.awaitTerminal(job, Duration.ofMinutes(2));
    }
  }

  @Test
  void manyCheckpointsWithMaintenanceStayExactAndBounded() throws Exception {
    String warehouse = dir.resolve("maintained").toString();
    String table = "db.maintained";
    long rows = TestScale.pick(6_000, 60_000);
    // 30 s: about 12 commits where a commit takes 2.5 s (measured at a load of 10 on 2 cores), 100+ otherwise.
    run(warehouse, table, 0, rows, 30, options(), TestJobs.range(0, rows));

    Table t = load(warehouse, table);
    TestJobs.Audit audit = IcebergFlinkSinkIT.audit(warehouse, table, TestJobs.range(0, rows));
    long commits = COMMITS.get(table).get();
    long filesCommitted = FILES.get(table).get();
    long liveFiles = liveDataFiles(t);
    long snapshots = count(t.snapshots());
    System.out.printf("FlinkMaintenanceIT: %d commits of %d files in all; now %d live data files, %d snapshots, "
        + "%d previous metadata files kept%n", commits, filesCommitted, liveFiles, snapshots,
        ((org.apache.iceberg.HasTableOperations) t).operations().current().previousFiles().size());
    assertThat(audit.duplicates()).as("%s", audit).isZero();
    assertThat(audit.losses()).as("%s", audit).isZero();
    assertThat(audit.rows()).isEqualTo(rows);
    assertThat(TestJobs.missingFiles(t)).isEmpty();
    assertThat(commits).as("checkpoint commits of the run").isGreaterThanOrEqualTo(3L * EVERY);
    // Bounded whatever the commit count: the newest RETAIN at the last round, and what committed since (a round is
    // due every EVERY commits; one may have been skipped while the one before still ran).
    assertThat(snapshots).as("snapshots after %s commits with expiry to the newest %s", commits, RETAIN)
        .isLessThanOrEqualTo(RETAIN + 2L * EVERY + 2).isLessThan(commits);
    assertThat(liveFiles).as("live data files after %s commits of %s files", commits, filesCommitted)
        .isLessThan(filesCommitted * 3 / 4);
    assertThat(t.properties()).as("the lease is released").doesNotContainKey(MaintenanceLock.PROPERTY);

    long watermark = Long.parseLong(t.properties().get(CommitId.WATERMARK_KEY_PREFIX + "db.maintained-maintained"));
    assertThat(watermark).as("the watermark after expiry").isEqualTo(LAST_CHECKPOINT.get(table).get());

    // A new run of the job: the watermark numbers its checkpoints above the first run's, history expired or not.
    long more = rows / 3;
    Set<Long> expected = new HashSet<>(TestJobs.range(0, rows));
    expected.addAll(TestJobs.range(1_000_000, more));
    run(warehouse, table, 1_000_000, more, 3, options(), expected);
    TestJobs.Audit after = IcebergFlinkSinkIT.audit(warehouse, table, expected);
    assertThat(after.duplicates()).as("%s", after).isZero();
    assertThat(after.losses()).as("%s", after).isZero();
    Table second = load(warehouse, table);
    long next = Long.parseLong(second.properties().get(CommitId.WATERMARK_KEY_PREFIX + "db.maintained-maintained"));
    assertThat(next).as("the second run's checkpoints continue above the first's").isGreaterThan(watermark);
    assertThat(TestJobs.missingFiles(second)).isEmpty();
  }

  @Test
  void aLeaseHeldElsewhereMakesTheStageSkipItsRounds() throws Exception {
    String warehouse = dir.resolve("leased").toString();
    String table = "db.leased";
    run(warehouse, table, 0, 300, 1, options(), TestJobs.range(0, 300)); // creates the table
    Set<Long> before = new HashSet<>();
    load(warehouse, table).snapshots().forEach(snapshot -> before.add(snapshot.snapshotId()));
    MaintenanceLock lock = MaintenanceLock.of(catalog(warehouse), TableIdentifier.parse(table),
        Duration.ofMinutes(10));
    MaintenanceLock.Lease other = lock.tryAcquire("another maintainer").orElseThrow();
    long commitsBefore = COMMITS.get(table).get();
    try {
      long rows = TestScale.pick(2_000, 10_000);
      Set<Long> expected = new HashSet<>(TestJobs.range(0, 300));
      expected.addAll(TestJobs.range(1_000_000, rows));
      run(warehouse, table, 1_000_000, rows, 8, options(), expected);
    } finally {
      assertThat(lock.holder()).contains(other.holder());
      other.close();
    }
    Table after = load(warehouse, table);
    long commits = COMMITS.get(table).get() - commitsBefore;
    assertThat(commits).as("commits of the second run").isGreaterThanOrEqualTo(EVERY);
    Set<Long> now = new HashSet<>();
    for (Snapshot snapshot : after.snapshots()) {
      now.add(snapshot.snapshotId());
      if (!before.contains(snapshot.snapshotId())) {
        assertThat(snapshot.summary()).as("snapshot %s, made while the lease was held elsewhere",
            snapshot.snapshotId()).doesNotContainKey(Compaction.MAINTENANCE_KEY);
      }
    }
    assertThat(now).as("nothing expired while the lease was held elsewhere").containsAll(before)
        .hasSize(before.size() + (int) commits);
  }

  private static org.apache.iceberg.catalog.Catalog catalog(String warehouse) {
    return CatalogUtil.buildIcebergCatalog("check", Map.of("type", "hadoop", "warehouse", warehouse),
        new org.apache.hadoop.conf.Configuration());
  }

  private static Table load(String warehouse, String table) {
    return catalog(warehouse).loadTable(TableIdentifier.parse(table));
  }

  private static long liveDataFiles(Table table) {
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      long n = 0;
      for (FileScanTask ignored : tasks) {
        n++;
      }
      return n;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static long count(Iterable<?> items) {
    long n = 0;
    for (Object ignored : items) {
      n++;
    }
    return n;
  }

  /** Counts commits per table in static maps (the MiniCluster runs in this JVM). */
  private static final class Counting implements CommitMetrics, java.io.Serializable {
    private final String table;

    Counting(String table) {
      this.table = table;
    }

    @Override
    public void committed(CommitId id, long snapshotId, long durationNanos, int attempts, int conflicts, int files,
        long records, long bytes) {
      COMMITS.computeIfAbsent(table, k -> new AtomicLong()).incrementAndGet();
      FILES.computeIfAbsent(table, k -> new AtomicLong()).addAndGet(files);
      LAST_CHECKPOINT.computeIfAbsent(table, k -> new AtomicLong()).accumulateAndGet(id.checkpointId(), Math::max);
    }
  }
}
