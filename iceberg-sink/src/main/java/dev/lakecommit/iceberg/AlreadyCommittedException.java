package dev.lakecommit.iceberg;

/** Thrown from inside a commit attempt when the state it would land on already holds the checkpoint. */
final class AlreadyCommittedException extends RuntimeException {
  AlreadyCommittedException(String where) {
    super(where, null, false, false);
  }
}
