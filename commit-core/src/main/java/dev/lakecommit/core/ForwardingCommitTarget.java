package dev.lakecommit.core;

import java.io.IOException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.SortedMap;

/** A {@link CommitTarget} that passes every call to another; subclasses change the calls they need to. */
public class ForwardingCommitTarget implements CommitTarget {
  protected final CommitTarget delegate;

  public ForwardingCommitTarget(CommitTarget delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  @Override
  public String name() {
    return delegate.name();
  }

  @Override
  public String identity() throws IOException {
    return delegate.identity();
  }

  @Override
  public OptionalLong lastCommittedCheckpoint(JobId jobId) throws IOException {
    return delegate.lastCommittedCheckpoint(jobId);
  }

  @Override
  public RunEpoch claimEpoch(JobId jobId, String run) throws IOException {
    return delegate.claimEpoch(jobId, run);
  }

  @Override
  public Optional<RunEpoch> currentEpoch(JobId jobId) throws IOException {
    return delegate.currentEpoch(jobId);
  }

  @Override
  public List<String> listStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
    return delegate.listStaged(jobId, checkpointId, minEpoch, maxEpoch);
  }

  @Override
  public long deleteStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
    return delegate.deleteStaged(jobId, checkpointId, minEpoch, maxEpoch);
  }

  @Override
  public long deleteStagedOfEarlierAttempts(JobId jobId, long checkpointId, long epoch, int attempt)
      throws IOException {
    return delegate.deleteStagedOfEarlierAttempts(jobId, checkpointId, epoch, attempt);
  }

  @Override
  public List<String> committedLeftovers(JobId jobId) throws IOException {
    return delegate.committedLeftovers(jobId);
  }

  @Override
  public long deleteCommittedLeftovers(JobId jobId) throws IOException {
    return delegate.deleteCommittedLeftovers(jobId);
  }

  @Override
  public SortedMap<String, JobState> jobs() throws IOException {
    return delegate.jobs();
  }

  @Override
  public void close() throws IOException {
    delegate.close();
  }
}
