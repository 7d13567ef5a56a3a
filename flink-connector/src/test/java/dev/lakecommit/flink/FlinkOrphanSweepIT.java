package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SupportsTarget;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files staged for a checkpoint that never completed are deleted while the job runs. A slow operator beside the
 * sink holds the snapshot of one checkpoint past the checkpoint timeout, after the writers reported their files
 * for it and the aggregator combined them: the checkpoint times out, the job fails over to the checkpoint before,
 * and those files are referenced by nothing. Once the first checkpoint after the failover completes, the
 * aggregator deletes them; counted by listing the staging location at the end.
 */
class FlinkOrphanSweepIT {
  @RegisterExtension
  static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
      new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
          .setConfiguration(RecordingReporter.addTo(new Configuration(), "recording")).build());

  private static final String TABLE = "db.orphans";
  private static final String JOB_ID = "db.orphans-orphans";

  @TempDir
  static Path dir;

  /**
   * Holds the snapshot of the first checkpoint after the table has a commit of the job (so that the writers have
   * reported files for it) until the task is cancelled by the failover that the checkpoint's timeout causes; once
   * in the test JVM; bounded, so that a test that goes wrong ends.
   */
  static final class StallOneCheckpoint extends RichMapFunction<RowData, RowData> implements CheckpointedFunction {
    static final AtomicLong STALLED = new AtomicLong();
    static final AtomicInteger LATER_ATTEMPTS = new AtomicInteger();
    private static final CountDownLatch NEVER = new CountDownLatch(1);
    private final String warehouse;

    StallOneCheckpoint(String warehouse) {
      this.warehouse = warehouse;
    }

    @Override
    public RowData map(RowData row) {
      return row;
    }

    @Override
    public void initializeState(FunctionInitializationContext context) {
      if (getRuntimeContext().getTaskInfo().getAttemptNumber() > 0) {
        LATER_ATTEMPTS.incrementAndGet();
      }
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) throws InterruptedException {
      if (STALLED.get() != 0 || committed() == 0) {
        return;
      }
      STALLED.set(context.getCheckpointId());
      // held until the failover cancels this task (the wait is the slow operator, not synchronisation)
      NEVER.await(2, TimeUnit.MINUTES);
    }

    private long committed() {
      if (!IcebergFlinkSinkIT.tableExists(warehouse, TABLE)) {
        return 0;
      }
      String watermark = IcebergFlinkSinkIT.load(warehouse, TABLE).properties()
          .get(CommitId.WATERMARK_KEY_PREFIX + JOB_ID);
      return watermark == null ? 0 : Long.parseLong(watermark);
    }
  }

  @Test
  void filesOfATimedOutCheckpointAreDeletedWhileTheJobRuns() throws Exception {
    String warehouse = dir.resolve("orphans").toString();
    // 8 s of rows at least: the stall (after the first commit) and the failover come while rows still arrive
    long rows = 8_000;
    Set<Long> expected = TestJobs.range(0, rows);

    // Other checkpoints may time out too on a loaded machine: each is one more failover and sweep.
    StreamExecutionEnvironment env = TestJobs.environment(2, 20);
    env.getCheckpointConfig().setCheckpointTimeout(8_000);
    env.getCheckpointConfig().setTolerableCheckpointFailureNumber(0);
    var source = TestJobs.unboundedRows(env, rows, 1_000, 2);
    source.sinkTo(IcebergFlinkSinkIT.sink(warehouse, TABLE, "orphans")).uid("lakecommit-sink");
    source.map(new StallOneCheckpoint(warehouse)).uid("slow").setParallelism(1)
        .returns(InternalTypeInfo.of(TestJobs.ROW_TYPE))
        .sinkTo(new DiscardingSink<>()).uid("discard").setParallelism(1);
    JobClient job = env.executeAsync("orphans");
    String flinkJob = job.getJobID().toString();
    long swept;
    try {
      IcebergFlinkSinkIT.awaitAll(warehouse, TABLE, expected, Duration.ofMinutes(2), "orphans job");
      // The sweep runs when the first checkpoint after the failover completes, beside that checkpoint's commit.
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while ((swept = RecordingReporter.sum("stagedOrphansDeleted", flinkJob)) == 0 && System.nanoTime() < deadline) {
        Thread.sleep(100);   // polling the metric, bounded
      }
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }

    List<String> above;
    List<String> leftovers;
    long watermark;
    try (CommitTarget target = ((SupportsTarget) SinkRecipe.iceberg(
        () -> IcebergFlinkSinkIT.config(warehouse, TABLE)).open(TestJobs.ROW_TYPE).sink()).openTarget()) {
      watermark = target.lastCommittedCheckpoint(JobId.of(JOB_ID)).orElse(0);
      above = target.listStaged(JobId.of(JOB_ID), watermark, 0, Long.MAX_VALUE);
      leftovers = target.committedLeftovers(JobId.of(JOB_ID));
    }
    TestJobs.Audit audit = IcebergFlinkSinkIT.audit(warehouse, TABLE, expected);
    System.out.printf("FlinkOrphanSweepIT: checkpoint %d stalled past its timeout; %d later attempts; %d staged"
            + " files of it and its like deleted while running; at the end (watermark %d) %d staged files above the"
            + " watermark, %d unreferenced at or below it; audit %s%n", StallOneCheckpoint.STALLED.get(),
        StallOneCheckpoint.LATER_ATTEMPTS.get(), swept, watermark, above.size(), leftovers.size(), audit);

    assertThat(StallOneCheckpoint.STALLED.get()).as("a checkpoint was stalled").isPositive();
    assertThat(StallOneCheckpoint.LATER_ATTEMPTS.get()).as("the timeout failed the job over").isPositive();
    assertThat(swept).as("files staged for the checkpoint that timed out were found and deleted").isPositive();
    assertThat(above).as("nothing staged above the last commit").isEmpty();
    assertThat(leftovers).as("every staged file at or below the last commit is in the table").isEmpty();
    assertThat(audit.duplicates()).isZero();
    assertThat(audit.losses()).isZero();
  }
}
