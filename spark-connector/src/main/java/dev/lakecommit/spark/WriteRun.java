package dev.lakecommit.spark;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitLookup;
import dev.lakecommit.core.SupportsStagingCleanup;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.staging.StagingManifest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One write of a DataFrame as one commit {@code (job, checkpoint)}, driven from the driver: look the commit up in
 * the table (done already: nothing to run), delete what earlier runs of the same commit staged, let Spark's tasks
 * stage files, then combine the manifests of the successful task attempts into one commit.
 *
 * @param <A> the sink's combined commit
 */
final class WriteRun<A> implements BatchWrite {
  private static final Logger LOG = LoggerFactory.getLogger(WriteRun.class);

  private final Target target;
  private final Target.Opened<A> opened;
  private final Dataset<Row> data;
  private final CommitId commitId;
  private final RetryPolicy retry;

  private boolean commitAttempted;
  private boolean stagedDeletable = true;
  private WriteResult result;

  private WriteRun(Target target, Target.Opened<A> opened, Dataset<Row> data, CommitId commitId,
      RetryPolicy retry) {
    this.target = target;
    this.opened = opened;
    this.data = data;
    this.commitId = commitId;
    this.retry = retry;
  }

  /**
   * Writes {@code data} as the commit {@code (jobId, checkpointId)} of {@code target}, at most once.
   *
   * @param deleteLeftoversFirst whether to delete what earlier runs staged above the last committed checkpoint
   *     before writing (it lists the job's staging prefix): needed after a start or a failure, not between
   *     successful micro-batches of one run
   *
   * @throws IllegalStateException if the commit failed; the message says whether the staged files were kept
   */
  static WriteResult execute(Target target, Dataset<Row> data, JobId jobId, long checkpointId, RetryPolicy retry,
      boolean deleteLeftoversFirst) {
    return create(SinkCache.open(target, data.schema()), target, data, new CommitId(jobId, checkpointId), retry)
        .execute(deleteLeftoversFirst);
  }

  private static <A> WriteRun<A> create(Target.Opened<A> opened, Target target, Dataset<Row> data,
      CommitId commitId, RetryPolicy retry) {
    return new WriteRun<>(target, opened, data, commitId, retry);
  }

  String describe() {
    return target.describe();
  }

  private WriteResult execute(boolean deleteLeftoversFirst) {
    OptionalLong committed = lastCommitted();
    if (committed.isPresent() && committed.getAsLong() >= commitId.checkpointId()) {
      LOG.info("{} of {} is already committed (last committed checkpoint {}); nothing written", commitId,
          target.describe(), committed.getAsLong());
      return result(WriteResult.Status.ALREADY_COMMITTED, 0, 0);
    }
    if (deleteLeftoversFirst) {
      // Nothing above the last committed checkpoint is pending: whatever is staged there is an earlier run's.
      deleteStagedAfter(committed.orElse(0));
    }
    String handle = LakecommitSource.register(this);
    try {
      data.write().format(LakecommitSource.class.getName()).option(LakecommitSource.HANDLE, handle)
          .mode(SaveMode.Append).save();
    } finally {
      LakecommitSource.unregister(handle);
    }
    if (result == null) {
      throw new IllegalStateException("Spark finished the write of " + commitId + " to " + target.describe()
          + " without committing it");
    }
    return result;
  }

