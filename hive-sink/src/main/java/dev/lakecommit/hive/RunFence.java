package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.RunEpoch;
import org.apache.hadoop.hive.metastore.api.Table;

/**
 * A committer's run epoch for a job (DESIGN.md rule 10): every commit attempt checks it against the table it just
 * read, before its first move and before its watermark swap.
 *
 * @param table the table, for messages
 * @param id the commit being attempted
 * @param epoch the committer's epoch for the job, 0 if it was not fenced (then nothing is checked)
 */
record RunFence(HiveTable table, CommitId id, long epoch) {

  /**
   * Whether {@code read} still holds this run's epoch of the job.
   *
   * @throws FencedException if a newer run of the job claimed an epoch since
   * @throws FatalCommitException if the epoch parameter is gone
   */
  void check(Table read) throws FatalCommitException {
    if (epoch == 0) {
      return;
    }
    String held = read.getParameters() == null ? null : read.getParameters().get(RunEpoch.key(id.jobId()));
    if (held == null) {
      throw new FatalCommitException(String.format("Table %s holds no run epoch of job %s (parameter %s), though"
          + " this run claimed epoch %s: the parameter was removed, and %s is not recorded. Start the job again to"
          + " claim a new epoch", table, id.jobId(), RunEpoch.key(id.jobId()), epoch, id));
    }
    RunEpoch current = RunEpoch.parse(id.jobId(), held);
    if (current.epoch() != epoch) {
      throw new FencedException(table.toString(), id.jobId(), epoch, current);
    }
  }
}
