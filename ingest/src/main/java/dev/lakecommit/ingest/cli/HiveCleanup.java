package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.ingest.hive.HiveTarget;
import dev.lakecommit.staging.StagingLayout;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.SupportsBulkOperations;
import org.apache.iceberg.io.SupportsPrefixOperations;

/**
 * {@code cleanup --target hive}: a job's orphan files under the Hive table's staging directory. Hive-sink moves
 * every file of a checkpoint out of staging before it records the checkpoint, so whatever is still staged for a
 * committed checkpoint is an orphan (a crashed attempt's file, a copy a failed delete left); so is everything of a
 * checkpoint above both the committed and the newest durable one. Checkpoints in between are durable and pending
 * commit: their files are kept.
 */
final class HiveCleanup {
  private final TableOptions table;
  private final JobOptions job;

  HiveCleanup(TableOptions table, JobOptions job) {
    this.table = table;
    this.job = job;
  }

  int run(PrintWriter out, JobId jobId, boolean delete) throws IOException {
    try (HiveTarget target = table.openHiveTable(); FileIO io = target.io()) {
      long committed = target.watermark(jobId).orElse(0);
      CheckpointStore store = job.checkpointStore(jobId, table);
      List<Long> durable = store.checkpointIds();
      long pendingUpTo = Math.max(committed, durable.isEmpty() ? 0 : durable.get(0));
      StagingLayout layout = target.stagingLayout();
      List<String> orphans = new ArrayList<>();
      for (FileInfo file : list(io, layout.jobPrefix(jobId))) {
        OptionalLong checkpoint = layout.checkpointOf(jobId, file.location());
        if (checkpoint.isPresent() && (checkpoint.getAsLong() <= committed || checkpoint.getAsLong() > pendingUpTo)) {
          orphans.add(file.location());
        }
      }
      String kept = pendingUpTo > committed
          ? String.format("checkpoints %d to %d are pending commit and kept", committed + 1, pendingUpTo)
          : "no checkpoint is pending commit";
      if (!delete) {
        orphans.forEach(location -> out.printf("  %s%n", location));
        out.printf("%d orphan staged file(s) of job %s in Hive table %s (committed up to checkpoint %d; %s); "
            + "run with --delete to delete them%n", orphans.size(), jobId, target.name(), committed, kept);
      } else {
        try {
          if (io instanceof SupportsBulkOperations bulk) {
            bulk.deleteFiles(orphans);
          } else {
            orphans.forEach(io::deleteFile);
          }
        } catch (UncheckedIOException e) {
          throw e.getCause();
        }
        out.printf("Deleted %d orphan staged file(s) of job %s in Hive table %s (committed up to checkpoint %d; "
            + "%s)%n", orphans.size(), jobId, target.name(), committed, kept);
      }
      out.flush();
      return 0;
    }
  }

  private static List<FileInfo> list(FileIO io, String prefix) throws IOException {
    List<FileInfo> files = new ArrayList<>();
    try {
      ((SupportsPrefixOperations) io).listPrefix(prefix).forEach(files::add);
    } catch (UncheckedIOException e) {
      if (!(e.getCause() instanceof FileNotFoundException)) {
        throw e.getCause();
      }
    } catch (NotFoundException e) {
      // nothing staged
    }
    return files;
  }
}
