package dev.lakecommit.core;

import java.io.IOException;
import java.util.OptionalLong;

/**
 * A committer that can tell, from the target itself, the last checkpoint of a job that it committed. Runtimes
 * use it on restore to detect that the target is ahead of the restored state (a restore from an older checkpoint)
 * and to choose checkpoint ids that were never used.
 */
public interface SupportsCommitLookup {

  /**
   * The highest checkpoint id of the job that is committed in the target, read from the target now.
   *
   * @return empty if the job never committed to this target
   * @throws IOException if the target cannot be read; the caller must not guess
   */
  OptionalLong lastCommittedCheckpoint(JobId jobId) throws IOException;
}
