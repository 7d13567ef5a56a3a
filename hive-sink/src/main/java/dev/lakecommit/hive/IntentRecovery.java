package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.staging.StagedFile;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.thrift.TException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finishes what earlier runs of a job started (DESIGN.md rule 12): each unfinished commit intent of a checkpoint
 * above the watermark is rolled forward as the claiming run's epoch — the moves completed (a file at its
 * destination counts as moved), the missing partitions added, statistics and watermark recorded — or, where that
 * is impossible (a staged file neither staged nor at its destination), rolled back: its moved files are removed
 * from the partition directories and the partitions it added are dropped, so that none of its rows is visible.
 * Intents at or below the watermark are finished and only deleted.
 */
final class IntentRecovery {
  private static final Logger LOG = LoggerFactory.getLogger(IntentRecovery.class);

  private final CommitContext context;
  private final CommitIntents intents;
  private final RetryPolicy retry;
  private final AtomicInteger rolledForward = new AtomicInteger();
  private final AtomicInteger rolledBack = new AtomicInteger();

  IntentRecovery(CommitContext context, CommitIntents intents, RetryPolicy retry) {
    this.context = context;
    this.intents = intents;
    this.retry = retry;
  }

  int rolledForward() {
    return rolledForward.get();
  }

  int rolledBack() {
    return rolledBack.get();
  }

  /** Finishes or undoes every unfinished intent of the job, oldest first, as run epoch {@code epoch}. */
  void recover(JobId jobId, long epoch) throws IOException {
    List<CommitIntents.Stored> found = intents.list(jobId);
    if (found.isEmpty()) {
      return;
    }
    long watermark = watermark(jobId);
    for (CommitIntents.Stored stored : found) {
      if (stored.checkpointId() <= watermark) {
        intents.delete(stored.path());
        LOG.info("Deleted the intent of checkpoint {} of job {} (epoch {}) in {}: committed (watermark {})",
            stored.checkpointId(), jobId, stored.epoch(), context.table(), watermark);
        continue;
      }
      context.hook().reached(CommitHook.INTENT_LISTED, new CommitId(jobId, stored.checkpointId()));
      CommitIntent intent;
      try {
        intent = intents.read(stored.path());
      } catch (FileNotFoundException gone) {
        // Its run took it back after the listing (fenced by this claim before its first move: nothing moved), or
        // finished it (the watermark covers it): nothing to finish or undo either way.
        LOG.info("The intent of checkpoint {} of job {} (epoch {}) in {} went away while the claim read it: its run"
            + " finished it or, fenced before its first move, took it back", stored.checkpointId(), jobId,
            stored.epoch(), context.table());
        continue;
      }
      if (!intent.commitId().equals(new CommitId(jobId, stored.checkpointId()))) {
        throw new IOException(String.format("Commit intent %s holds %s, not checkpoint %s of job %s; remove it by"
            + " hand after checking table %s", stored.path(), intent.commitId(), stored.checkpointId(), jobId,
            context.table()));
      }
      if (rollForward(intent, stored, epoch)) {
        watermark = stored.checkpointId();
      }
    }
  }

  /** @return true if rolled forward, false if rolled back */
  private boolean rollForward(CommitIntent intent, CommitIntents.Stored stored, long epoch) throws IOException {
    CommitId id = intent.commitId();
    CommitContext applying = context.withMode(intent.mode());
    CommitOutcome outcome;
    try {
      outcome = retry.call("finishing the intent of " + id + " in " + context.table(),
          () -> new CommitAttempt(applying, intent.committable(), epoch, stored.path()).uploads(intent.uploads())
              .run());
    } catch (FatalCommitException.StagedFileLost lost) {
      rollBack(applying, intent, stored, epoch, lost);
      return false;
    } catch (IOException | RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IOException(String.format("Cannot finish the commit intent of checkpoint %s of job %s (run epoch"
          + " %s) in table %s: %s. Nothing new was staged; start the job again to retry", id.checkpointId(),
          id.jobId(), stored.epoch(), context.table(), e.getMessage()), e);
    }
    rolledForward.incrementAndGet();
    LOG.info("Rolled forward the unfinished commit of checkpoint {} of job {} (intent of run epoch {}) in {} as"
        + " epoch {}: {}", id.checkpointId(), id.jobId(), stored.epoch(), context.table(), epoch, outcome);
    return true;
  }

  private void rollBack(CommitContext applying, CommitIntent intent, CommitIntents.Stored stored, long epoch,
      FatalCommitException.StagedFileLost cause) throws IOException {
    CommitId id = intent.commitId();
    HiveTable info = context.table();
    TableStorage storage = context.storage();
    try {
      Map<String, List<Path>> destinations =
          new CommitAttempt(applying, intent.committable(), epoch, stored.path()).destinations();
      int removed = 0;
      for (List<Path> files : destinations.values()) {
        for (Path file : files) {
          removed += storage.fs().delete(file, false) ? 1 : 0;
        }
      }
      for (PendingUploads.Upload upload : intent.uploads()) {
        storage.uploads().abort(upload);
        storage.uploads().deleteStaged(new Path(upload.staged()));
      }
      for (StagedFile file : (Iterable<StagedFile>) intent.committable().files()::iterator) {
        storage.fs().delete(new Path(file.path()), false);
      }
      List<String> dropped = new ArrayList<>();
      if (info.isPartitioned()) {
        for (Partition partition : new PartitionCommits(applying, id).fetch(new ArrayList<>(destinations.keySet()))) {
          OptionalLong marked = TableParameters.committed(partition.getParameters(), id.jobId());
          boolean ours = marked.isPresent() && marked.getAsLong() == id.checkpointId();
          if (ours && !storage.hasVisibleFiles(new Path(partition.getSd().getLocation()))) {
            context.client().dropPartition(info.database(), info.name(), partition.getValues(), false);
            dropped.add(HivePaths.partitionName(info.partitionColumns(), partition.getValues(),
                context.defaultPartitionName()));
          }
        }
      }
      intents.delete(stored.path());
      rolledBack.incrementAndGet();
      LOG.warn("Rolled back the unfinished commit of checkpoint {} of job {} (intent of run epoch {}) in {}: it"
          + " cannot be finished ({}). Removed {} moved files from the partition directories and dropped the"
          + " partitions it added ({}); none of its rows is visible, and the watermark stays below it",
          id.checkpointId(), id.jobId(), stored.epoch(), info, cause.getMessage(), removed, dropped);
    } catch (TException e) {
      throw new IOException(String.format("Cannot roll back the unfinished commit of checkpoint %s of job %s in"
          + " table %s (%s): %s. Start the job again to retry", id.checkpointId(), id.jobId(), info,
          cause.getMessage(), e.getMessage()), e);
    }
  }

  private long watermark(JobId jobId) throws IOException {
    HiveTable info = context.table();
    try {
      return TableParameters.committed(context.client().getTable(info.database(), info.name()).getParameters(),
          jobId).orElse(0);
    } catch (TException e) {
      throw new IOException("Cannot read the watermark of job " + jobId + " from table " + info, e);
    }
  }
}
