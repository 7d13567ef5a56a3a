package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.staging.StagingCleaner;
import dev.lakecommit.staging.StagingLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.iceberg.io.FileIO;
import org.apache.thrift.TException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sink's one object per Hive table (DESIGN.md rules 10-13): the table's identity, each job's watermark, the
 * run epoch claim in the table parameter {@code lakecommit.epoch.<job-id>}, the unfinished commit intents a claim
 * finishes, and the job's staged files. Holds its own metastore client, closed with it.
 */
final class HiveTarget implements CommitTarget {
  private static final Logger LOG = LoggerFactory.getLogger(HiveTarget.class);
  /** How many partitions the watermark lookup reads to tell a job that committed from one that never did. */
  private static final short PARTITIONS_CHECKED = 1000;

  private final CommitContext context;
  private final CommitIntents intents;
  private final FileIO io;
  private final StagingLayout layout;
  private final RetryPolicy retry;
  private final IntentRecovery recovery;

  /**
   * @param context the target's own client and storage (closed with it); its {@code intents} are null when the
   *     commit intent is test-only disabled
   * @param intents where the table's intents are, always (a lookup must see them even when commits write none)
   */
  HiveTarget(CommitContext context, CommitIntents intents, FileIO io, StagingLayout layout) {
    this.context = context;
    this.intents = intents;
    this.io = io;
    this.layout = layout;
    // Conflicts are the only thing retried here: a transport failure is the metastore client's to retry.
    this.retry = RetryPolicy.builder().maxAttempts(10).initialBackoff(Duration.ofMillis(20))
        .maxBackoff(Duration.ofSeconds(1)).retryOn(e -> e instanceof TableParameters.ConflictException)
        .listener((what, attempt, backoff, cause) -> context.conflicts().incrementAndGet()).build();
    this.recovery = new IntentRecovery(context, intents, retry);
  }

  /** Test-only: conflicts seen by claims and roll-forwards (another writer changed the table first). */
  int conflicts() {
    return context.conflicts().get();
  }

  /** Test-only: intents this target finished (forward) and undid (back). */
  IntentRecovery recovery() {
    return recovery;
  }

  @Override
  public String name() {
    return context.table().toString();
  }

  /** Create time, base location and the sink's table id: another table if the table was dropped and re-created. */
  @Override
  public synchronized String identity() throws IOException {
    Table table = read("identity");
    String id = table.getParameters() == null ? null : table.getParameters().get(TableParameters.TABLE_ID_KEY);
    return "hive created " + table.getCreateTime() + " at " + HivePaths.baseLocation(new Path(table.getSd()
        .getLocation())) + (id == null ? "" : " id " + id);
  }

  @Override
  public synchronized OptionalLong lastCommittedCheckpoint(JobId jobId) throws IOException {
    return lastCommitted(context, intents, jobId);
  }

  /**
   * The job's watermark. Where it is missing, never a guess: unfinished intents of the job, or partitions that
   * record a checkpoint of it, mean that it did commit, and the lookup fails saying so.
   */
  static OptionalLong lastCommitted(CommitContext context, CommitIntents intents, JobId jobId) throws IOException {
    HiveTable info = context.table();
    try {
      Table table = context.client().getTable(info.database(), info.name());
      OptionalLong watermark = TableParameters.committed(table.getParameters(), jobId);
      if (watermark.isPresent()) {
        return watermark;
      }
      List<CommitIntents.Stored> unfinished = intents.list(jobId);
      if (!unfinished.isEmpty()) {
        throw new IOException(String.format("Table %s holds no watermark %s, but commit intents of job %s are"
            + " unfinished (checkpoints %s, under %s): the job did commit. A new run of the job finishes them when it"
            + " claims its epoch", info, CommitId.watermarkKey(jobId), jobId,
            unfinished.stream().map(CommitIntents.Stored::checkpointId).toList(), intents.dir(jobId)));
      }
      if (info.isPartitioned()) {
        for (Partition partition : context.client().listPartitions(info.database(), info.name(),
            PARTITIONS_CHECKED)) {
          OptionalLong marked = TableParameters.committed(partition.getParameters(), jobId);
          if (marked.isPresent()) {
            throw new IOException(String.format("Table %s holds no watermark %s, but its partition %s records"
                + " checkpoint %s of job %s: the job committed, and its watermark parameter was removed. Set it"
                + " again to the job's last committed checkpoint, or use a new job id", info,
                CommitId.watermarkKey(jobId), partition.getValues(), marked.getAsLong(), jobId));
          }
        }
      }
      return OptionalLong.empty();
    } catch (TException | RuntimeException e) {
      throw new IOException("Cannot read the watermark of job " + jobId + " from table " + info + ": "
          + e.getMessage(), e);
    }
  }

