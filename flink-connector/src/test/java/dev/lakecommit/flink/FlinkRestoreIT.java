package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.staging.StagingWriterState;
import java.io.File;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.ExceptionUtils;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 14 in a MiniCluster, what a restore of a Flink job checks and cleans (DESIGN.md rules 11 and 13): a restore
 * against a table dropped and created again stops; a restored pending commit whose staged file is gone is never
 * committed; files that fenced runs staged for checkpoints nothing can commit any more are deleted at the next
 * start, while the new run's own files stay.
 */
class FlinkRestoreIT {
  private static final int PARALLELISM = 2;

  @RegisterExtension
  static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
      new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
          .build());

  @TempDir
  static Path dir;

  /**
   * Scenario 4 of issue 14 through Flink: the job is stopped with a savepoint, the table is dropped and created
   * again under its name, and the job is restored from the savepoint. Its state (pending commits, the aggregator's
   * offsets, the sources' positions) belongs to the old table: the restore fails with a message naming the table,
   * both identities and what to do, and the new table holds nothing of the old job.
   */
  @Test
  void aRestoreAgainstATableCreatedAgainFailsAndCommitsNothingToIt() throws Exception {
    String warehouse = dir.resolve("recreated").toString();
    String table = "db.recreated";
    String jobId = "db.recreated-recreated";
    long rows = 1_000_000;

    StreamExecutionEnvironment first = TestJobs.environment(PARALLELISM, 0);
    TestJobs.unboundedRows(first, "recreated-1", rows, 400, PARALLELISM)
        .sinkTo(IcebergFlinkSinkIT.sink(warehouse, table, "recreated")).uid("lakecommit-sink");
    JobClient job1 = first.executeAsync("recreated-1");
    String savepoint;
    try {
      FlinkRunFencingIT.awaitWatermark(warehouse, table, jobId, 2, Duration.ofMinutes(2));
    } finally {
      savepoint = job1.stopWithSavepoint(false, dir.resolve("savepoints").toUri().toString(),
          SavepointFormatType.CANONICAL).get(2, TimeUnit.MINUTES);
    }
    String oldIdentity = "iceberg-table-uuid:" + IcebergFlinkSinkIT.load(warehouse, table).uuid();
    long oldWatermark = FlinkRunFencingIT.watermark(warehouse, table, jobId);

    Catalog catalog = catalog(warehouse);
    assertThat(catalog.dropTable(TableIdentifier.parse(table), true)).isTrue();
    catalog.createTable(TableIdentifier.parse(table), TestJobs.SCHEMA,
        PartitionSpec.builderFor(TestJobs.SCHEMA).identity("part").build(), Map.of("format-version", "2"));
    String newIdentity = "iceberg-table-uuid:" + IcebergFlinkSinkIT.load(warehouse, table).uuid();
    assertThat(newIdentity).isNotEqualTo(oldIdentity);
    System.out.printf("Recreated table test: old watermark %s, savepoint %s, %s -> %s%n", oldWatermark, savepoint,
        oldIdentity, newIdentity);

    StreamExecutionEnvironment second = TestJobs.environment(PARALLELISM, 0, savepoint);
    TestJobs.unboundedRows(second, "recreated-2", rows, 400, PARALLELISM)
        .sinkTo(IcebergFlinkSinkIT.sink(warehouse, table, "recreated")).uid("lakecommit-sink");
    assertThat(failureOf(second.executeAsync("recreated-2"), Duration.ofMinutes(2)))
            .contains("was made for another table than " + table + " is now (identity " + oldIdentity + ", now "
                + newIdentity + "; was the table dropped and created again?)")
            .contains("start the job without this savepoint or checkpoint");

    Table recreated = IcebergFlinkSinkIT.load(warehouse, table);
    assertThat(recreated.currentSnapshot()).as("a commit in the new table").isNull();
    assertThat(recreated.properties()).doesNotContainKey(CommitId.WATERMARK_KEY_PREFIX + jobId);
    assertThat(IcebergFlinkSinkIT.audit(warehouse, table, Set.of()).rows()).as("rows in the new table").isZero();
  }

  /**
   * A pending commit restored from Flink state whose staged files were deleted (by hand, a lifecycle rule, a
   * cleanup tool): run 1 is fenced by another claim on its job while it runs, so the commit of its last completed
   * checkpoint is refused and stays in the retained checkpoint; its staged files are then deleted. Restored from
   * that checkpoint, the job must not commit it (a snapshot without its files): it fails naming the file, and the
   * table is as run 1 left it, every file it references there.
   */
  @Test
  void aRestoredPendingCommitWhoseStagedFilesAreGoneIsNotCommitted() throws Exception {
    String warehouse = dir.resolve("missing").toString();
    String table = "db.missing";
    String jobId = "db.missing-missing";
    Path checkpoints = dir.resolve("missing-checkpoints");
    long rows = 1_000_000;

    StreamExecutionEnvironment first = TestJobs.environment(PARALLELISM, 0, null, retainedIn(checkpoints));
    TestJobs.unboundedRows(first, "missing-1", rows, 400, PARALLELISM)
        .sinkTo(IcebergFlinkSinkIT.sink(warehouse, table, "missing")).uid("lakecommit-sink");
    JobClient job1 = first.executeAsync("missing-1");
    try {
      FlinkRunFencingIT.awaitWatermark(warehouse, table, jobId, 2, Duration.ofMinutes(2));
      // Another run of the job claims it: run 1's next commit is refused and the job fails with it pending.
      TestJobs.claimEpoch(SinkRecipe.iceberg(() -> IcebergFlinkSinkIT.config(warehouse, table)), JobId.of(jobId),
          "FlinkRestoreIT");
      assertThat(FlinkRunFencingIT.awaitTerminal(job1, Duration.ofMinutes(2))).isEqualTo(JobStatus.FAILED);
    } finally {
      if (!job1.getJobStatus().get(1, TimeUnit.MINUTES).isGloballyTerminalState()) {
        job1.cancel().get(1, TimeUnit.MINUTES);
      }
    }
    Table before = IcebergFlinkSinkIT.load(warehouse, table);
    long committed = FlinkRunFencingIT.watermark(warehouse, table, jobId);
    long snapshot = before.currentSnapshot().snapshotId();
    List<Long> committedIds = FlinkRunFencingIT.ids(before);
    String retained = latestCheckpoint(checkpoints);

    List<String> pending;
    try (CommitTarget target = openTarget(warehouse, table)) {
      pending = target.listStaged(JobId.of(jobId), committed, 1, 1);
      assertThat(pending).as("files of run 1's pending commits, above checkpoint %s", committed).isNotEmpty();
      assertThat(target.deleteStaged(JobId.of(jobId), committed, 1, 1)).isEqualTo(pending.size());
    }
    System.out.printf("Missing staged files test: watermark %s, %s staged files deleted, restoring %s%n", committed,
        pending.size(), retained);

    StreamExecutionEnvironment second = TestJobs.environment(PARALLELISM, 0, retained);
    TestJobs.unboundedRows(second, "missing-2", rows, 400, PARALLELISM)
        .sinkTo(IcebergFlinkSinkIT.sink(warehouse, table, "missing")).uid("lakecommit-sink");
    assertThat(failureOf(second.executeAsync("missing-2"), Duration.ofMinutes(2)))
            .containsPattern("Pending commit checkpoint \\d+ of job " + jobId.replace(".", "\\.")
                + " \\(Flink checkpoint \\d+\\) restored from Flink checkpoint \\d+ is not in table "
                + table.replace(".", "\\.") + ", and its staged file \\S+ no longer exists")
            .contains("Nothing was committed");

    Table after = IcebergFlinkSinkIT.load(warehouse, table);
    assertThat(after.currentSnapshot().snapshotId()).as("nothing committed by the restored job").isEqualTo(snapshot);
    assertThat(FlinkRunFencingIT.watermark(warehouse, table, jobId)).isEqualTo(committed);
    assertThat(TestJobs.missingFiles(after)).as("files referenced by snapshots but deleted").isEmpty();
    assertThat(FlinkRunFencingIT.ids(after)).containsExactlyInAnyOrderElementsOf(committedIds);
  }

  /**
   * Run 1 stops with a savepoint; files that a run 1 writer staged and reported for a checkpoint after it that
   * never completed (its TaskManager died, say) are left above the table's watermark. Run 2, restored from the
   * savepoint, deletes them when it starts — run 1 is fenced and nothing can commit them — while its own files,
   * staged and committed from then on, all stay: every input row once, none of the orphans' rows.
   */
  @Test
  void aRestoreDeletesFencedRunsOrphansAndKeepsItsOwnFiles() throws Exception {
    String warehouse = dir.resolve("orphans").toString();
    String table = "db.orphans";
    String jobId = "db.orphans-orphans";
    long rows = 4_000;
    double rate = 600;
    Set<Long> expected = TestJobs.range(0, rows);

    StreamExecutionEnvironment first = TestJobs.environment(PARALLELISM, 0);
    TestJobs.unboundedRows(first, "orphans-1", rows, rate, PARALLELISM)
        .sinkTo(IcebergFlinkSinkIT.sink(warehouse, table, "orphans")).uid("lakecommit-sink");
    JobClient job1 = first.executeAsync("orphans-1");
    String savepoint;
    try {
      FlinkRunFencingIT.awaitWatermark(warehouse, table, jobId, 2, Duration.ofMinutes(2));
    } finally {
      savepoint = job1.stopWithSavepoint(false, dir.resolve("savepoints").toUri().toString(),
          SavepointFormatType.CANONICAL).get(2, TimeUnit.MINUTES);
    }
    // The savepoint's own commit is made when Flink notifies its completion, which may come after the savepoint.
    assertThat(FlinkRunFencingIT.awaitTerminal(job1, Duration.ofMinutes(1))).isEqualTo(JobStatus.FINISHED);
    long committed = FlinkRunFencingIT.watermark(warehouse, table, jobId);
    long epoch1 = epoch(warehouse, table, jobId);
    assertThat(IcebergFlinkSinkIT.audit(warehouse, table, expected).losses()).as("run 1 stopped part-way")
        .isPositive();

    // Files of a run 1 writer that went on after the savepoint (say, a copy triggered with triggerSavepoint) and
    // died before its next commits: staged and reported for Flink checkpoint committed + 3, never committed. (Files
    // named after the savepoint's own checkpoints are the restored state's and stay.)
    SinkRecipe recipe = SinkRecipe.iceberg(() -> IcebergFlinkSinkIT.config(warehouse, table));
    long flinkCheckpoint = committed + 2;
    LakecommitWriter writer = LakecommitWriter.open(recipe, TestJobs.ROW_TYPE, JobId.of(jobId), epoch1,
        RunEpochTest.context(1, PARALLELISM, 0, OptionalLong.of(flinkCheckpoint)),
        List.of(new WriterState(0, flinkCheckpoint, new StagingWriterState(1, flinkCheckpoint))));
    for (long id = 50_000_000; id < 50_000_100; id++) {
      writer.write(GenericRowData.of(id, StringData.fromString(TestJobs.partitionOf(id)),
          StringData.fromString("orphan-" + id)), null);
    }
    assertThat(writer.prepareCommit()).isNotEmpty();
    writer.close();
    List<String> orphans;
    try (CommitTarget target = openTarget(warehouse, table)) {
      orphans = target.listStaged(JobId.of(jobId), committed, epoch1, epoch1);
    }
    assertThat(orphans).as("run 1's orphans above checkpoint %s", committed).isNotEmpty()
        .allSatisfy(path -> assertThat(exists(warehouse, table, path)).isTrue())
        .allSatisfy(path -> assertThat(path).contains("/ckpt-" + (committed + 3) + "/"));

    StreamExecutionEnvironment second = TestJobs.environment(PARALLELISM, 0, savepoint);
    TestJobs.unboundedRows(second, "orphans-2", rows, rate, PARALLELISM)
        .sinkTo(IcebergFlinkSinkIT.sink(warehouse, table, "orphans")).uid("lakecommit-sink");
    JobClient job2 = second.executeAsync("orphans-2");
    try {
      awaitAll(warehouse, table, expected, Duration.ofMinutes(2));
    } finally {
      job2.cancel().get(1, TimeUnit.MINUTES);
    }
    assertThat(epoch(warehouse, table, jobId)).isGreaterThan(epoch1);
    assertThat(orphans).as("run 1's orphans after run 2 started")
        .allSatisfy(path -> assertThat(exists(warehouse, table, path)).as(path).isFalse());
    Table t = IcebergFlinkSinkIT.load(warehouse, table);
    assertThat(TestJobs.missingFiles(t)).as("files referenced by snapshots but deleted").isEmpty();
    TestJobs.Audit audit = IcebergFlinkSinkIT.audit(warehouse, table, expected);
    assertThat(audit.duplicates()).as("duplicates: %s", audit).isZero();
    assertThat(audit.losses()).as("losses: %s", audit).isZero();
    assertThat(audit.rows()).isEqualTo(rows);
  }

  /** Checkpoints to {@code dir}, kept when the job fails or is cancelled. */
  private static org.apache.flink.configuration.Configuration retainedIn(Path dir) {
    org.apache.flink.configuration.Configuration conf = new org.apache.flink.configuration.Configuration();
    conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
    conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, dir.toUri().toString());
    conf.set(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
    return conf;
  }

  /** The newest completed checkpoint under {@code dir} (of the one job that wrote there). */
  private static String latestCheckpoint(Path dir) {
    List<File> completed = new ArrayList<>();
    for (File job : dir.toFile().listFiles(File::isDirectory)) {
      for (File chk : job.listFiles(f -> f.getName().startsWith("chk-"))) {
        if (new File(chk, "_metadata").exists()) {
          completed.add(chk);
        }
      }
    }
    assertThat(completed).as("retained checkpoints in %s", dir).isNotEmpty();
    completed.sort(Comparator.comparingLong(f -> Long.parseLong(f.getName().substring(4))));
    return completed.get(completed.size() - 1).toURI().toString();
  }

  private static Catalog catalog(String warehouse) {
    return CatalogUtil.buildIcebergCatalog("check", Map.of("type", "hadoop", "warehouse", warehouse),
        new org.apache.hadoop.conf.Configuration());
  }

  private static CommitTarget openTarget(String warehouse, String table) throws Exception {
    return SinkRecipe.iceberg(() -> IcebergFlinkSinkIT.config(warehouse, table)).open(TestJobs.ROW_TYPE).targets()
        .openTarget();
  }

  private static boolean exists(String warehouse, String table, String path) {
    return IcebergFlinkSinkIT.load(warehouse, table).io().newInputFile(path).exists();
  }

  private static long epoch(String warehouse, String table, String jobId) {
    String value = IcebergFlinkSinkIT.load(warehouse, table).properties().get(RunEpoch.EPOCH_KEY_PREFIX + jobId);
    return value == null ? 0 : RunEpoch.parse(JobId.of(jobId), value).epoch();
  }

  /** Polls (bounded) until the table holds every expected id. */
  private static void awaitAll(String warehouse, String table, Set<Long> expected, Duration timeout)
      throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    TestJobs.Audit audit = null;
    while (System.nanoTime() < deadline) {
      audit = IcebergFlinkSinkIT.audit(warehouse, table, expected);
      if (audit.losses() == 0) {
        return;
      }
      Thread.sleep(250);
    }
    throw new AssertionError("Not all rows committed within " + timeout + ": " + audit);
  }

  /**
   * Waits (bounded) for the job to end, which must be a failure (a job that goes on is cancelled and the test
   * fails); returns the failure with its causes as text.
   */
  static String failureOf(JobClient job, Duration timeout) throws Exception {
    JobStatus status;
    try {
      status = FlinkRunFencingIT.awaitTerminal(job, timeout);
    } catch (AssertionError stillRunning) {
      job.cancel().get(1, TimeUnit.MINUTES);
      throw stillRunning;
    }
    assertThat(status).as("the restored job").isEqualTo(JobStatus.FAILED);
    try {
      job.getJobExecutionResult().get(1, TimeUnit.MINUTES);
    } catch (java.util.concurrent.ExecutionException e) {
      return ExceptionUtils.stringifyException(e);
    }
    throw new AssertionError("Job " + job.getJobID() + " failed without a failure");
  }
}
