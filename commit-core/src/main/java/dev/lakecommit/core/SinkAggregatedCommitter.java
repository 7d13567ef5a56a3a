package dev.lakecommit.core;

import java.io.IOException;
import java.util.List;

/**
 * The single, global committer: combines every writer's commit info of one checkpoint into one commit of the
 * target, and applies it idempotently.
 *
 * <p>Called from one thread. The runtime calls {@link #combine} after all writers prepared a checkpoint, persists
 * the result with the checkpoint, and calls {@link #commit} only after that checkpoint is durable, oldest pending
 * checkpoint first.
 *
 * @param <C> commit info of one writer
 * @param <A> the combined commit of one checkpoint
 */
public interface SinkAggregatedCommitter<C, A> extends AutoCloseable {

  /** Combines the writers' infos of one checkpoint into one commit. Pure: no side effect. */
  A combine(CommitId commitId, List<C> commitInfos);

  /**
   * Makes one checkpoint's commit visible, at most once. The idempotency check — has this (job, checkpoint)
   * been committed already? — runs inside every attempt against fresh target state, so a replay, a retry or a
   * racing committer sees {@link CommitOutcome.AlreadyCommitted}.
   *
   * <p>Must not throw for expected failures: conflicts and throttling are {@link CommitOutcome.Retryable}, a
   * commit whose fate is unknown even after reading the target back is {@link CommitOutcome.Unknown}, and a
   * failure retrying cannot fix is {@link CommitOutcome.Fatal}.
   */
  CommitOutcome commit(A committable);

  /** The commit id a combined commit carries. */
  CommitId commitId(A committable);

  /**
   * The next commit to make when several checkpoints are pending (after a restore, or a backlog of commits that
   * failed): the oldest alone (the default), or one commit that merges the oldest ones and carries the
   * {@link #commitId} of the newest it covers. The runtime calls this only with two or more pending commits,
   * oldest first, commits the result instead of the oldest, and then treats every pending checkpoint up to the
   * result's id as committed (or aborted) with it.
   *
   * <p>Pure: no side effect, and the result is not persisted (the pending commits stay in the checkpoint until
   * the merged one succeeds). A merged commit must still be idempotent per checkpoint it covers: if the target
   * already holds some of them, its {@link #commit} applies only the others.
   *
   * @param pending the pending commits, oldest first, at least two
   */
  default A coalesce(List<A> pending) {
    return pending.get(0);
  }

  /**
   * From now on, commits only while the target holds {@code epoch} for the job: every commit attempt checks it
   * inside the catalog attempt, as it checks idempotency, and a newer epoch makes the commit {@link
   * CommitOutcome.Fatal} with a {@link FencedException}. Called once per run, after the run claimed its epoch in
   * the target ({@link CommitTarget#claimEpoch}) and before its first commit. The default does nothing (targets
   * without epochs).
   */
  default void fence(JobId jobId, long epoch) {}

  /**
   * A staged file of the commit that does not exist any more, if any: a pending commit restored from a checkpoint
   * is checked before it is committed, so that a commit whose files are gone is never made. The default finds
   * none.
   */
  default java.util.Optional<String> missingStaged(A committable) throws IOException {
    return java.util.Optional.empty();
  }

  @Override
  default void close() throws IOException {}
}
