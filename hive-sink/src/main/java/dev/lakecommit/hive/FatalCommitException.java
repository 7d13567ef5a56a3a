package dev.lakecommit.hive;

import java.io.IOException;

/** A commit step found something retrying cannot fix: a staged file lost, a different file in its place. */
final class FatalCommitException extends IOException {
  FatalCommitException(String message) {
    super(message);
  }
}
