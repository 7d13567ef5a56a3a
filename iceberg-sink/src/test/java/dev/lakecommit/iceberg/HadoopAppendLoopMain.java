package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;

/**
 * A committer process for races on one Hadoop table: writes {@code commits} data files of {@code rows} keys each
 * (keys from {@code first} on), says it is ready and waits for go, then commits them one checkpoint each as job
 * {@code job}, as fast as it can, and prints {@code DONE <committed> <conflicts>}. Its renames onto table versions
 * wait for the other processes' ({@link MeetingLocalFileSystem}).
 *
 * <p>Arguments: warehouse URI, job, first key, commits, rows per commit, barrier directory, and optionally
 * {@code no-process-lock} (the commit lock without its lock across processes: the hazard the lock closes).
 */
public final class HadoopAppendLoopMain {
  private HadoopAppendLoopMain() {}

  public static void main(String[] args) throws Exception {
    String warehouse = args[0];
    JobId job = JobId.of(args[1]);
    long first = Long.parseLong(args[2]);
    int commits = Integer.parseInt(args[3]);
    int rows = Integer.parseInt(args[4]);
    Path barrier = Path.of(args[5]);
    boolean processLock = args.length < 7 || !"no-process-lock".equals(args[6]);

    Configuration conf = new Configuration();
    conf.set("fs.file.impl", MeetingLocalFileSystem.class.getName());
    conf.setBoolean("fs.file.impl.disable.cache", true);
    conf.set(MeetingLocalFileSystem.MEET_DIR, barrier.toString());
    conf.set(MeetingLocalFileSystem.WHO, job.value());
    Catalog catalog = CatalogUtil.buildIcebergCatalog("hadoop",
        GuardedHadoopCatalog.substitute(Map.of("type", "hadoop", "warehouse", warehouse)), conf);
    if (!processLock) {
      ((GuardedHadoopCatalog) catalog).withCommitLock(HadoopCommitLock.Options.ALL.withoutProcessLock());
    }
    Table table = catalog.loadTable(TestTables.IDENT);
    List<DataFile> files = new ArrayList<>();
    for (int i = 0; i < commits; i++) {
      files.add(TestTables.dataFile(table, first + (long) i * rows, first + (long) (i + 1) * rows));
    }
    CommitCounters counters = new CommitCounters();
    TableCommitter committer = new TableCommitter(catalog, TestTables.IDENT, CommitMode.APPEND, null, null, counters);
    Files.createFile(barrier.resolve("ready-" + job.value()));
    RaceCommitterMain.awaitFile(barrier.resolve("go"));
    int committed = 0;
    for (int i = 0; i < commits; i++) {
      DataFile file = files.get(i);
      CheckpointChanges changes = new CheckpointChanges(new CommitId(job, i + 1), List.of(file), List.of(), 1,
          file.recordCount(), file.fileSizeInBytes());
      CommitOutcome outcome = committer.commit(changes);
      while (outcome instanceof CommitOutcome.Retryable) { // as the runtime does: Iceberg's own retries ran out
        outcome = committer.commit(changes);
      }
      if (outcome instanceof CommitOutcome.Committed) {
        committed++;
      } else {
        System.out.println("OUTCOME " + (i + 1) + " " + outcome);
      }
    }
    System.out.println("DONE " + committed + " " + counters.conflicts());
    System.exit(0);
  }
}
