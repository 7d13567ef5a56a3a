package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitLookup;
import dev.lakecommit.core.SupportsStagingCleanup;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.CrashingSink;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.iceberg.data.Record;

/**
 * A {@link HiveSink} with the crash points of commit-core's {@link CrashingSink}, that keeps what that wrapper
 * drops: the sink's {@link SupportsTarget} (so the runtime claims a run epoch and the claim finishes unfinished
 * intents) and the committer's {@code fence} and {@code missingStaged}. Remembers the targets it opened.
 */
final class TargetedCrashingSink
    implements Sink<Record, StagingManifest, StagingWriterState>,
        SupportsAggregatedCommitter<StagingManifest, HiveCommittable>,
        SupportsStagingCleanup,
        SupportsTarget {

  private final HiveSink<Record> sink;
  private final CrashingSink<Record, StagingManifest, StagingWriterState, HiveCommittable, HiveSink<Record>> writers;
  private final CrashSchedule crashes;
  private final List<HiveTarget> targets;

  /** @param targets where every target opened for the runtime is added */
  TargetedCrashingSink(HiveSink<Record> sink, CrashSchedule crashes, List<HiveTarget> targets) {
    this.sink = sink;
    this.writers = new CrashingSink<>(sink, crashes);
    this.crashes = crashes;
    this.targets = targets;
  }

  /** A list for {@link #TargetedCrashingSink}'s targets, safe to add to from any thread. */
  static List<HiveTarget> targetList() {
    return new CopyOnWriteArrayList<>();
  }

  @Override
  public SinkWriter<Record, StagingManifest, StagingWriterState> createWriter(WriterContext context)
      throws IOException {
    return writers.createWriter(context);
  }

  @Override
  public SinkWriter<Record, StagingManifest, StagingWriterState> restoreWriter(WriterContext context,
      List<StagingWriterState> states) throws IOException {
    return writers.restoreWriter(context, states);
  }

  @Override
  public SimpleVersionedSerializer<StagingManifest> commitInfoSerializer() {
    return sink.commitInfoSerializer();
  }

  @Override
  public SimpleVersionedSerializer<StagingWriterState> writerStateSerializer() {
    return sink.writerStateSerializer();
  }

  @Override
  public SinkAggregatedCommitter<StagingManifest, HiveCommittable> createAggregatedCommitter() throws IOException {
    return new Committer((HiveAggregatedCommitter) sink.createAggregatedCommitter());
  }

  @Override
  public SimpleVersionedSerializer<HiveCommittable> aggregatedCommitSerializer() {
    return sink.aggregatedCommitSerializer();
  }

  @Override
  public long deleteStagedAfter(JobId jobId, long checkpointId) throws IOException {
    return sink.deleteStagedAfter(jobId, checkpointId);
  }

  @Override
  public CommitTarget openTarget() throws IOException {
    HiveTarget target = (HiveTarget) sink.openTarget();
    targets.add(target);
    return target;
  }

  /** The Hive committer, crashing after the metastore accepted a commit and before the runtime hears of it. */
  private final class Committer
      implements SinkAggregatedCommitter<StagingManifest, HiveCommittable>, SupportsCommitLookup {
    private final HiveAggregatedCommitter committer;

    Committer(HiveAggregatedCommitter committer) {
      this.committer = committer;
    }

    @Override
    public HiveCommittable combine(CommitId commitId, List<StagingManifest> infos) {
      return committer.combine(commitId, infos);
    }

    @Override
    public CommitOutcome commit(HiveCommittable committable) {
      CommitOutcome outcome = committer.commit(committable);
      if (outcome instanceof CommitOutcome.Committed) {
        crashes.reach(CrashSchedule.COMMIT_APPLIED, committable.commitId().checkpointId());
      }
      return outcome;
    }

    @Override
    public CommitId commitId(HiveCommittable committable) {
      return committer.commitId(committable);
    }

    @Override
    public void fence(JobId jobId, long epoch) {
      committer.fence(jobId, epoch);
    }

    @Override
    public Optional<String> missingStaged(HiveCommittable committable) throws IOException {
      return committer.missingStaged(committable);
    }

    @Override
    public OptionalLong lastCommittedCheckpoint(JobId jobId) throws IOException {
      return committer.lastCommittedCheckpoint(jobId);
    }

    @Override
    public void close() {
      committer.close();
    }
  }
}
