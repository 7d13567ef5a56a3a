package dev.lakecommit.flink;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.staging.WriterManifest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.metrics.Counter;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.CommittableSummary;
import org.apache.flink.streaming.api.connector.sink2.CommittableWithLineage;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.types.logical.RowType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The parallelism-1 operator between the writers and the committer: collects every writer's manifests and, right
 * before each checkpoint barrier, combines all that arrived into ONE commit of the checkpoint. Barriers are
 * aligned, so by then every writer's manifests of that checkpoint have arrived; manifests of writers that ended
 * their input early (Flink tags them with their next checkpoint id) join the next combined commit, and at the end
 * of all input whatever is left is combined once more.
 *
 * <p>Lakecommit checkpoint ids: {@code offset + Flink checkpoint id}, where the offset is the job's watermark in
 * the target when the job first started (so a new run with the same job id continues above what the old one
 * committed), raised if needed to stay above every provisional id a writer named files after and above the
 * previous commit. The manifests are restamped with that id.
 *
 * <p>At initialization, with the restored state known, the operator (one subtask) checks the restore and cleans
 * up (DESIGN.md rules 11 and 13):
 *
 * <ul>
 *   <li>state taken against another table than the table is now (its identity differs: the table was dropped and
 *       created again), or a table replaced since the job was submitted, fails the job with a message, and so does
 *       state older than what the table holds for the job;
 *   <li>it deletes what older runs of the job (epochs below this run's, all fenced by this run's claim) staged for
 *       checkpoints above both the table's watermark and the highest checkpoint the restored state refers to: no
 *       commit can ever reference them. Committed files have ids at or below the watermark (a commit's id is at
 *       least the id its files were named after), and the restored state's commits and pending manifests at or
 *       below that highest id. Never files of this run's epoch. Skipped when Flink restores a checkpoint without
 *       this operator's state (its uid changed): the committer's restored state is then unknown here;
 *   <li>after a failover within the run (this task's attempt is above 0), what the failed attempts of this run
 *       staged for checkpoints above the same bound: manifests reported for checkpoints that never completed
 *       (declined, timed out, or cut short by the failure), which no restored commit refers to. Deleted once the
 *       first checkpoint after the restore completes, while the job runs, so that a job that keeps failing over
 *       does not pile them up until its next start. Only files named with an attempt below this task's: every
 *       task of the job restarts together (writers and this operator are connected, so they form one failover
 *       region), so the live writers stage under this attempt or a later one. Counted in the metric {@code
 *       lakecommit.stagedOrphansDeleted}.
 * </ul>
 *
 * <p>Every combined commit carries the identity of the table this run claimed its epoch in, so that the committer
 * never applies it to another table.
 */
final class CommitAggregator extends AbstractStreamOperator<CommittableMessage<CheckpointCommittable>>
    implements OneInputStreamOperator<CommittableMessage<WriterManifest>, CommittableMessage<CheckpointCommittable>>,
        BoundedOneInput {
  private static final Logger LOG = LoggerFactory.getLogger(CommitAggregator.class);
  private static final ListStateDescriptor<byte[]> STATE =
      new ListStateDescriptor<>("lakecommit-aggregator", BytePrimitiveArraySerializer.INSTANCE);

  /** Sweeps of older runs' orphans before giving up until the next start (see deleteOlderRunsOrphans). */
  private static final int SWEEP_ATTEMPTS = 3;

  private final SinkRecipe target;
  private final RowType rowType;
  private final String jobId;
  private final long epoch;
  private final String tableIdentity;

  private transient TargetRun run;
  private transient SinkAggregatedCommitter<WriterManifest, Object> committer;
  private transient ListState<byte[]> state;
  private transient List<WriterManifest> pending;
  private transient long offset;
  private transient long lastCommitId;
  private transient long lastFlinkCheckpoint;
  private transient long maxTag;
  private transient boolean ended;
  /** Bound of the sweep of earlier attempts' files after a failover (see the class comment); -1: none due. */
  private transient long sweepAbove;
  private transient Counter orphansDeleted;

  /**
   * @param epoch this run's epoch, claimed when the job was submitted
   * @param tableIdentity the identity of the table this run claimed its epoch in (empty: unknown, not checked)
   */
  CommitAggregator(SinkRecipe target, RowType rowType, JobId jobId, long epoch, String tableIdentity) {
    this.target = target;
    this.rowType = rowType;
    this.jobId = jobId.value();
    this.epoch = epoch;
    this.tableIdentity = tableIdentity;
  }

  @Override
  public void initializeState(StateInitializationContext context) throws Exception {
    super.initializeState(context);
    SinkRecipe.CoreSink core = target.open(rowType);
    JobId job = JobId.of(jobId);
    run = core.openRun(job, epoch, tableIdentity, target.table(), "an aggregator without it could sweep files of"
        + " a newer run");
    committer = core.committers().createAggregatedCommitter();
    state = context.getOperatorStateStore().getListState(STATE);
    pending = new ArrayList<>();
    String identity = run.readIdentity();
    if (!tableIdentity.isEmpty() && !identity.isEmpty() && !tableIdentity.equals(identity)) {
      throw RestoreChecks.otherTable("This run of the job (epoch " + epoch + ", claimed when it was submitted)",
          target.table(), job, tableIdentity, identity);
    }
    long committed = run.lastCommitted().orElse(0);
    List<byte[]> stored = new ArrayList<>();
    state.get().forEach(stored::add);
    long keep;
    if (stored.isEmpty()) {
      offset = committed;
      lastCommitId = committed;
      lastFlinkCheckpoint = context.getRestoredCheckpointId().orElse(0);
      keep = context.getRestoredCheckpointId().isPresent() ? -1 : committed;
    } else {
      AggregatorState restored = VersionedSerialization.fromBytes(stateSerializer(), stored.get(0));
      if (!restored.tableIdentity().isEmpty() && !identity.isEmpty() && !restored.tableIdentity().equals(identity)) {
        throw RestoreChecks.otherTable("The Flink state restored from checkpoint "
            + context.getRestoredCheckpointId().orElse(0) + " (last commit " + restored.lastCommitId() + ")",
            target.table(), job, restored.tableIdentity(), identity);
      }
      offset = restored.offset();
      lastCommitId = restored.lastCommitId();
      lastFlinkCheckpoint = restored.lastFlinkCheckpointId();
      pending.addAll(restored.pending());
      if (committed > lastCommitId) {
        throw new IllegalStateException(String.format("Table %s already holds checkpoint %s of job %s, newer than"
            + " the restored Flink state (checkpoint %s): going on would write committed rows again, so this run"
            + " commits nothing (its writers delete only the files they staged themselves). Restore from the newer"
            + " checkpoint or savepoint, or start with a new job id.", target.table(), committed, jobId,
            lastCommitId));
      }
      keep = Math.max(committed, restored.highestCheckpointId());
    }
    maxTag = lastFlinkCheckpoint;
    LOG.info("Aggregator of job {} on {}: offset {}, last commit id {}, Flink checkpoint {}, {} pending manifests",
        jobId, target.table(), offset, lastCommitId, lastFlinkCheckpoint, pending.size());
    deleteOlderRunsOrphans(keep);
    orphansDeleted = getMetricGroup().addGroup(CommitMetrics.GROUP).counter("stagedOrphansDeleted");
    sweepAbove = keep >= 0 && attempt() > 0 ? keep : -1;
  }

  private AggregatorState.Serializer stateSerializer() {
    return new AggregatorState.Serializer(target.writeResultSerializer());
  }

  private int attempt() {
    return getRuntimeContext().getTaskInfo().getAttemptNumber();
  }

  @Override
  public void notifyCheckpointComplete(long checkpointId) throws Exception {
    super.notifyCheckpointComplete(checkpointId);
    if (sweepAbove >= 0) {
      long bound = sweepAbove;
      sweepAbove = -1;
      deleteEarlierAttemptsOrphans(bound);
    }
  }

  /**
   * Deletes what earlier attempts of this run staged above {@code keep} (see the class comment); best effort, like
   * {@link #deleteOlderRunsOrphans}: what it cannot delete stays for the sweep at the job's next start.
   */
  private void deleteEarlierAttemptsOrphans(long keep) {
    for (int attempt = 1; ; attempt++) {
      try {
        long deleted = run.deleteOfEarlierAttempts(keep, attempt());
        orphansDeleted.inc(deleted);
        LOG.info("Deleted {} files staged by attempts below {} of run epoch {} of job {} for checkpoints above {} that"
            + " never completed, in {}", deleted, attempt(), epoch, jobId, keep, target.table());
        return;
      } catch (IOException | RuntimeException e) {
        if (attempt >= SWEEP_ATTEMPTS || Thread.currentThread().isInterrupted() || interrupted(e)) {
          LOG.warn("Could not delete the files earlier attempts of run epoch {} of job {} staged above checkpoint {}"
              + " in {}; the job's next start deletes them: {}", epoch, jobId, keep, target.table(), e.toString());
          return;
        }
        LOG.info("Sweep {} of earlier attempts' staged files of job {} failed ({}); sweeping again", attempt, jobId,
            e.toString());
      }
    }
  }

  /**
   * Deletes older runs' staged files above {@code keep} (see the class comment); best effort. The sweep lists a
   * prefix under which this run's subtasks are writing (and its committer may be writing and deleting a manifest
   * while it replays a restored commit), so a listing can fail on a file that vanished under it: the sweep then runs
   * again, a bounded number of times.
   */
  private void deleteOlderRunsOrphans(long keep) {
    if (epoch <= 1) {
      return;
    }
    if (keep < 0) {
      LOG.info("Not deleting older runs' staged files of job {}: Flink restored a checkpoint without the"
          + " aggregator's state, so what the restored committer still references is unknown here", jobId);
      return;
    }
    for (int attempt = 1; ; attempt++) {
      try {
        run.deleteOlderRuns(keep);
        return;
      } catch (IOException | RuntimeException e) {
        if (attempt >= SWEEP_ATTEMPTS || Thread.currentThread().isInterrupted() || interrupted(e)) {
          LOG.warn("Could not delete the files older runs of job {} staged above checkpoint {} in {}; the next start"
              + " tries again: {}", jobId, keep, target.table(), e.toString());
          return;
        }
        LOG.info("Sweep {} of older runs' staged files of job {} failed ({}); sweeping again", attempt, jobId,
            e.toString());
      }
    }
  }

  private static boolean interrupted(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof InterruptedException || t instanceof java.io.InterruptedIOException) {
        return true;
      }
    }
    return false;
  }

  @Override
  public void processElement(StreamRecord<CommittableMessage<WriterManifest>> element) {
    if (element.getValue() instanceof CommittableWithLineage<WriterManifest> committable) {
      pending.add(committable.getCommittable());
      maxTag = Math.max(maxTag, committable.getCheckpointId());
    }
    // Summaries: completeness is given by the aligned barrier, not by counting.
  }

  @Override
  public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
    super.prepareSnapshotPreBarrier(checkpointId);
    if (!ended) {
      emit(checkpointId);
    }
    lastFlinkCheckpoint = Math.max(lastFlinkCheckpoint, checkpointId);
  }

  @Override
  public void endInput() {
    if (!ended) {
      ended = true;
      // Released by the final checkpoint, whose id is above every checkpoint seen and every writer's tag.
      emit(Math.max(lastFlinkCheckpoint + 1, maxTag));
    }
  }

  @Override
  public void snapshotState(StateSnapshotContext context) throws Exception {
    super.snapshotState(context);
    state.update(List.of(VersionedSerialization.toBytes(stateSerializer(),
        new AggregatorState(offset, lastCommitId, Math.max(lastFlinkCheckpoint, context.getCheckpointId()),
            pending, tableIdentity))));
  }

  private void emit(long flinkCheckpointId) {
    if (pending.isEmpty()) {
      return;
    }
    long id = Math.max(offset + flinkCheckpointId, lastCommitId + 1);
    for (WriterManifest manifest : pending) {
      id = Math.max(id, manifest.checkpointId());
    }
    List<WriterManifest> restamped = new ArrayList<>(pending.size());
    for (WriterManifest m : pending) {
      restamped.add(restamp(m, id));
    }
    CommitId commitId = new CommitId(JobId.of(jobId), id);
    Object combined = committer.combine(commitId, restamped);
    LOG.info("Combined {} manifests of {} writers into {} (Flink checkpoint {})", restamped.size(),
        restamped.stream().mapToInt(WriterManifest::writerIndex).distinct().count(), commitId, flinkCheckpointId);
    output.collect(new StreamRecord<>(new CommittableSummary<>(0, 1, flinkCheckpointId, 1, 0)));
    CheckpointCommittable committable = new CheckpointCommittable(flinkCheckpointId, commitId, combined,
        tableIdentity);
    output.collect(new StreamRecord<>(new CommittableWithLineage<>(committable, flinkCheckpointId, 0)));
    lastCommitId = id;
    pending.clear();
  }

  /** The manifest under the commit's id, with everything else it holds (data, delete files, Iceberg manifest). */
  static WriterManifest restamp(WriterManifest m, long checkpointId) {
    return m.checkpointId() == checkpointId ? m : m.withCheckpointId(checkpointId);
  }

  @Override
  public void close() throws Exception {
    try {
      if (committer != null) {
        committer.close();
      }
    } finally {
      try {
        if (run != null) {
          run.close();
        }
      } finally {
        super.close();
      }
    }
  }
}
