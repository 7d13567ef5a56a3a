package dev.lakecommit.core;

import java.io.IOException;

/**
 * A sink whose writers' infos are combined into one commit per checkpoint.
 *
 * @param <C> commit info of one writer
 * @param <A> the combined commit of one checkpoint
 */
public interface SupportsAggregatedCommitter<C, A> {

  /** Creates the one committer of the job. Called once per start of the job. */
  SinkAggregatedCommitter<C, A> createAggregatedCommitter() throws IOException;

  /** Serializer of the combined commits (persisted in checkpoints until committed). */
  SimpleVersionedSerializer<A> aggregatedCommitSerializer();
}
