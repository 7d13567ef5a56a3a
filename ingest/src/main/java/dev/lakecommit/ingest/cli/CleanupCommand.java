package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.iceberg.IcebergSink;
import dev.lakecommit.staging.StagingCleaner;
import dev.lakecommit.staging.StagingLayout;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.SupportsPrefixOperations;
import java.io.PrintWriter;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import org.apache.iceberg.Table;
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
        + "newest durable checkpoint). Dry run unless --delete is given.",
        "With --target hive also what is still staged for committed checkpoints (the commit moved their files "
            + "into the table). Run it while the job is not running."})
public final class CleanupCommand implements Callable<Integer> {
  @Spec picocli.CommandLine.Model.CommandSpec spec;

  @Mixin TableOptions table;

  @Mixin JobOptions job;

  @Option(names = "--delete", description = "Delete the files (default: only list what would be deleted).")
  boolean delete;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    JobId jobId = job.requiredJobId();
    if (table.target() == Target.HIVE) {
      return new HiveCleanup(table, job).run(out, jobId, delete);
    }
    Table target = table.loadTable();
    String watermark = target.properties().get(dev.lakecommit.core.CommitId.watermarkKey(jobId));
    CheckpointStore store = job.checkpointStore(jobId, table);
    List<Long> durable = store.checkpointIds();
    long keep = Math.max(watermark == null ? 0 : Long.parseLong(watermark), durable.isEmpty() ? 0 : durable.get(0));
    StagingLayout layout = StagingLayout.under(IcebergSink.stagingRoot(target));
    StagingCleaner cleaner = new StagingCleaner(target.io(), layout);
    if (!delete) {
      long count = 0;
      for (FileInfo file : ((SupportsPrefixOperations) target.io()).listPrefix(layout.jobPrefix(jobId))) {
        OptionalLong checkpoint = layout.checkpointOf(jobId, file.location());
        if (checkpoint.isPresent() && checkpoint.getAsLong() > keep) {
          out.printf("  %s%n", file.location());
          count++;
        }
      }
      out.printf("%d orphan staged file(s) of job %s above checkpoint %d; run with --delete to delete them%n",
          count, jobId, keep);
    } else {
      long deleted = cleaner.deleteStagedAfter(jobId, keep);
      out.printf("Deleted %d orphan staged file(s) of job %s above checkpoint %d%n", deleted, jobId, keep);
    }
    out.flush();
    return 0;
  }

}
