package dev.lakecommit.flink;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.iceberg.IcebergMaintenance;
import dev.lakecommit.iceberg.MaintenanceOptions;
import dev.lakecommit.iceberg.MaintenanceRound;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.CommittableWithLineage;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.types.logical.RowType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sink's optional post-commit stage (parallelism 1, uid {@code <uid prefix>-maintenance}): Flink's committer
 * hands it every commit it made, and after every {@code every} of them it starts one maintenance round
 * ({@link IcebergMaintenance#round}) on a thread of its own, under the table's lease, so that one round at a time
 * runs per table across all jobs. The operator's own thread only counts: the committer, which emits to it from
 * its checkpoint-complete call, never waits for a round, and a round's commits meet a checkpoint commit at most as
 * one more concurrent commit (one more attempt). A round never fails the job: its failure is logged and the next
 * round tries again; a round still running when the next is due is not doubled, and a round whose lease another
 * holds is skipped.
 *
 * <p>Not checkpointed: after a restore the count starts again. When the operator closes (end of input, cancel,
 * failover) a running round is given a minute to finish; a round cut short leaves only what a crash would
 * (orphans, an expiring lease).
 */
final class PostCommitMaintenance extends AbstractStreamOperator<Void>
    implements OneInputStreamOperator<CommittableMessage<CheckpointCommittable>, Void> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(PostCommitMaintenance.class);

  private final SinkRecipe target;
  private final RowType rowType;
  private final String jobId;
  private final int every;
  private final MaintenanceOptions options;
  private transient ExecutorService executor;
  private transient AtomicBoolean running;
  private transient long commits;
  private transient SinkRecipe.CoreSink core;

  PostCommitMaintenance(SinkRecipe target, RowType rowType, JobId jobId, int every, MaintenanceOptions options) {
    this.target = target;
    this.rowType = rowType;
    this.jobId = jobId.value();
    this.every = every;
    this.options = options;
  }

  @Override
  public void open() throws Exception {
    super.open();
    running = new AtomicBoolean();
    executor = Executors.newSingleThreadExecutor(runnable -> {
      Thread thread = new Thread(runnable, "lakecommit-maintenance-" + jobId);
      thread.setDaemon(true);
      return thread;
    });
  }

  @Override
  public void processElement(StreamRecord<CommittableMessage<CheckpointCommittable>> element) {
    if (element.getValue() instanceof CommittableWithLineage<CheckpointCommittable> committed
        && ++commits % every == 0 && running.compareAndSet(false, true)) {
      long checkpoint = committed.getCommittable().commitId().checkpointId();
      executor.execute(() -> round(checkpoint));
    }
  }

  private void round(long checkpoint) {
    try {
      if (core == null) {
        core = target.open(rowType);
      }
      IcebergMaintenance maintenance = core.maintenance().orElseThrow(() -> new IllegalStateException(
          "Maintenance is for Iceberg tables; " + target.table() + " is not one"));
      MaintenanceRound.Result result = maintenance.round(options, "Flink job " + jobId + " after checkpoint "
          + checkpoint + ", " + RunEpoch.thisProcess());
      if (!result.ran()) {
        LOG.info("Maintenance of {} after checkpoint {} skipped: {} holds the lease", target.table(), checkpoint,
            result.heldBy().get());
      }
    } catch (Exception e) {
      LOG.warn("Maintenance round of {} after checkpoint {} failed; the next round tries again: {}", target.table(),
          checkpoint, e.toString(), e);
    } finally {
      running.set(false);
    }
  }

  @Override
  public void close() throws Exception {
    try {
      if (executor != null) {
        executor.shutdown();
        // A cancelled task closes with its interrupt flag set: the round still gets its minute to end and release
        // its lease (an interrupted catalog call could leave the lease to expire instead).
        boolean interrupted = Thread.interrupted();
        try {
          if (!executor.awaitTermination(1, TimeUnit.MINUTES)) {
            executor.shutdownNow();
            LOG.warn("A maintenance round of {} did not finish within a minute of the operator's close; "
                + "interrupted", target.table());
          }
        } finally {
          if (interrupted) {
            Thread.currentThread().interrupt();
          }
        }
      }
      if (core != null) {
        core.sink().close();
      }
    } finally {
      super.close();
    }
  }
}
