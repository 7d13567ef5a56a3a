package dev.lakecommit.core;

import java.io.IOException;

/**
 * A sink that can find its staged leftovers by prefix: the files that writers staged for checkpoints that never
 * became durable (a crash, an aborted attempt). Runtimes call it on restore.
 */
public interface SupportsStagingCleanup {

  /**
   * Deletes what the job staged for checkpoints with ids greater than {@code checkpointId}. The runtime guarantees
   * that none of them is committed or pending. Idempotent.
   *
   * @return the number of files deleted
   */
  long deleteStagedAfter(JobId jobId, long checkpointId) throws IOException;
}
