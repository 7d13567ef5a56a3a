package dev.lakecommit.core.runtime;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitProperties;
import dev.lakecommit.core.TargetRun;
import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.SortedMap;

/** The sink's aggregated committer as the runtime drives it, with the serializer of its combined commits. */
final class CommitPath<C, A> implements AutoCloseable {
  private final SinkAggregatedCommitter<C, A> committer;
  private final SimpleVersionedSerializer<A> serializer;

  private CommitPath(SinkAggregatedCommitter<C, A> committer, SimpleVersionedSerializer<A> serializer) {
    this.committer = committer;
    this.serializer = serializer;
  }

  @SuppressWarnings("unchecked")
  static <C> CommitPath<C, ?> of(Sink<?, C, ?> sink) throws IOException {
    if (sink instanceof SupportsAggregatedCommitter<?, ?> aggregated) {
      return of((SupportsAggregatedCommitter<C, Object>) aggregated);
    }
    throw new IllegalArgumentException(
        "Sink " + sink.getClass().getName() + " has no committer: it must implement SupportsAggregatedCommitter");
  }

  private static <C, A> CommitPath<C, A> of(SupportsAggregatedCommitter<C, A> sink) throws IOException {
    return new CommitPath<>(sink.createAggregatedCommitter(), sink.aggregatedCommitSerializer());
  }

  A combine(CommitId commitId, List<C> infos) {
    return committer.combine(commitId, infos);
  }

  CommitOutcome commit(A committable) {
    return committer.commit(committable);
  }

  /** A commit and the newest pending checkpoint it covers. */
  record Next<A>(A committable, long lastCheckpointId) {}

  /**
   * The next commit of several pending ones (oldest first): the committer's choice, as a commit and the newest
   * checkpoint it covers.
   */
  Next<A> next(SortedMap<Long, A> pending) {
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

  /**
   * Sets these table properties with every following commit, if the committer can ({@link
   * SupportsCommitProperties}); false if it cannot.
   */
  boolean commitProperties(java.util.Map<String, String> properties) {
    if (committer instanceof SupportsCommitProperties supports) {
      supports.commitProperties(properties);
      return true;
    }
    return false;
  }

  /** Commits only while the target holds the run's epoch. */
  void fence(TargetRun run) {
    run.fence(committer);
  }

  /** A staged file of the commit that no longer exists, if any. */
  Optional<String> missingStaged(A committable) throws IOException {
    return committer.missingStaged(committable);
  }

  SimpleVersionedSerializer<A> serializer() {
    return serializer;
  }

  @Override
  public void close() throws IOException {
    committer.close();
  }
}