  /**
   * Claims epoch + 1 with a compare-and-swap on {@code lakecommit.version} (retried on conflict, bounded), then
   * finishes or undoes the job's unfinished commit intents as the new epoch, oldest first: before the caller reads
   * the watermark or stages anything.
   */
  @Override
  public synchronized RunEpoch claimEpoch(JobId jobId, String run) throws IOException {
    RunEpoch claimed;
    try {
      context.fencing().of(context.client());   // asked before the claim reads the table: the probe changes it
      claimed = retry.call("claiming a run epoch of job " + jobId + " in " + name(), () -> claimOnce(jobId, run));
    } catch (IOException | RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IOException("Cannot claim a run epoch of job " + jobId + " in table " + name() + ": "
          + e.getMessage(), e);
    }
    LOG.info("Job {} claimed {} in {}", jobId, claimed, name());
    recovery.recover(jobId, claimed.epoch());
    return claimed;
  }

  private RunEpoch claimOnce(JobId jobId, String run) throws TException, TableParameters.ConflictException {
    HiveTable info = context.table();
    Table read = context.client().getTable(info.database(), info.name());
    Map<String, String> params = read.getParameters() == null ? Map.of() : read.getParameters();
    String held = params.get(RunEpoch.key(jobId));
    long current = held == null ? 0 : RunEpoch.parse(jobId, held).epoch();
    RunEpoch claimed = new RunEpoch(current + 1, run);
    Table changed = read.deepCopy();
    if (changed.getParameters() == null) {
      changed.setParameters(new HashMap<>());
    }
    changed.getParameters().put(RunEpoch.key(jobId), claimed.value());
    changed.getParameters().putIfAbsent(TableParameters.TABLE_ID_KEY, UUID.randomUUID().toString());
    TableParameters.swap(context.client(), context.fencing().of(context.client()), read, changed);
    return claimed;
  }

  @Override
  public synchronized Optional<RunEpoch> currentEpoch(JobId jobId) throws IOException {
    Table table = read("run epoch of job " + jobId);
    String held = table.getParameters() == null ? null : table.getParameters().get(RunEpoch.key(jobId));
    return held == null ? Optional.empty() : Optional.of(RunEpoch.parse(jobId, held));
  }

  @Override
  public java.util.List<String> listStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch)
      throws IOException {
    try {
      return new StagingCleaner(io, layout).listStaged(jobId, checkpointId, minEpoch, maxEpoch);
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  @Override
  public long deleteStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
    long deleted;
    try {
      deleted = new StagingCleaner(io, layout).deleteStaged(jobId, checkpointId, minEpoch, maxEpoch);
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    PendingUploads.abortStaged(context.storage().fs(), context.table().baseLocation(), layout, jobId, checkpointId,
        minEpoch, maxEpoch);
    return deleted;
  }

  @Override
  public long deleteStagedOfEarlierAttempts(JobId jobId, long checkpointId, long epoch, int attempt)
      throws IOException {
    try {
      return new StagingCleaner(io, layout).deleteStagedOfEarlierAttempts(jobId, checkpointId, epoch, attempt);
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  /** What is still staged for checkpoints at or below the job's watermark: the commit moved their files out. */
  @Override
  public List<String> committedLeftovers(JobId jobId) throws IOException {
    OptionalLong committed = lastCommittedCheckpoint(jobId);
    if (committed.isEmpty()) {
      return List.of();
    }
    try {
      return new StagingCleaner(io, layout).listStagedUpTo(jobId, committed.getAsLong());
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  @Override
  public long deleteCommittedLeftovers(JobId jobId) throws IOException {
    List<String> leftovers = committedLeftovers(jobId);
    new StagingCleaner(io, layout).delete(jobId, leftovers);
    OptionalLong committed = lastCommittedCheckpoint(jobId);
    if (committed.isPresent()) {
      // Uploads of a committed checkpoint still in progress were never part of it (a failed writer attempt's).
      long watermark = committed.getAsLong();
      PendingUploads.abortStaged(context.storage().fs(), context.table().baseLocation(), layout, jobId,
          checkpoint -> checkpoint <= watermark, 0, Long.MAX_VALUE);
    }
    return leftovers.size();
  }

  @Override
  public java.util.SortedMap<String, JobState> jobs() throws IOException {
    Table table = read("jobs");
    return JobState.fromProperties(name(), table.getParameters() == null ? Map.of() : table.getParameters());
  }

  private Table read(String what) throws IOException {
    HiveTable info = context.table();
    try {
      return context.client().getTable(info.database(), info.name());
    } catch (TException | RuntimeException e) {
      throw new IOException("Cannot read the " + what + " of table " + info + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    try {
      context.client().close();
    } finally {
      try {
        context.storage().close();
      } finally {
        io.close();
      }
    }
  }
}
