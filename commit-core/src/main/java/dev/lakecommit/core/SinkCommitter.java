package dev.lakecommit.core;

import java.io.IOException;
import java.util.List;

/**
 * The optional two-level commit: each writer's commit info is committed on its own once the checkpoint is durable.
 * For targets that have no global commit. A sink uses this or {@link SinkAggregatedCommitter}, never both for the
 * same infos.
 *
 * @param <C> commit info
 */
public interface SinkCommitter<C> extends AutoCloseable {

  /**
   * Commits infos of durable checkpoints. Must be idempotent: an info may be committed again after a restart, and
   * a second commit of an applied info must change nothing.
   *
   * @return the infos that were not committed and must be retried later (empty when all are committed)
   * @throws IOException on a failure that retrying cannot fix; the message names the info and the cause
   */
  List<C> commit(List<C> commitInfos) throws IOException;

  /** Deletes what the infos staged; only for infos that are known never to have been committed. */
  void abort(List<C> commitInfos) throws IOException;

  @Override
  default void close() throws IOException {}
}
