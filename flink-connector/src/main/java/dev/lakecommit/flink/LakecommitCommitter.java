package dev.lakecommit.flink;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.staging.WriterManifest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.table.types.logical.RowType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commits combined commits once their Flink checkpoint is complete, oldest first, each through the target's
 * aggregated committer (idempotent by job id and checkpoint id). Outcomes map to Flink as follows:
 *
 * <ul>
 *   <li>committed, already committed: done ({@code signalAlreadyCommitted} for the latter);
 *   <li>retryable, unknown: retried with backoff by the sink's {@link RetryPolicy}; if still not settled, the
 *       request and every later one stay pending ({@code retryLater}): Flink calls again (each further call is
 *       one attempt, so retries do not multiply), then fails the job, which restarts and commits again from
 *       state. Staged files are never deleted on an unknown outcome. {@code signalFailedWithKnownReason} is not
 *       used: Flink would drop the commit;
 *   <li>fatal: {@code signalFailedWithUnknownReason}, which fails the job; the staged files are kept. A commit of
 *       a run whose epoch another run of the job has taken since (a second copy of the job, or a newer submission)
 *       is fatal with a {@link FencedException}: this run commits nothing more, and its job fails with that message.
 * </ul>
 *
 * <p>Before a commit is made, two checks (DESIGN.md rule 13) refuse what must never be committed, failing the job
 * with a message as a fatal outcome does: a commit made for another table than the table is now (its identity,
 * recorded by the aggregation operator, differs from the table's, read at every call: the table was dropped and
 * created again), and a commit restored from Flink state (its Flink checkpoint is at or below the restored one)
 * that the table does not hold and one of whose staged files is gone. There is no option to drop such commits and
 * go on: the sources' positions in the same state are past their rows, so going on would lose them silently; the
 * messages say how to start afresh or drop the sink's state with Flink's own means.
 *
 * <p>The target is opened lazily: Flink runs a committer in every subtask, but only the first receives commits.
 */
final class LakecommitCommitter implements Committer<CheckpointCommittable> {
  private static final Logger LOG = LoggerFactory.getLogger(LakecommitCommitter.class);

  private final SinkRecipe target;
  private final RowType rowType;
  private final RetryPolicy retry;
  private final JobId jobId;
  private final long epoch;
  private final OptionalLong restoredCheckpointId;
  private final CommitMetrics metrics;
  /** Restored commits whose staged files were found complete (or that the table holds). */
  private final Set<CommitId> verified = new HashSet<>();
  private TargetRun run;
  private SinkAggregatedCommitter<WriterManifest, Object> committer;

  /**
   * @param epoch the run's epoch: every commit checks that the table still holds it
   * @param restoredCheckpointId the Flink checkpoint the committer's state was restored from, if any
   * @param metrics where commits are counted; {@code retry} should count its retries there too
   */
  LakecommitCommitter(SinkRecipe target, RowType rowType, RetryPolicy retry, JobId jobId, long epoch,
      OptionalLong restoredCheckpointId, CommitMetrics metrics) {
    this.target = target;
    this.rowType = rowType;
    this.retry = retry;
    this.jobId = jobId;
    this.epoch = epoch;
    this.restoredCheckpointId = restoredCheckpointId;
    this.metrics = metrics;
  }

  @Override
  public void commit(Collection<CommitRequest<CheckpointCommittable>> requests)
      throws IOException, InterruptedException {
    if (requests.isEmpty()) {
      return;
    }
    if (committer == null) {
      SinkRecipe.CoreSink core = target.open(rowType);
      run = core.openRun(jobId, epoch, "", target.table(), "refusing to commit unfenced");
      committer = core.committers().createAggregatedCommitter();
      run.fence(committer);
    }
    List<CommitRequest<CheckpointCommittable>> ordered = new ArrayList<>(requests);
    ordered.sort(Comparator.comparing(r -> r.getCommittable().commitId()));
    long now = System.nanoTime();
    ordered.forEach(r -> metrics.handedOver(r.getCommittable().commitId(), now));
    String identity;
    try {
      identity = run.readIdentity();
    } catch (IOException e) {
      LOG.warn("Cannot read the identity of table {} to check {} pending commits against it; they stay pending: {}",
          target.table(), ordered.size(), e.toString());
      ordered.forEach(CommitRequest::retryLater);
      return;
    }
    boolean blocked = false;
    for (CommitRequest<CheckpointCommittable> request : ordered) {
      if (blocked) {
        request.retryLater();
        continue;
      }
      blocked = !commit(request, identity);
    }
  }

