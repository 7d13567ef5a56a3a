package dev.lakecommit.core;

import java.io.IOException;

/** A sink that opens its {@link CommitTarget}: runtimes use it to fence runs, look up commits and clean up. */
public interface SupportsTarget {

  /** Opens the sink's target; the caller closes it. */
  CommitTarget openTarget() throws IOException;
}
