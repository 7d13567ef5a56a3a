package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.runtime.CheckpointStore;
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
        "Also what is still staged for committed checkpoints that the table does not hold: Hive, crashed "
            + "attempts' files and copies a failed delete left (the commit moved the others into the table); "
            + "Iceberg, killed or failed commit attempts' manifests and data files that no snapshot references. "
            + "And the local upload buffers (s3fileio-*.tmp) of killed runs of any job."})
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
    try (CommitTarget target = TableAccess.of(table).openTarget()) {
      long committed = target.lastCommittedCheckpoint(jobId).orElse(0);
      java.util.Optional<CheckpointStore> store = job.existingCheckpointStore(jobId, table);
      long keep = Math.max(committed, store.isEmpty() ? 0 : newestDurable(store.get(), target.identity()));
      long current = target.currentEpoch(jobId).map(RunEpoch::epoch).orElse(0L);
      long maxEpoch = includeCurrentRun ? current : current - 1;
      String runs = includeCurrentRun ? "all runs" : "runs before the newest (epoch " + current + ")";
      List<String> leftovers = target.committedLeftovers(jobId);
      List<String> orphans = maxEpoch < 0 ? List.of() : target.listStaged(jobId, keep, 0, maxEpoch);
      String what = String.format("orphan staged file(s) of job %s in %s (committed up to checkpoint %d): %d above"
          + " checkpoint %d from %s, %d left over from committed checkpoints", jobId, target.name(), committed,
          orphans.size(), keep, runs, leftovers.size());
      List<java.nio.file.Path> buffers = S3Staging.deadProcessFiles();
      String buffered = String.format("upload buffer file(s) of killed runs under %s", S3Staging.root());
      if (!delete) {
        leftovers.forEach(location -> out.printf("  %s%n", location));
        orphans.forEach(location -> out.printf("  %s%n", location));
        out.printf("%d %s; run with --delete to delete them%n", leftovers.size() + orphans.size(), what);
        buffers.forEach(file -> out.printf("  %s%n", file));
        out.printf("%d %s%n", buffers.size(), buffered);
      } else {
        long deleted = target.deleteCommittedLeftovers(jobId);
        deleted += maxEpoch < 0 ? 0 : target.deleteStaged(jobId, keep, 0, maxEpoch);
        out.printf("Deleted %d %s%n", deleted, what);
        out.printf("Deleted %d %s%n", S3Staging.sweepDeadProcesses(), buffered);
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
