package dev.lakecommit.hive;

import java.io.IOException;

/** A commit step found something retrying cannot fix: a staged file lost, a different file in its place. */
class FatalCommitException extends IOException {
  FatalCommitException(String message) {
    super(message);
  }

  /** A staged file is neither staged nor at its destination: the commit can never be finished. */
  static final class StagedFileLost extends FatalCommitException {
    StagedFileLost(String message) {
      super(message);
    }
  }
}
