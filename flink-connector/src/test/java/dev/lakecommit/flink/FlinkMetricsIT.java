package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sink's Flink metrics as a reporter configured in the cluster sees them (Flink's reporter factory mechanism),
 * checked against the table: one job with a forced failover right after a commit, so that the restored commit is
 * a replay.
 */
class FlinkMetricsIT {
  @RegisterExtension
  static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
      new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
          .setConfiguration(RecordingReporter.addTo(new Configuration(), "recording")).build());

  private static final String TABLE = "db.metrics";
  private static final String JOB_ID = "db.metrics-metrics";

  @TempDir
  static Path dir;

  /**
   * Fails its task once in this JVM: in the snapshot of Flink checkpoint 3, once the table holds the commit of
   * checkpoint 2 (waited for, bounded: commits take seconds on a loaded machine). Checkpoint 3 then fails, so the
   * job restores checkpoint 2, whose commit is in the restored committer state and already in the table: a
   * replay, every time.
   */
  static final class FailAfterCommit extends RichMapFunction<RowData, RowData> implements CheckpointedFunction {
    static final AtomicInteger THROWN = new AtomicInteger();
    private static final long CHECKPOINT = 3;
    private final String warehouse;

    FailAfterCommit(String warehouse) {
      this.warehouse = warehouse;
    }

    @Override
    public RowData map(RowData row) {
      return row;
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) throws InterruptedException {
      if (context.getCheckpointId() != CHECKPOINT || THROWN.get() != 0
          || getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() != 0) {
        return;
      }
      long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
      while (committed() < CHECKPOINT - 1) {
        if (System.nanoTime() > deadline) {
          return;   // the test's assertion on THROWN then fails
        }
        Thread.sleep(50);   // polling the table for the commit, bounded
      }
      THROWN.incrementAndGet();
      throw new IllegalStateException("Injected failure in checkpoint " + CHECKPOINT + " after the commit of "
          + (CHECKPOINT - 1) + " of " + JOB_ID);
    }

    @Override
    public void initializeState(FunctionInitializationContext context) {}

    private long committed() {
      if (!IcebergFlinkSinkIT.tableExists(warehouse, TABLE)) {
        return 0;
      }
      String watermark = IcebergFlinkSinkIT.load(warehouse, TABLE).properties()
          .get(CommitId.WATERMARK_KEY_PREFIX + JOB_ID);
      return watermark == null ? 0 : Long.parseLong(watermark);
    }
  }

  private static JobClient submit(String warehouse, long rows) throws Exception {
    StreamExecutionEnvironment env = TestJobs.environment(2, 5);
    env.getCheckpointConfig().setTolerableCheckpointFailureNumber(0);
    TestJobs.unboundedRows(env, rows, 1_000, 2)
        .map(new FailAfterCommit(warehouse)).uid("fail-after-commit")
        .returns(InternalTypeInfo.of(TestJobs.ROW_TYPE))
        .sinkTo(IcebergFlinkSinkIT.sink(warehouse, TABLE, "metrics")).uid("lakecommit-sink");
    return env.executeAsync("metrics");
  }

  @Test
  void committerMetricsMatchTheTableAcrossAFailover() throws Exception {
    String warehouse = dir.resolve("metrics").toString();
    long rows = 4_000;
    Set<Long> expected = TestJobs.range(0, rows);
    RecordingReporter.METRICS.clear();

    JobClient job = submit(warehouse, rows);
    try {
      IcebergFlinkSinkIT.awaitAll(warehouse, TABLE, expected, Duration.ofMinutes(2), "metrics job");
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
    assertThat(FailAfterCommit.THROWN.get()).as("the failover was forced").isOne();

    TestJobs.Audit audit = IcebergFlinkSinkIT.audit(warehouse, TABLE, expected);
    assertThat(audit.duplicates()).isZero();
    assertThat(audit.losses()).isZero();
    Table table = IcebergFlinkSinkIT.load(warehouse, TABLE);
    long snapshots = 0;
    for (Snapshot snapshot : table.snapshots()) {
      if (JOB_ID.equals(snapshot.summary().get(CommitId.JOB_ID_KEY))) {
        snapshots++;
      }
    }
    long files = 0;
    long bytes = 0;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        files++;
        bytes += task.file().fileSizeInBytes();
      }
    }
    long committedRecords = RecordingReporter.sum("committedRecords", null);
    long committedCheckpoints = RecordingReporter.sum("committedCheckpoints", null);
    long replays = RecordingReporter.sum("replaysSkipped", null);
    long latencies = RecordingReporter.lakecommit("commitLatencyMs").stream()
        .mapToLong(m -> m.histogram().getCount()).sum();
    System.out.printf("FlinkMetricsIT: committedCheckpoints=%d (snapshots %d) committedRecords=%d (rows %d)"
            + " committedFiles=%d (files %d) committedBytes=%d (bytes %d) replaysSkipped=%d"
            + " commitRetries=%d latencies=%d%n", committedCheckpoints, snapshots, committedRecords, audit.rows(),
        RecordingReporter.sum("committedFiles", null), files, RecordingReporter.sum("committedBytes", null), bytes,
        replays, RecordingReporter.sum("commitRetries", null), latencies);

    assertThat(RecordingReporter.lakecommit("committedRecords")).as("registered by every committer subtask of"
        + " every task attempt").hasSizeGreaterThanOrEqualTo(2 * 2);
    assertThat(committedRecords).as("committed records = rows read back").isEqualTo(audit.rows()).isEqualTo(rows);
    assertThat(committedCheckpoints).as("one per snapshot of the job").isEqualTo(snapshots);
    assertThat(RecordingReporter.sum("committedFiles", null)).as("committed files").isEqualTo(files);
    assertThat(RecordingReporter.sum("committedBytes", null)).as("committed bytes").isEqualTo(bytes);
    assertThat(latencies).as("one latency per committed checkpoint").isEqualTo(committedCheckpoints);
    assertThat(RecordingReporter.lakecommit("commitLatencyMs")).allSatisfy(m ->
        assertThat(m.histogram().getStatistics().getMin()).isGreaterThanOrEqualTo(0));
    assertThat(replays).as("the commit of the restored checkpoint, handed over again after the failover")
        .isPositive();
    List<RecordingReporter.Registered> pending = RecordingReporter.lakecommit("pendingCheckpoints").stream()
        .filter(m -> "0".equals(m.subtask())).toList();
    assertThat(pending.get(pending.size() - 1).value()).as("nothing pending once every row is in").isEqualTo(0);
    assertThat(RecordingReporter.lakecommit("lastCommitDurationMs").stream().map(m -> (Long) m.value()))
        .as("some committer made commits").anyMatch(ms -> ms >= 0);
  }
}
