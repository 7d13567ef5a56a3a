package dev.lakecommit.core;

import java.util.Objects;

/**
 * What happened to one commit attempt. Each outcome says whether the commit is done, whether it may be retried,
 * and whether the files it staged may be deleted — only when the commit is known never to have been applied.
 */
public sealed interface CommitOutcome
    permits CommitOutcome.Committed,
        CommitOutcome.AlreadyCommitted,
        CommitOutcome.Retryable,
        CommitOutcome.Fatal,
        CommitOutcome.Unknown {

  /** True when the commit is in the target (applied now, or before). */
  boolean isSuccess();

  /** True when trying the same commit again may succeed. */
  boolean isRetryable();

  /** True only when the commit is known not to be in the target and never will be: its staged files may go. */
  boolean stagedFilesDeletable();

  static CommitOutcome committed(String targetVersion) {
    return new Committed(targetVersion);
  }

  static CommitOutcome alreadyCommitted(String reason) {
    return new AlreadyCommitted(reason);
  }

  static CommitOutcome retryable(Throwable cause) {
    return new Retryable(cause);
  }

  static CommitOutcome fatal(Throwable cause) {
    return new Fatal(cause);
  }

  static CommitOutcome unknown(Throwable cause) {
    return new Unknown(cause);
  }

  /**
   * Applied by this attempt.
   *
   * @param targetVersion what the target calls the new version (an Iceberg snapshot id, a Hive batch), for logs
   */
  record Committed(String targetVersion) implements CommitOutcome {
    public Committed {
      Objects.requireNonNull(targetVersion, "targetVersion");
    }

    @Override
    public boolean isSuccess() {
      return true;
    }

    @Override
    public boolean isRetryable() {
      return false;
    }

    @Override
    public boolean stagedFilesDeletable() {
      return false;
    }
  }

  /**
   * Found in the target by the idempotency check: applied by an earlier attempt, a replay or a racing committer.
   * Nothing was changed; staged files belong to the target and must stay.
   *
   * @param reason where the commit was found (watermark, snapshot summary), for logs
   */
  record AlreadyCommitted(String reason) implements CommitOutcome {
    public AlreadyCommitted {
      Objects.requireNonNull(reason, "reason");
    }

    @Override
    public boolean isSuccess() {
      return true;
    }

    @Override
    public boolean isRetryable() {
      return false;
    }

    @Override
    public boolean stagedFilesDeletable() {
      return false;
    }
  }

  /** Not applied; trying again may succeed (a conflict, throttling, a network error). Staged files must stay. */
  record Retryable(Throwable cause) implements CommitOutcome {
    public Retryable {
      Objects.requireNonNull(cause, "cause");
    }

    @Override
    public boolean isSuccess() {
      return false;
    }

    @Override
    public boolean isRetryable() {
      return true;
    }

    @Override
    public boolean stagedFilesDeletable() {
      return false;
    }
  }

  /**
   * Not applied and never will be by retrying (permissions, schema mismatch, corrupt manifest). The job must stop;
   * the message of the cause names the table, job, checkpoint and reason.
   */
  record Fatal(Throwable cause) implements CommitOutcome {
    public Fatal {
      Objects.requireNonNull(cause, "cause");
    }

    @Override
    public boolean isSuccess() {
      return false;
    }

    @Override
    public boolean isRetryable() {
      return false;
    }

    @Override
    public boolean stagedFilesDeletable() {
      return true;
    }
  }

  /**
   * The target may or may not have applied the commit, and reading it back did not settle it (the target was
   * unreachable). Retrying is safe because every attempt checks the target first; deleting staged files is not.
   */
  record Unknown(Throwable cause) implements CommitOutcome {
    public Unknown {
      Objects.requireNonNull(cause, "cause");
    }

    @Override
    public boolean isSuccess() {
      return false;
    }

    @Override
    public boolean isRetryable() {
      return true;
    }

    @Override
    public boolean stagedFilesDeletable() {
      return false;
    }
  }
}
