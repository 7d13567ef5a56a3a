package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.iceberg.IcebergSink;
import java.io.PrintWriter;
import java.util.List;
import java.util.NavigableMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code lakecommit cleanup}: deletes what a job staged for checkpoints that never became durable. Files of
 * committed checkpoints, and of durable checkpoints still pending commit, are never touched.
 */
@Command(name = "cleanup", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Finds the orphan staged files of a job (checkpoints above both its last committed and its "
        + "newest durable checkpoint) written by runs that a newer run of the job fenced: safe while the job runs. "
        + "Dry run unless --delete is given.",
        "With --target hive also what is still staged for committed checkpoints (the commit moved their files "
            + "into the table). Run it while the job is not running."})
public final class CleanupCommand implements Callable<Integer> {
  @Spec picocli.CommandLine.Model.CommandSpec spec;

  @Mixin TableOptions table;

  @Mixin JobOptions job;

  @Option(names = "--delete", description = "Delete the files (default: only list what would be deleted).")
  boolean delete;

  @Option(names = "--include-current-run",
      description = "Also the files of the job's newest run (its run epoch): only when the job is not running.")
  boolean includeCurrentRun;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    JobId jobId = job.requiredJobId();
    if (table.target() == Target.HIVE) {
      return new HiveCleanup(table, job).run(out, jobId, delete);
    }
    try (IcebergSink<org.apache.iceberg.data.Record> sink = IcebergSink.forRecords(table.sinkConfig().build());
        CommitTarget target = sink.openTarget()) {
      long committed = target.lastCommittedCheckpoint(jobId).orElse(0);
      long keep = Math.max(committed, newestDurable(job.checkpointStore(jobId, table), target.identity()));
      long current = target.currentEpoch(jobId).map(RunEpoch::epoch).orElse(0L);
      long maxEpoch = includeCurrentRun ? current : current - 1;
      String runs = includeCurrentRun ? "all runs" : "runs before the newest (epoch " + current + ")";
      List<String> orphans = maxEpoch < 0 ? List.of() : target.listStaged(jobId, keep, 0, maxEpoch);
      if (!delete) {
        orphans.forEach(location -> out.printf("  %s%n", location));
        out.printf("%d orphan staged file(s) of job %s above checkpoint %d from %s; run with --delete to delete"
            + " them%n", orphans.size(), jobId, keep, runs);
      } else {
        long deleted = maxEpoch < 0 ? 0 : target.deleteStaged(jobId, keep, 0, maxEpoch);
        out.printf("Deleted %d orphan staged file(s) of job %s above checkpoint %d from %s%n", deleted, jobId, keep,
            runs);
      }
    }
    out.flush();
    return 0;
  }

  /** The newest checkpoint a restore would use: stored, and not written by a run that a newer run fenced. */
  static long newestDurable(CheckpointStore store, String identity) throws java.io.IOException {
    NavigableMap<Long, Long> starts = store.epochStarts(identity);
    return store.checkpoints().stream().filter(s -> !CheckpointStore.fencedOut(s, starts))
        .mapToLong(CheckpointStore.Stored::checkpointId).max().orElse(0);
  }
}
