package dev.lakecommit.spark;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.SupportsCommitProperties;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.staging.StagingManifest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
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
 * One write of a DataFrame as one commit {@code (job, checkpoint)} of a {@link TargetRun}, driven from the driver:
 * look the commit up in the table (done already: nothing to run), let Spark's tasks stage files named with the
 * run's epoch, then combine the manifests of the successful task attempts into one commit, fenced at the run's
 * epoch. A write that fails before its commit could land deletes what its run staged for it, and nothing else.
 *
 * @param <A> the sink's combined commit
 */
final class WriteRun<A> implements BatchWrite {
  private static final Logger LOG = LoggerFactory.getLogger(WriteRun.class);

  private final SinkRecipe target;
  private final SinkRecipe.Opened<A> opened;
  private final Dataset<Row> data;
  private final TargetRun run;
  private final CommitId commitId;
  private final RetryPolicy retry;
  private final Map<String, String> commitProperties;

  private boolean commitAttempted;
  private boolean stagedDeletable = true;
  private WriteResult result;
  private RuntimeException commitFailure;

  private WriteRun(SinkRecipe target, SinkRecipe.Opened<A> opened, Dataset<Row> data, TargetRun run, long checkpointId,
      RetryPolicy retry, Map<String, String> commitProperties) {
    this.target = target;
    this.opened = opened;
    this.data = data;
    this.run = run;
    this.commitId = new CommitId(run.jobId(), checkpointId);
    this.retry = retry;
    this.commitProperties = Map.copyOf(commitProperties);
  }

  /**
   * Writes {@code data} as the commit {@code (run's job, checkpointId)} of {@code target}, at most once.
   *
   * @param commitProperties table properties the commit sets in its own transaction (empty: none); the sink's
   *     committer must support them ({@link SupportsCommitProperties})
   * @throws IllegalStateException if the commit failed or the run was fenced; the message says whether the staged
   *     files were kept
   */
  static WriteResult execute(SinkRecipe target, SinkRecipe.Opened<?> opened, Dataset<Row> data, TargetRun run,
      long checkpointId, RetryPolicy retry, Map<String, String> commitProperties) {
    return create(opened, target, data, run, checkpointId, retry, commitProperties).execute();
  }

  private static <A> WriteRun<A> create(SinkRecipe.Opened<A> opened, SinkRecipe target, Dataset<Row> data, TargetRun run,
      long checkpointId, RetryPolicy retry, Map<String, String> commitProperties) {
    return new WriteRun<>(target, opened, data, run, checkpointId, retry, commitProperties);
  }

  String describe() {
    return target.describe();
  }

  private WriteResult execute() {
    OptionalLong committed;
    try {
      committed = run.lastCommitted();
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read the commits of job " + commitId.jobId() + " from "
          + target.describe() + ": " + e.getMessage(), e);
    }
    if (committed.isPresent() && committed.getAsLong() >= commitId.checkpointId()) {
      LOG.info("{} of {} is already committed (last committed checkpoint {}); nothing written", commitId,
          target.describe(), committed.getAsLong());
      return result(WriteResult.Status.ALREADY_COMMITTED, 0, 0);
    }
    String handle = LakecommitSource.register(this);
    try {
      data.write().format(LakecommitSource.class.getName()).option(LakecommitSource.HANDLE, handle)
          .mode(SaveMode.Append).save();
    } catch (RuntimeException e) {
      if (commitFailure != null) {
        // What the commit threw, even where Spark wraps it: its message says what happened to the staged files.
        if (e != commitFailure) {
          commitFailure.addSuppressed(e);
        }
        throw commitFailure;
      }
      String fenced = run.fencedMessage("Write of " + commitId + " to " + target.describe());
      if (fenced != null) {
        throw new IllegalStateException(fenced + ". The failure it hit: " + e, e);
      }
      throw e;
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
    return new StagingWriterFactory(target, data.schema(), commitId.jobId(), commitId.checkpointId(), run.epoch(),
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
    try {
      commitManifests(messages);
    } catch (RuntimeException e) {
      commitFailure = e;
      throw e;
    }
  }

  private void commitManifests(WriterCommitMessage[] messages) {
    List<StagingManifest> manifests = new ArrayList<>();
    for (WriterCommitMessage message : messages) {
      StagedMessage staged = (StagedMessage) message;
      if (staged != null && staged.manifestBytes().isPresent()) {
        manifests.add(deserialize(staged));
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
      run.fence(committer);
      if (!commitProperties.isEmpty()) {
        if (!(committer instanceof SupportsCommitProperties properties)) {
          throw new IllegalArgumentException("The sink of " + target.describe() + " cannot set table properties"
              + " with its commits (" + commitProperties.keySet() + ")");
        }
        properties.commitProperties(commitProperties);
      }
      A combined = committer.combine(commitId, manifests);
      commitAttempted = true;
      stagedDeletable = false;
      outcome = run.settle(commitId.checkpointId(), retry.commit("commit of " + commitId + " to "
          + target.describe(), () -> committer.commit(combined)));
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot commit " + commitId + " to " + target.describe() + ": "
          + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while committing " + commitId + " to " + target.describe()
          + "; its staged files are kept, run the write again to settle it", e);
    }
    if (outcome instanceof CommitOutcome.Committed c) {
      LOG.info("Committed {} to {} as {} ({} files, {} records from {} partitions, run epoch {})", commitId,
          target.describe(), c.targetVersion(), files, records, manifests.size(), run.epoch());
      result = result(WriteResult.Status.COMMITTED, files, records);
    } else if (outcome instanceof CommitOutcome.AlreadyCommitted a) {
      LOG.info("{} of {} was already committed ({}); nothing changed", commitId, target.describe(), a.reason());
      result = result(WriteResult.Status.ALREADY_COMMITTED, 0, 0);
    } else {
      Throwable cause = cause(outcome);
      // Fatal (a fenced run's refusal among them): never committed, so this run's files may go.
      stagedDeletable = outcome.stagedFilesDeletable();
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
      // Only this run's epoch: a newer run of the job may be staging the same checkpoint now.
      run.deleteOwn(commitId.checkpointId() - 1);
    } catch (IOException | RuntimeException e) {
      LOG.warn("Could not delete the staged files of failed write {} to {} (run epoch {}); the next run of the job"
          + " deletes them: {}", commitId, target.describe(), run.epoch(), e.toString());
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
