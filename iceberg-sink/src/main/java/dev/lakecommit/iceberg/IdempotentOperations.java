package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
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
  private int attempts;
  private int conflicts;

  IdempotentOperations(
      TableOperations delegate, CommitId commitId, String branch, boolean check, AttemptHook hook) {
    this(delegate, commitId, commitId.checkpointId(), branch, check, hook);
  }

  /** For a coalesced commit of the checkpoints {@code firstCheckpointId} to {@code commitId}'s. */
  IdempotentOperations(TableOperations delegate, CommitId commitId, long firstCheckpointId, String branch,
      boolean check, AttemptHook hook) {
    super(delegate);
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
    hook.beforeAttempt(attempts);
    try {
      delegate().commit(base, metadata);
    } catch (CommitFailedException e) {
      conflicts++;
      throw e;
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