  @Override
  public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
    return new StagingWriterFactory(target, data.schema(), commitId.jobId(), commitId.checkpointId(),
        info.numPartitions());
  }

  @Override
  public boolean useCommitCoordinator() {
    // One attempt per partition may commit its task: exactly one manifest per partition reaches the driver.
    return true;
  }

  /** Runs on the driver once every partition's task committed. */
  @Override
  public void commit(WriterCommitMessage[] messages) {
    List<StagingManifest> manifests = new ArrayList<>();
    Set<Integer> attempts = new HashSet<>();
    for (WriterCommitMessage message : messages) {
      StagedMessage staged = (StagedMessage) message;
      if (staged != null && staged.manifestBytes().isPresent()) {
        manifests.add(deserialize(staged));
        attempts.add(staged.attempt());
      }
    }
    if (manifests.isEmpty()) {
      LOG.info("Nothing to commit for {} of {}: no rows", commitId, target.describe());
      result = result(WriteResult.Status.NOTHING_WRITTEN, 0, 0);
      return;
    }
    long files = manifests.stream().mapToLong(m -> m.files().size()).sum();
    long records = manifests.stream().mapToLong(StagingManifest::recordCount).sum();
    CommitOutcome outcome;
    try (SinkAggregatedCommitter<StagingManifest, A> committer = opened.committing().createAggregatedCommitter()) {
      A combined = committer.combine(commitId, manifests);
      commitAttempted = true;
      stagedDeletable = false;
      outcome = retry.commit("commit of " + commitId + " to " + target.describe(),
          () -> committer.commit(combined));
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot commit " + commitId + " to " + target.describe() + ": "
          + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while committing " + commitId + " to " + target.describe()
          + "; its staged files are kept, run the write again to settle it", e);
    }
    if (outcome instanceof CommitOutcome.Committed c) {
      LOG.info("Committed {} to {} as {} ({} files, {} records from {} partitions)", commitId, target.describe(),
          c.targetVersion(), files, records, manifests.size());
      new LeftoverSweep(opened).deleteOtherAttempts(commitId, attempts);
      result = result(WriteResult.Status.COMMITTED, files, records);
    } else if (outcome instanceof CommitOutcome.AlreadyCommitted a) {
      LOG.info("{} of {} was already committed ({}); nothing changed", commitId, target.describe(), a.reason());
      result = result(WriteResult.Status.ALREADY_COMMITTED, 0, 0);
    } else {
      stagedDeletable = outcome.stagedFilesDeletable();
      Throwable cause = cause(outcome);
      throw new IllegalStateException("Commit of " + commitId + " to " + target.describe() + " failed ("
          + outcome.getClass().getSimpleName() + "): " + cause.getMessage()
          + (stagedDeletable ? "" : ". Its staged files are kept; run the same write again to settle it"), cause);
    }
  }

  /** Runs on the driver when the job failed or {@link #commit} threw. */
  @Override
  public void abort(WriterCommitMessage[] messages) {
    if (commitAttempted && !stagedDeletable) {
      LOG.warn("Write of {} to {} failed after its commit was attempted; staged files are kept (the commit may"
          + " have been applied)", commitId, target.describe());
      return;
    }
    try {
      OptionalLong committed = lastCommitted();
      if (committed.isEmpty() || committed.getAsLong() < commitId.checkpointId()) {
        deleteStagedAfter(commitId.checkpointId() - 1);
      }
    } catch (RuntimeException e) {
      LOG.warn("Could not delete the staged files of failed write {} to {}; the next run of the write deletes"
          + " them: {}", commitId, target.describe(), e.toString());
    }
  }

  private StagingManifest deserialize(StagedMessage staged) {
    try {
      return VersionedSerialization.fromBytes(opened.sink().commitInfoSerializer(), staged.manifest());
    } catch (IOException e) {
      throw new UncheckedIOException("Corrupt staging manifest of partition " + staged.partition() + " (attempt "
          + staged.attempt() + ") of " + commitId + ": " + e.getMessage(), e);
    }
  }

  private OptionalLong lastCommitted() {
    try (SinkAggregatedCommitter<StagingManifest, A> committer = opened.committing().createAggregatedCommitter()) {
      if (!(committer instanceof SupportsCommitLookup lookup)) {
        throw new IllegalArgumentException("The sink of " + target.describe() + " cannot look up its commits;"
            + " the Spark adapter needs that to skip a write that is already committed");
      }
      return lookup.lastCommittedCheckpoint(commitId.jobId());
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read the commits of job " + commitId.jobId() + " from "
          + target.describe() + ": " + e.getMessage(), e);
    }
  }

  private void deleteStagedAfter(long checkpointId) {
    if (opened.sink() instanceof SupportsStagingCleanup cleanup) {
      try {
        long deleted = cleanup.deleteStagedAfter(commitId.jobId(), checkpointId);
        if (deleted > 0) {
          LOG.info("Deleted {} files that earlier runs of job {} staged above checkpoint {} in {}", deleted,
              commitId.jobId(), checkpointId, target.describe());
        }
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot delete staged leftovers of job " + commitId.jobId() + " in "
            + target.describe() + ": " + e.getMessage(), e);
      }
    }
  }

  private WriteResult result(WriteResult.Status status, long files, long records) {
    return new WriteResult(commitId.jobId().value(), commitId.checkpointId(), status, files, records);
  }

  private static Throwable cause(CommitOutcome outcome) {
    if (outcome instanceof CommitOutcome.Fatal f) {
      return f.cause();
    } else if (outcome instanceof CommitOutcome.Retryable r) {
      return r.cause();
    }
    return ((CommitOutcome.Unknown) outcome).cause();
  }
}