  /** Commits one request unless a check refuses it; false if it stays pending. */
  private boolean commit(CommitRequest<CheckpointCommittable> request, String identity) throws InterruptedException {
    CheckpointCommittable committable = request.getCommittable();
    IllegalStateException refused;
    try {
      refused = refusal(committable, identity);
    } catch (IOException e) {
      LOG.warn("Cannot check the restored {} against table {}; it stays pending: {}", committable, target.table(),
          e.toString());
      request.retryLater();
      return false;
    }
    if (refused != null) {
      LOG.error("Commit of {} to {} refused: {}", committable, target.table(), refused.getMessage());
      request.signalFailedWithUnknownReason(refused);
      return false;
    }
    String what = "commit of " + committable + " to " + target.table();
    long start = System.nanoTime();
    CommitOutcome outcome;
    if (request.getNumberOfRetries() == 0) {
      outcome = retry.commit(what, () -> committer.commit(committable.committable()));
    } else {
      metrics.retried();
      outcome = committer.commit(committable.committable());
    }
    outcome = run.settle(committable.commitId().checkpointId(), outcome);
    long end = System.nanoTime();
    long millis = (end - start) / 1_000_000;
    if (outcome instanceof CommitOutcome.Committed c) {
      metrics.committed(committable.commitId(), committable.committable(), end - start, end);
      LOG.info("Committed {} to {} as {} in {} ms", committable, target.table(), c.targetVersion(), millis);
      return true;
    }
    if (outcome instanceof CommitOutcome.AlreadyCommitted a) {
      metrics.replaySkipped(committable.commitId());
      LOG.info("{} was already committed to {} ({}); skipped", committable, target.table(), a.reason());
      request.signalAlreadyCommitted();
      return true;
    }
    if (outcome instanceof CommitOutcome.Fatal f && f.cause() instanceof FencedException fenced) {
      LOG.error("Commit of {} to {} refused: {}", committable, target.table(), fenced.getMessage());
      request.signalFailedWithUnknownReason(fenced);
      return false;
    }
    if (outcome instanceof CommitOutcome.Fatal f) {
      LOG.error("Commit of {} to {} failed and cannot be retried; its staged files are kept", committable,
          target.table(), f.cause());
      request.signalFailedWithUnknownReason(f.cause());
      return false;
    }
    Throwable cause = outcome instanceof CommitOutcome.Retryable r ? r.cause() : ((CommitOutcome.Unknown) outcome)
        .cause();
    LOG.warn("Commit of {} to {} is not settled after {} ms ({}): it stays pending and is retried; staged files"
        + " are kept", committable, target.table(), millis, cause.toString());
    request.retryLater();
    return false;
  }

  /** Why the commit must not be made, or null (see the class comment). */
  private IllegalStateException refusal(CheckpointCommittable committable, String identity) throws IOException {
    if (committable.madeForAnotherTable(identity)) {
      return RestoreChecks.otherTable("Pending commit " + committable, target.table(), jobId,
          committable.tableIdentity(), identity);
    }
    boolean restored = restoredCheckpointId.isPresent()
        && committable.flinkCheckpointId() <= restoredCheckpointId.getAsLong();
    if (!restored || verified.contains(committable.commitId())) {
      return null;
    }
    // The table first: a commit it holds is only acknowledged, whatever happened to its staged files since.
    if (run.lastCommitted().orElse(0) < committable.commitId().checkpointId()) {
      Optional<String> missing = committer.missingStaged(committable.committable());
      if (missing.isPresent()) {
        return RestoreChecks.missingStaged(committable, target.table(), restoredCheckpointId.getAsLong(),
            missing.get());
      }
    }
    verified.add(committable.commitId());
    return null;
  }

  @Override
  public void close() throws IOException {
    try {
      if (committer != null) {
        committer.close();
      }
    } finally {
      if (run != null) {
        run.close();
      }
    }
  }
}
