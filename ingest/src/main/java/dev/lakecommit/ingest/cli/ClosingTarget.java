package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.ForwardingCommitTarget;
import java.io.IOException;

/** A target that also closes the sink it was opened from (its catalog connection). */
final class ClosingTarget extends ForwardingCommitTarget {
  private final AutoCloseable owner;

  ClosingTarget(CommitTarget target, AutoCloseable owner) {
    super(target);
    this.owner = owner;
  }

  @Override
  public void close() throws IOException {
    try {
      super.close();
    } finally {
      try {
        owner.close();
      } catch (IOException | RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new IOException("Cannot close the sink of " + name() + ": " + e.getMessage(), e);
      }
    }
  }
}
