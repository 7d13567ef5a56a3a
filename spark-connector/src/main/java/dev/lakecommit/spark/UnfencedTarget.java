package dev.lakecommit.spark;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitLookup;
import dev.lakecommit.staging.StagingCleaner;
import java.io.IOException;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The {@link CommitTarget} of a sink that does not open one yet (the Hive sink, until it gets its own): the
 * watermark through its committer's lookup, staged files through the orphan sweeper, and no run epochs (its staged
 * names carry none, epoch 0). Runs on such a target are not fenced. Delete this class once every sink implements
 * {@code SupportsTarget}.
 */
final class UnfencedTarget implements CommitTarget {
  private final Target.Opened<?> opened;
  private final String where;

  UnfencedTarget(Target.Opened<?> opened, String where) {
    this.opened = opened;
    this.where = where;
  }

  @Override
  public String name() {
    return where;
  }

  @Override
  public String identity() {
    throw new UnsupportedOperationException("The sink of " + where + " has no target identity");
  }

  @Override
  public OptionalLong lastCommittedCheckpoint(JobId jobId) throws IOException {
    try (SinkAggregatedCommitter<?, ?> committer = opened.committing().createAggregatedCommitter()) {
      if (!(committer instanceof SupportsCommitLookup lookup)) {
        throw new IllegalArgumentException("The sink of " + where + " cannot look up its commits; the Spark adapter"
            + " needs that to skip a write that is already committed");
      }
      return lookup.lastCommittedCheckpoint(jobId);
    }
  }

  @Override
  public RunEpoch claimEpoch(JobId jobId, String run) {
    throw new UnsupportedOperationException("The sink of " + where + " claims no run epochs");
  }

  @Override
  public Optional<RunEpoch> currentEpoch(JobId jobId) {
    return Optional.empty();
  }

  @Override
  public java.util.List<String> listStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch)
      throws IOException {
    return new StagingCleaner(opened.stagingIO(), opened.layout()).listStaged(jobId, checkpointId, minEpoch,
        maxEpoch);
  }

  @Override
  public long deleteStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
    return new StagingCleaner(opened.stagingIO(), opened.layout()).deleteStaged(jobId, checkpointId, minEpoch,
        maxEpoch);
  }

  @Override
  public void close() {}
}
