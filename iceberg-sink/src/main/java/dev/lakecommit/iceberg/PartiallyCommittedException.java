package dev.lakecommit.iceberg;

/**
 * Thrown from inside an attempt of a coalesced commit when the table already holds some, not all, of the
 * checkpoints it covers (another committer or an earlier run committed them one by one): the caller commits the
 * rest without them.
 */
final class PartiallyCommittedException extends RuntimeException {
  private final long committedUpTo;

  PartiallyCommittedException(long committedUpTo, String where) {
    super(where, null, false, false);
    this.committedUpTo = committedUpTo;
  }

  /** The newest checkpoint of the job the table holds. */
  long committedUpTo() {
    return committedUpTo;
  }
}
