package dev.lakecommit.spark;

/**
 * What one Spark write (a batch write, or one micro-batch) did to the table.
 *
 * @param jobId the job id of the commit (the write id, or the streaming query's job id)
 * @param checkpointId the checkpoint id of the commit
 * @param status whether this write committed, found its commit already done, or had nothing to write
 * @param files staged files committed by this write (0 unless {@link Status#COMMITTED})
 * @param records rows committed by this write (0 unless {@link Status#COMMITTED})
 */
public record WriteResult(String jobId, long checkpointId, Status status, long files, long records) {

  /** The outcome of one write. */
  public enum Status {
    /** This write made its rows visible, in one commit. */
    COMMITTED,
    /** The table already holds this (job, checkpoint): an earlier run committed it; nothing changed. */
    ALREADY_COMMITTED,
    /** The DataFrame had no rows: nothing was staged or committed. */
    NOTHING_WRITTEN
  }
}
