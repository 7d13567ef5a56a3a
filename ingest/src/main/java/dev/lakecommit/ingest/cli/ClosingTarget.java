package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.SortedMap;

/** A target that also closes the sink it was opened from (its catalog connection). */
final class ClosingTarget implements CommitTarget {
  private final CommitTarget target;
  private final AutoCloseable owner;

  ClosingTarget(CommitTarget target, AutoCloseable owner) {
    this.target = target;
    this.owner = owner;
  }

  @Override
  public String name() {
    return target.name();
  }

  @Override
  public String identity() throws IOException {
    return target.identity();
  }

  @Override
  public OptionalLong lastCommittedCheckpoint(JobId jobId) throws IOException {
    return target.lastCommittedCheckpoint(jobId);
  }

  @Override
  public RunEpoch claimEpoch(JobId jobId, String run) throws IOException {
    return target.claimEpoch(jobId, run);
  }

  @Override
  public Optional<RunEpoch> currentEpoch(JobId jobId) throws IOException {
    return target.currentEpoch(jobId);
  }

  @Override
  public List<String> listStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
    return target.listStaged(jobId, checkpointId, minEpoch, maxEpoch);
  }

  @Override
  public long deleteStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
    return target.deleteStaged(jobId, checkpointId, minEpoch, maxEpoch);
  }

  @Override
  public List<String> committedLeftovers(JobId jobId) throws IOException {
    return target.committedLeftovers(jobId);
  }

  @Override
  public long deleteCommittedLeftovers(JobId jobId) throws IOException {
    return target.deleteCommittedLeftovers(jobId);
  }

  @Override
  public SortedMap<String, JobState> jobs() throws IOException {
    return target.jobs();
  }

  @Override
  public void close() throws IOException {
    try {
      target.close();
    } finally {
      try {
        owner.close();
      } catch (IOException | RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new IOException("Cannot close the sink of " + target.name() + ": " + e.getMessage(), e);
      }
    }
  }
}
