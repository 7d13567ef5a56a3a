package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitProperties;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingManifest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.api.InvalidObjectException;
import org.apache.hadoop.hive.metastore.api.InvalidOperationException;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.thrift.TException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Combines the writers' manifests of a checkpoint into one {@link HiveCommittable} and commits it to the Hive
 * table exactly once (see {@link CommitAttempt} for the steps). One attempt per {@link #commit} call; the runtime's
 * retry policy retries what is retryable, and every attempt starts with the idempotency check.
 */
final class HiveAggregatedCommitter
    implements SinkAggregatedCommitter<StagingManifest, HiveCommittable>,
        SupportsCommitProperties {
  private static final Logger LOG = LoggerFactory.getLogger(HiveAggregatedCommitter.class);

  private final CommitContext context;
  private final StagingLayout layout;
  private final CommitIntents intents;
  private final Map<JobId, Long> epochs = new ConcurrentHashMap<>();
  /** Set with the watermark of every commit ({@link SupportsCommitProperties}). */
  private volatile Map<String, String> commitProperties = Map.of();

  /**
   * @param intents where the table's intents are, for lookups (also when the context's are test-only disabled)
   */
  HiveAggregatedCommitter(CommitContext context, StagingLayout layout, CommitIntents intents) {
    this.context = context;
    this.layout = layout;
    this.intents = intents;
  }

  /** From now on every attempt for the job checks that the table still holds {@code epoch} (see CommitAttempt). */
  @Override
  public void fence(JobId jobId, long epoch) {
    if (epoch < 1) {
      throw new IllegalArgumentException(String.format("Invalid run epoch of job %s: %s (must be >= 1)", jobId,
          epoch));
    }
    epochs.put(jobId, epoch);
  }

  @Override
  public void commitProperties(Map<String, String> properties) {
    for (String key : properties.keySet()) {
      if (key.startsWith(CommitId.WATERMARK_KEY_PREFIX) || key.startsWith(RunEpoch.EPOCH_KEY_PREFIX)) {
        throw new IllegalArgumentException(String.format("Invalid commit property %s for table %s: watermarks and"
            + " run epochs are the committer's own", key, context.table()));
      }
    }
    this.commitProperties = Map.copyOf(properties);
  }

  @Override
  public Map<String, String> currentProperties() throws IOException {
    HiveTable table = context.table();
    try {
      Map<String, String> parameters = context.client().getTable(table.database(), table.name()).getParameters();
      return parameters == null ? Map.of() : Map.copyOf(parameters);
    } catch (org.apache.thrift.TException e) {
      throw new IOException("Cannot read the parameters of " + table + ": " + e.getMessage(), e);
    }
  }

  /** Conflicts this committer has seen: a racing writer added a partition or changed the table first. */
  int conflicts() {
    return context.conflicts().get();
  }

  @Override
  public HiveCommittable combine(CommitId commitId, List<StagingManifest> infos) {
    List<StagingManifest> sorted = new ArrayList<>(infos);
    sorted.sort(Comparator.comparingInt(StagingManifest::writerIndex));
    return new HiveCommittable(commitId, sorted);
  }

  @Override
  public CommitOutcome commit(HiveCommittable committable) {
    CommitId id = committable.commitId();
    long start = System.nanoTime();
    CommitAttempt attempt = new CommitAttempt(context, committable, epochs.getOrDefault(id.jobId(), 0L), null)
        .properties(commitProperties);
    CommitOutcome outcome;
    try {
      outcome = attempt.run();
    } catch (FencedException e) {
      LOG.warn("Commit of {} to {} refused: {}", id, context.table(), e.getMessage());
      return CommitOutcome.fatal(e);
    } catch (TableParameters.ConflictException e) {
      context.conflicts().incrementAndGet();
      LOG.info("Commit of {} to {} conflicted with another writer; will retry: {}", id, context.table(),
          e.getMessage());
      return CommitOutcome.retryable(e);
    } catch (FatalCommitException | NoSuchObjectException | InvalidObjectException | InvalidOperationException
        | IllegalArgumentException | IllegalStateException e) {
      return CommitOutcome.fatal(new IllegalStateException(String.format(
          "Cannot commit %s to table %s: %s", id, context.table(), e.getMessage()), e));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return attempt.failedWhileSwapping() ? settle(attempt, id, e) : CommitOutcome.retryable(e);
    } catch (TException | IOException | RuntimeException e) {
      return attempt.failedWhileSwapping() ? settle(attempt, id, e) : CommitOutcome.retryable(e);
    }
    long millis = (System.nanoTime() - start) / 1_000_000;
    if (outcome instanceof CommitOutcome.Committed committed) {
      LOG.info("Committed {} to {} ({} records): {} in {} ms", id, context.table(), committable.recordCount(),
          committed.targetVersion(), millis);
    } else {
      LOG.info("{} is already in {} ({}); skipped", id, context.table(),
          ((CommitOutcome.AlreadyCommitted) outcome).reason());
    }
    // Every staged file of this commit is in the table. Its checkpoint's staging directory can still hold files of
    // the next commit: a Flink writer names its files after a provisional checkpoint id, at most the id of the
    // commit that reports them (LakecommitWriter), so only the directories left empty are deleted. A recursive
    // delete here lost a later commit's staged file after a restart (FlinkKafkaHiveProcessIT, seed 1701).
    context.storage().deleteEmptyDirectoriesQuietly(new Path(layout.checkpointPrefix(id.jobId(), id.checkpointId())));
    return outcome;
  }

  /** Settles a watermark swap of unknown effect by reading the table back; never by guessing. */
  private CommitOutcome settle(CommitAttempt attempt, CommitId id, Exception cause) {
    HiveTable table = context.table();
    try {
      // The watermark alone: this commit's own intent is unfinished until it is known.
      OptionalLong watermark = TableParameters.committed(
          context.client().getTable(table.database(), table.name()).getParameters(), id.jobId());
      if (watermark.isPresent() && watermark.getAsLong() >= id.checkpointId()) {
        attempt.deleteIntent();
        LOG.warn("Recording {} in {} failed with {} but the table holds it: committed", id, context.table(),
            cause.toString());
        return CommitOutcome.committed("settled by reading back: watermark " + watermark.getAsLong());
      }
      LOG.warn("Recording {} in {} failed with {} and the table does not hold it: will retry", id,
          context.table(), cause.toString());
      return CommitOutcome.retryable(cause);
    } catch (TException | RuntimeException readBack) {
      cause.addSuppressed(readBack);
      LOG.warn("Recording {} in {} failed with {} and the table cannot be read back: state unknown", id,
          context.table(), cause.toString());
      return CommitOutcome.unknown(cause);
    }
  }

  @Override
  public CommitId commitId(HiveCommittable committable) {
    return committable.commitId();
  }

  /**
   * A staged file of a restored pending commit that is gone, unless the commit's intent exists (its files may be
   * moved already: the claim of the run finishes it before this is asked).
   */
  @Override
  public Optional<String> missingStaged(HiveCommittable committable) throws IOException {
    if (intents.list(committable.commitId().jobId()).stream()
        .anyMatch(s -> s.checkpointId() == committable.commitId().checkpointId())) {
      return Optional.empty();
    }
    for (StagedFile file : (Iterable<StagedFile>) committable.files()::iterator) {
      if (!context.storage().fs().exists(new Path(file.path()))) {
        return Optional.of(file.path());
      }
    }
    return Optional.empty();
  }

  @Override
  public void close() {
    try {
      context.client().close();
    } finally {
      context.storage().close();
    }
  }
}
