package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.RunEpoch;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.ExceptionUtils;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 14 in a MiniCluster: runs of one Flink job (same Lakecommit job id) that overlap or go back in time.
 * A restore from a savepoint older than what the table holds is refused without touching a committed file, and of
 * two copies of a job running at once, the older is fenced and the table ends exact.
 */
class FlinkRunFencingIT {
  private static final int PARALLELISM = 2;

  @RegisterExtension
  static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
      new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
          .build());

  @TempDir
  static Path dir;

  /**
   * Scenario 2 of issue 14: job 1 commits, a savepoint is taken, job 1 goes on committing and is cancelled; a new
   * job restored from the old savepoint names its files after the checkpoint that follows the savepoint, with
   * attempt numbers from 0 again — the checkpoint, writers and attempts of files job 1 committed. It is refused,
   * and every row job 1 committed can still be read: every file every snapshot references exists.
   */
  @Test
  void aRestoreFromAnOlderSavepointIsRefusedAndDeletesNothingCommitted() throws Exception {
    String warehouse = dir.resolve("old-savepoint").toString();
    String table = "db.old_savepoint";
    long rows = 1_000_000;

    StreamExecutionEnvironment first = TestJobs.environment(PARALLELISM, 0);
    TestJobs.unboundedRows(first, "old-savepoint-1", rows, 400, PARALLELISM)
        .sinkTo(IcebergFlinkSinkIT.sink(warehouse, table, "old-savepoint")).uid("lakecommit-sink");
    JobClient job1 = first.executeAsync("old-savepoint-1");
    String jobId = "db.old_savepoint-old-savepoint";
    String savepoint;
    long atSavepoint;
    try {
      awaitWatermark(warehouse, table, jobId, 2, Duration.ofMinutes(2));
      savepoint = job1.triggerSavepoint(dir.resolve("savepoints").toUri().toString(), SavepointFormatType.CANONICAL)
          .get(2, TimeUnit.MINUTES);
      atSavepoint = watermark(warehouse, table, jobId);
      // Job 1 goes on: the checkpoints after the savepoint are committed too.
      awaitWatermark(warehouse, table, jobId, atSavepoint + 3, Duration.ofMinutes(2));
    } finally {
      job1.cancel().get(1, TimeUnit.MINUTES);
    }
    awaitTerminal(job1, Duration.ofMinutes(1));

    Table before = IcebergFlinkSinkIT.load(warehouse, table);
    long committed = watermark(warehouse, table, jobId);
    long snapshot = before.currentSnapshot().snapshotId();
    List<Long> committedIds = ids(before);
    long epochOfJob1 = epoch(before, jobId);
    assertThat(committedIds).isNotEmpty();
    assertThat(committed).as("job 1 committed past the savepoint").isGreaterThan(atSavepoint);
    System.out.printf("Old savepoint test: %s rows, watermark %s (at the savepoint <= %s), savepoint %s%n",
        committedIds.size(), committed, atSavepoint, savepoint);

    // Restarts: every attempt restores the old savepoint again and is refused again, each time after its writers
    // had rows to stage under the names job 1 committed (with its own epoch and attempt they differ).
    // The aggregator refuses the restore when it opens, which can be before any source has emitted a row: its
    // config supplier (called on the aggregator's task thread) waits until a writer has seen rows, so that every
    // run of this test covers writers staging under the committed names.
    StreamExecutionEnvironment second = TestJobs.environment(PARALLELISM, 2, savepoint);
    TestJobs.unboundedRows(second, "old-savepoint-2", rows, 400, PARALLELISM)
        .sinkTo(LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE)
            .iceberg(() -> {
              if (Thread.currentThread().getName().contains("Lakecommit aggregator")) {
                awaitRows("old-savepoint-2", Duration.ofMinutes(2));
              }
              return IcebergFlinkSinkIT.config(warehouse, table);
            })
            .jobName("old-savepoint")
            .build())
        .uid("lakecommit-sink");
    assertThatThrownBy(() -> second.execute("old-savepoint-2"))
        .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e))
            .contains("Table " + table + " already holds checkpoint " + committed + " of job " + jobId)
            .contains("newer than the restored Flink state"));
    assertThat(TestJobs.FINISHED.get("old-savepoint-2"))
        .as("the restored job's writers had rows to stage before it was refused").isNotEmpty();

    Table after = IcebergFlinkSinkIT.load(warehouse, table);
    assertThat(epoch(after, jobId)).as("the restored job claimed its own epoch").isGreaterThan(epochOfJob1);
    assertThat(after.currentSnapshot().snapshotId()).as("nothing committed by the refused job").isEqualTo(snapshot);
    assertThat(watermark(warehouse, table, jobId)).isEqualTo(committed);
    assertThat(TestJobs.missingFiles(after)).as("files referenced by snapshots but deleted").isEmpty();
    List<Long> readBack = ids(after);
    assertThat(readBack).as("every row job 1 committed, read back").hasSameSizeAs(committedIds)
        .containsExactlyInAnyOrderElementsOf(committedIds);
    assertThat(new HashSet<>(readBack)).as("no duplicates").hasSize(readBack.size());
  }

  /**
   * Two copies of the same job at once: copy A runs (unbounded); copy B is submitted with the same job id and
   * claims a newer epoch. A commits nothing more and fails with the fenced message; the table ends with exactly
   * A's rows from before B's claim plus all of B's rows.
   */
  @Test
  void aSecondCopyOfTheJobFencesTheFirst() throws Exception {
    String warehouse = dir.resolve("copies").toString();
    String table = "db.copies";
    String jobId = "db.copies-copies";
    long bFrom = 10_000_000;
    long bRows = 3_000;

    StreamExecutionEnvironment envA = TestJobs.environment(PARALLELISM, 0);
    TestJobs.unboundedRows(envA, "copy-a", 1_000_000, 400, PARALLELISM)
        .sinkTo(IcebergFlinkSinkIT.sink(warehouse, table, "copies")).uid("lakecommit-sink");
    JobClient copyA = envA.executeAsync("copy-a");
    List<Long> aRows;
    try {
      awaitWatermark(warehouse, table, jobId, 2, Duration.ofMinutes(2));

      StreamExecutionEnvironment envB = TestJobs.environment(PARALLELISM, 0);
      TestJobs.boundedRows(envB, "copy-b", bFrom, bRows, 1_000, PARALLELISM)
          .sinkTo(IcebergFlinkSinkIT.sink(warehouse, table, "copies")).uid("lakecommit-sink");
      JobClient copyB = envB.executeAsync("copy-b");
      // B's epoch is claimed before its submission returns: from here on nothing of A can land.
      aRows = ids(IcebergFlinkSinkIT.load(warehouse, table));
      assertThat(epoch(IcebergFlinkSinkIT.load(warehouse, table), jobId)).isEqualTo(2);

      copyB.getJobExecutionResult().get(3, TimeUnit.MINUTES);
      JobStatus status = awaitTerminal(copyA, Duration.ofMinutes(2));
      assertThat(status).as("copy A after copy B claimed the job").isEqualTo(JobStatus.FAILED);
      assertThatThrownBy(() -> copyA.getJobExecutionResult().get(1, TimeUnit.MINUTES))
          .isInstanceOf(ExecutionException.class)
          .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e))
              .contains("Run epoch 1 of job " + jobId + " is fenced")
              .contains("a newer run of the same job holds epoch 2"));
    } finally {
      if (!copyA.getJobStatus().get(1, TimeUnit.MINUTES).isGloballyTerminalState()) {
        copyA.cancel().get(1, TimeUnit.MINUTES);
      }
    }

    Table t = IcebergFlinkSinkIT.load(warehouse, table);
    List<Long> all = ids(t);
    List<Long> aAfter = all.stream().filter(id -> id < bFrom).toList();
    assertThat(aAfter).as("copy A's rows: what it had committed before copy B's claim, nothing more")
        .containsExactlyInAnyOrderElementsOf(aRows);
    Set<Long> expected = new HashSet<>(aRows);
    expected.addAll(TestJobs.range(bFrom, bRows));
    TestJobs.Audit audit = IcebergFlinkSinkIT.audit(warehouse, table, expected);
    assertThat(audit.duplicates()).as("duplicates: %s", audit).isZero();
    assertThat(audit.losses()).as("losses: %s", audit).isZero();
    assertThat(TestJobs.missingFiles(t)).isEmpty();
  }

  static List<Long> ids(Table table) throws Exception {
    List<Long> ids = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      records.forEach(r -> ids.add((Long) r.getField("id")));
    }
    return ids;
  }

  private static long epoch(Table table, String jobId) {
    String value = table.properties().get(RunEpoch.EPOCH_KEY_PREFIX + jobId);
    return value == null ? 0 : RunEpoch.parse(dev.lakecommit.core.JobId.of(jobId), value).epoch();
  }

  static long watermark(String warehouse, String table, String jobId) {
    String value = IcebergFlinkSinkIT.load(warehouse, table).properties()
        .get(CommitId.WATERMARK_KEY_PREFIX + jobId);
    return value == null ? 0 : Long.parseLong(value);
  }

  /** Polls (bounded) until the job's watermark in the table reaches {@code min}. */
  static void awaitWatermark(String warehouse, String table, String jobId, long min, Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    long seen = 0;
    while (System.nanoTime() < deadline) {
      try {
        seen = watermark(warehouse, table, jobId);
      } catch (org.apache.iceberg.exceptions.NoSuchTableException e) {
        seen = 0;
      }
      if (seen >= min) {
        return;
      }
      Thread.sleep(100);   // polling interval of a bounded wait for a condition, not synchronisation
    }
    throw new AssertionError("Job " + jobId + " did not commit checkpoint " + min + " to " + table + " within "
        + timeout + " (watermark " + seen + ")");
  }

  /** Polls (bounded) until a map subtask of {@code run} has seen a row (see {@link TestJobs#FINISHED}). */
  private static void awaitRows(String run, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (TestJobs.FINISHED.getOrDefault(run, java.util.Map.of()).isEmpty()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("No writer of " + run + " saw a row within " + timeout);
      }
      try {
        Thread.sleep(20);   // polling interval of a bounded wait for a condition
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("Interrupted while waiting for rows of " + run, e);
      }
    }
  }

  /** Polls (bounded) until the job is in a globally terminal state; returns it. */
  static JobStatus awaitTerminal(JobClient job, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    JobStatus status = null;
    while (System.nanoTime() < deadline) {
      status = job.getJobStatus().get(1, TimeUnit.MINUTES);
      if (status.isGloballyTerminalState()) {
        return status;
      }
      Thread.sleep(100);   // polling interval of a bounded wait for a condition
    }
    throw new AssertionError("Job " + job.getJobID() + " still " + status + " after " + timeout);
  }
}
