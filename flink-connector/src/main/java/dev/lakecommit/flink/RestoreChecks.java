package dev.lakecommit.flink;

import dev.lakecommit.core.JobId;

/**
 * The refusals of a restore (DESIGN.md rule 13), worded once for the aggregation operator and the committer: state
 * taken against another table, and a pending commit whose staged files are gone. Each says what was done (nothing
 * committed) and what the user can do.
 */
final class RestoreChecks {
  private RestoreChecks() {}

  /**
   * State or a pending commit of the job was made for a table of another identity than the table has now.
   *
   * @param what what was made for the other table, for example "Pending commit 47 of job j (Flink checkpoint 7)"
   */
  static IllegalStateException otherTable(String what, String table, JobId jobId, String recorded, String now) {
    return new IllegalStateException(what + " was made for another table than " + table + " is now (identity "
        + recorded + ", now " + now + "; was the table dropped and created again?). Nothing of it is committed to "
        + table + ": the pending commits of job " + jobId + " in this Flink state belong to the old table. To write"
        + " to the new table, start the job without this savepoint or checkpoint (its sources then begin at their"
        + " configured start), or drop the sink's state but keep the sources' positions: give the sink new uids"
        + " (sinkTo(..).uid(..) and uidPrefix(..)) and restore with --allowNonRestoredState; the rows of the dropped"
        + " pending commits are then not written.");
  }

  /** A restored pending commit that the table does not hold lost one of its staged files. */
  static IllegalStateException missingStaged(CheckpointCommittable committable, String table, long restoredFlink,
      String file) {
    return new IllegalStateException("Pending commit " + committable + " restored from Flink checkpoint "
        + restoredFlink + " is not in table " + table + ", and its staged file " + file + " no longer exists:"
        + " committing it would make a commit without its rows. Nothing was committed. Restore the file, or start"
        + " the job afresh (without this savepoint or checkpoint) with a new job id.");
  }
}
