package dev.lakecommit.core;

import java.io.IOException;

/**
 * A sink whose writers' infos are committed one by one (the two-level commit).
 *
 * @param <C> commit info of one writer
 */
public interface SupportsCommitter<C> {

  /** Creates a committer. Called once per start of the job. */
  SinkCommitter<C> createCommitter() throws IOException;
}
