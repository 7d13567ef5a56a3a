package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import java.util.Optional;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.exceptions.CommitFailedException;

/**
 * The table's own operations, with the idempotency check inside every commit attempt. Iceberg re-applies a
 * pending transaction on refreshed metadata when a commit conflicts and then calls {@link #commit} again with that
 * refreshed base: the check runs against exactly the state the commit would land on, and the catalog's
 * compare-and-swap on that base makes "checked, then committed" atomic.
 */
final class IdempotentOperations extends ForwardingTableOperations {

  /** Test seam: runs before each catalog commit attempt, to line up racing committers. */
  interface AttemptHook {
    void beforeAttempt(int attempt);

    AttemptHook NONE = attempt -> {};
  }

  private final CommitId commitId;
  private final long firstCheckpointId;
  private final String branch;
  private final boolean check;
  private final AttemptHook hook;
  private final long epoch;
  private final String tableName;
  private int attempts;
  private int conflicts;

  IdempotentOperations(
      TableOperations delegate, CommitId commitId, String branch, boolean check, AttemptHook hook) {
    this(delegate, commitId, commitId.checkpointId(), branch, check, hook, 0, "");
  }

  /**
   * For a coalesced commit of the checkpoints {@code firstCheckpointId} to {@code commitId}'s, by the run of
   * {@code epoch} (0: a committer that claimed none, not fenced).
   */
  IdempotentOperations(TableOperations delegate, CommitId commitId, long firstCheckpointId, String branch,
      boolean check, AttemptHook hook, long epoch, String tableName) {
    super(delegate);
    this.epoch = epoch;
    this.tableName = tableName;
    this.commitId = commitId;
    this.firstCheckpointId = firstCheckpointId;
    this.branch = branch;
    this.check = check;
    this.hook = hook;
  }

  int attempts() {
    return attempts;
  }

  int conflicts() {
    return conflicts;
  }

  @Override
  public void commit(TableMetadata base, TableMetadata metadata) {
    attempts++;
    if (check) {
      Optional<String> found = Watermarks.findCommitted(base, commitId, branch);
      if (found.isPresent()) {
        throw new AlreadyCommittedException(found.get());
      }
      checkNoneCommitted(base, commitId, firstCheckpointId, branch);
    }
    checkEpoch(base, commitId.jobId(), epoch, tableName);
    hook.beforeAttempt(attempts);
    try {
      delegate().commit(base, metadata);
    } catch (CommitFailedException e) {
      conflicts++;
      throw e;
    }
  }

  /**
   * Fails with {@link FencedException} unless the table holds {@code epoch} for the job (a committer of epoch 0
   * claimed none and is not checked).
   */
  static void checkEpoch(TableMetadata base, JobId jobId, long epoch, String tableName) {
    if (epoch == 0) {
      return;
    }
    String held = base.properties().get(RunEpoch.key(jobId));
    RunEpoch current = held == null ? null : RunEpoch.parse(jobId, held);
    if (current == null || current.epoch() != epoch) {
      throw new FencedException("table " + tableName, jobId, epoch,
          current != null ? current : new RunEpoch(Long.MAX_VALUE, "no epoch at all: the property was removed"));
    }
  }

  /**
   * For a coalesced commit: fails with {@link PartiallyCommittedException} if the table holds any of the covered
   * checkpoints (the caller has already checked that it does not hold the newest).
   */
  static void checkNoneCommitted(TableMetadata base, CommitId commitId, long firstCheckpointId, String branch) {
    if (firstCheckpointId >= commitId.checkpointId()) {
      return;
    }
    Optional<String> some =
        Watermarks.findCommitted(base, new CommitId(commitId.jobId(), firstCheckpointId), branch);
    if (some.isPresent()) {
      throw new PartiallyCommittedException(
          Watermarks.committedUpTo(base, commitId.jobId(), branch).orElse(firstCheckpointId), some.get());
    }
  }
}
