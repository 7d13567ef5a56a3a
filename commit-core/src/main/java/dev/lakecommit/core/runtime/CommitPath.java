package dev.lakecommit.core.runtime;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkCommitter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitLookup;
import dev.lakecommit.core.SupportsCommitter;
import dev.lakecommit.core.VersionedSerialization;
import java.io.IOException;
import java.util.List;
import java.util.OptionalLong;

/**
 * The one commit path the runtime drives, over either kind of committer: an aggregated committer as it is, or a
 * two-level committer whose "combined commit" of a checkpoint is the list of the writers' infos.
 */
abstract class CommitPath<C, A> implements AutoCloseable {

  abstract A combine(CommitId commitId, List<C> infos);

  abstract CommitOutcome commit(A committable);

  /**
   * The next commit of several pending ones (oldest first): the committer's choice, as a commit and the newest
   * checkpoint it covers.
   */
  abstract Next<A> next(java.util.SortedMap<Long, A> pending);

  /** A commit and the newest pending checkpoint it covers. */
  record Next<A>(A committable, long lastCheckpointId) {}

  abstract void abort(A committable) throws IOException;

  /** Commits only while the target holds the run's epoch. */
  abstract void fence(JobId jobId, long epoch);

  /** A staged file of the commit that no longer exists, if any. */
  abstract java.util.Optional<String> missingStaged(A committable) throws IOException;

  abstract SimpleVersionedSerializer<A> serializer();

  /** Whether {@link #lastCommitted} can read the target. */
  abstract boolean canLookUp();

  abstract OptionalLong lastCommitted(JobId jobId) throws IOException;

  @Override
  public abstract void close() throws IOException;

  @SuppressWarnings("unchecked")
  static <C> CommitPath<C, ?> of(Sink<?, C, ?> sink) throws IOException {
    if (sink instanceof SupportsAggregatedCommitter<?, ?> aggregated) {
      return aggregated((SupportsAggregatedCommitter<C, Object>) aggregated);
    }
    if (sink instanceof SupportsCommitter<?> twoLevel) {
      SinkCommitter<C> committer = ((SupportsCommitter<C>) twoLevel).createCommitter();
      return new TwoLevel<>(committer, VersionedSerialization.listOf(sink.commitInfoSerializer()));
    }
    throw new IllegalArgumentException(
        "Sink " + sink.getClass().getName() + " has no committer: it must implement SupportsAggregatedCommitter"
            + " or SupportsCommitter");
  }

  private static <C, A> CommitPath<C, A> aggregated(SupportsAggregatedCommitter<C, A> sink) throws IOException {
    return new Aggregated<>(sink.createAggregatedCommitter(), sink.aggregatedCommitSerializer());
  }

  private static final class Aggregated<C, A> extends CommitPath<C, A> {
    private final SinkAggregatedCommitter<C, A> committer;
    private final SimpleVersionedSerializer<A> serializer;

    Aggregated(SinkAggregatedCommitter<C, A> committer, SimpleVersionedSerializer<A> serializer) {
      this.committer = committer;
      this.serializer = serializer;
    }

    @Override
    A combine(CommitId commitId, List<C> infos) {
      return committer.combine(commitId, infos);
    }

    @Override
    CommitOutcome commit(A committable) {
      return committer.commit(committable);
    }

    @Override
    Next<A> next(java.util.SortedMap<Long, A> pending) {
      if (pending.size() < 2) {
        return new Next<>(pending.get(pending.firstKey()), pending.firstKey());
      }
      A chosen = committer.coalesce(List.copyOf(pending.values()));
      long last = committer.commitId(chosen).checkpointId();
      if (!pending.containsKey(last)) {
        throw new IllegalStateException("The committer coalesced pending checkpoints " + pending.keySet()
            + " into a commit of checkpoint " + last + ", which is not pending");
      }
      return new Next<>(chosen, last);
    }

    @Override
    void abort(A committable) throws IOException {
      committer.abort(committable);
    }

    @Override
    void fence(JobId jobId, long epoch) {
      committer.fence(jobId, epoch);
    }

    @Override
    java.util.Optional<String> missingStaged(A committable) throws IOException {
      return committer.missingStaged(committable);
    }

    @Override
    SimpleVersionedSerializer<A> serializer() {
      return serializer;
    }

    @Override
    boolean canLookUp() {
      return committer instanceof SupportsCommitLookup;
    }

    @Override
    OptionalLong lastCommitted(JobId jobId) throws IOException {
      return ((SupportsCommitLookup) committer).lastCommittedCheckpoint(jobId);
    }

    @Override
    public void close() throws IOException {
      committer.close();
    }
  }

  private static final class TwoLevel<C> extends CommitPath<C, List<C>> {
    private final SinkCommitter<C> committer;
    private final SimpleVersionedSerializer<List<C>> serializer;

    TwoLevel(SinkCommitter<C> committer, SimpleVersionedSerializer<List<C>> serializer) {
      this.committer = committer;
      this.serializer = serializer;
    }

    @Override
    List<C> combine(CommitId commitId, List<C> infos) {
      return List.copyOf(infos);
    }

    @Override
    Next<List<C>> next(java.util.SortedMap<Long, List<C>> pending) {
      return new Next<>(pending.get(pending.firstKey()), pending.firstKey());
    }

    @Override
    CommitOutcome commit(List<C> infos) {
      try {
        List<C> left = committer.commit(infos);
        return left.isEmpty()
            ? CommitOutcome.committed(infos.size() + " writer commits")
            : CommitOutcome.retryable(new IOException(left.size() + " of " + infos.size() + " infos not committed"));
      } catch (IOException | RuntimeException e) {
        return CommitOutcome.fatal(e);
      }
    }

    @Override
    void abort(List<C> infos) throws IOException {
      committer.abort(infos);
    }

    @Override
    void fence(JobId jobId, long epoch) {}

    @Override
    java.util.Optional<String> missingStaged(List<C> infos) {
      return java.util.Optional.empty();
    }

    @Override
    SimpleVersionedSerializer<List<C>> serializer() {
      return serializer;
    }

    @Override
    boolean canLookUp() {
      return committer instanceof SupportsCommitLookup;
    }

    @Override
    OptionalLong lastCommitted(JobId jobId) throws IOException {
      return ((SupportsCommitLookup) committer).lastCommittedCheckpoint(jobId);
    }

    @Override
    public void close() throws IOException {
      committer.close();
    }
  }
}
