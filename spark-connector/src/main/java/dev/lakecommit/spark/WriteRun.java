package dev.lakecommit.spark;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.SupportsCommitProperties;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.staging.WriterManifest;
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
 * One write of one or more DataFrames as one commit {@code (job, checkpoint)} of a {@link TargetRun}, driven from
 * the driver: look the commit up in the target (done already: nothing to run), let Spark's tasks stage files named
 * with the run's epoch (a Spark job per DataFrame, their writers numbered one after another), then combine the
 * manifests of the successful task attempts of all of them into one commit, fenced at the run's epoch: one table's
 * snapshot, or one cut over several tables. A write that fails before its commit could land deletes what its run
 * staged for it, and nothing else.
 *
 * @param <M> what one task reports
 * @param <A> the sink's combined commit
 */
final class WriteRun<M extends WriterManifest, A> {
  private static final Logger LOG = LoggerFactory.getLogger(WriteRun.class);

  /** One DataFrame of the write and the target its rows go to. */
  record Part(SinkRecipe target, Dataset<Row> data) {}

  private final String describe;
  private final List<Part> parts;
  private final SinkRecipe.Opened<M, A> opened;
  private final TargetRun run;
  private final CommitId commitId;
  private final RetryPolicy retry;
  private final Map<String, String> commitProperties;
  private final List<M> manifests = new ArrayList<>();

  /** The writer index of the first task of the next DataFrame. */
  private int nextWriter;
  private boolean commitAttempted;
  private boolean stagedDeletable = true;

  private WriteRun(String describe, List<Part> parts, SinkRecipe.Opened<M, A> opened, TargetRun run,
      long checkpointId, RetryPolicy retry, Map<String, String> commitProperties) {
    this.describe = describe;
    this.parts = List.copyOf(parts);
    this.opened = opened;
    this.run = run;
    this.commitId = new CommitId(run.jobId(), checkpointId);
    this.retry = retry;
    this.commitProperties = Map.copyOf(commitProperties);
  }

  /**
   * Writes {@code data} as the commit {@code (run's job, checkpointId)} of {@code target}, at most once.
   *
   * @param commitProperties properties the commit sets in its own transaction (empty: none); the sink's committer
   *     must support them ({@link SupportsCommitProperties})
   * @throws IllegalStateException if the commit failed or the run was fenced; the message says whether the staged
   *     files were kept
   */
  static WriteResult execute(SinkRecipe target, SinkRecipe.Opened<?, ?> opened, Dataset<Row> data, TargetRun run,
      long checkpointId, RetryPolicy retry, Map<String, String> commitProperties) {
    return execute(target.describe(), List.of(new Part(target, data)), opened, run, checkpointId, retry,
        commitProperties);
  }

  /**
   * Writes every part as one commit {@code (run's job, checkpointId)}, at most once: each part's rows staged by its
   * own Spark job, all of them committed together by {@code opened}'s committer.
   *
   * @param describe the target as a whole, for messages
   */
  static WriteResult execute(String describe, List<Part> parts, SinkRecipe.Opened<?, ?> opened, TargetRun run,
      long checkpointId, RetryPolicy retry, Map<String, String> commitProperties) {
    return new WriteRun<>(describe, parts, opened, run, checkpointId, retry, commitProperties).execute();
  }

  private WriteResult execute() {
    OptionalLong committed;
    try {
      committed = run.lastCommitted();
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read the commits of job " + commitId.jobId() + " from " + describe
          + ": " + e.getMessage(), e);
    }
    if (committed.isPresent() && committed.getAsLong() >= commitId.checkpointId()) {
      LOG.info("{} of {} is already committed (last committed checkpoint {}); nothing written", commitId, describe,
          committed.getAsLong());
      return result(WriteResult.Status.ALREADY_COMMITTED, 0, 0);
    }
    boolean done = false;
    try {
      for (Part part : parts) {
        stage(part);
      }
      WriteResult result = commitManifests();
      done = true;
      return result;
    } finally {
      // Spark's own failures (SparkException) are checked exceptions that Java does not see thrown here
      if (!done) {
        deleteStaged();
      }
    }
  }

  /** Runs the Spark job that stages one part's rows; its tasks' manifests join the write's. */
  private void stage(Part part) {
    String handle = LakecommitSource.register(new PartWrite(this, part));
    try {
      part.data().write().format(LakecommitSource.class.getName()).option(LakecommitSource.HANDLE, handle)
          .mode(SaveMode.Append).save();
    } catch (Exception e) { // SparkException among them, checked and not declared
      String fenced = run.fencedMessage("Write of " + commitId + " to " + describe);
      if (fenced != null) {
        throw new IllegalStateException(fenced + ". The failure it hit: " + e, e);
      }
      throw e;
    } finally {
      LakecommitSource.unregister(handle);
    }
  }

  /** Runs on the driver once every part's tasks committed. */
  private WriteResult commitManifests() {
    if (manifests.isEmpty()) {
      LOG.info("Nothing to commit for {} of {}: no rows", commitId, describe);
      return result(WriteResult.Status.NOTHING_WRITTEN, 0, 0);
    }
    long files = manifests.stream().mapToLong(WriterManifest::fileCount).sum();
    long records = manifests.stream().mapToLong(WriterManifest::recordCount).sum();
    CommitOutcome outcome;
    try (SinkAggregatedCommitter<M, A> committer = opened.committing().createAggregatedCommitter()) {
      run.fence(committer);
      if (!commitProperties.isEmpty()) {
        if (!(committer instanceof SupportsCommitProperties properties)) {
          throw new IllegalArgumentException("The sink of " + describe + " cannot set table properties with its"
              + " commits (" + commitProperties.keySet() + ")");
        }
        properties.commitProperties(commitProperties);
      }
      A combined = committer.combine(commitId, manifests);
      commitAttempted = true;
      stagedDeletable = false;
      outcome = run.settle(commitId.checkpointId(), retry.commit("commit of " + commitId + " to " + describe,
          () -> committer.commit(combined)));
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot commit " + commitId + " to " + describe + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while committing " + commitId + " to " + describe
          + "; its staged files are kept, run the write again to settle it", e);
    }
    if (outcome instanceof CommitOutcome.Committed c) {
      LOG.info("Committed {} to {} as {} ({} files, {} records from {} tasks, run epoch {})", commitId, describe,
          c.targetVersion(), files, records, manifests.size(), run.epoch());
      return result(WriteResult.Status.COMMITTED, files, records);
    } else if (outcome instanceof CommitOutcome.AlreadyCommitted a) {
      LOG.info("{} of {} was already committed ({}); nothing changed", commitId, describe, a.reason());
      return result(WriteResult.Status.ALREADY_COMMITTED, 0, 0);
    }
    Throwable cause = cause(outcome);
    // Fatal (a fenced run's refusal among them): never committed, so this run's files may go.
    stagedDeletable = outcome.stagedFilesDeletable();
    throw new IllegalStateException("Commit of " + commitId + " to " + describe + " failed ("
        + outcome.getClass().getSimpleName() + "): " + cause.getMessage()
        + (stagedDeletable ? "" : ". Its staged files are kept; run the same write again to settle it"), cause);
  }

  /** After a failure: deletes what this run staged for the write, unless its commit may have landed. */
  private void deleteStaged() {
    if (commitAttempted && !stagedDeletable) {
      LOG.warn("Write of {} to {} failed after its commit was attempted; staged files are kept (the commit may"
          + " have been applied)", commitId, describe);
      return;
    }
    try {
      // Only this run's epoch: a newer run of the job may be staging the same checkpoint now.
      run.deleteOwn(commitId.checkpointId() - 1);
    } catch (IOException | RuntimeException e) {
      LOG.warn("Could not delete the staged files of failed write {} to {} (run epoch {}); the next run of the job"
          + " deletes them: {}", commitId, describe, run.epoch(), e.toString());
    }
  }

  private M deserialize(SinkRecipe.Opened<?, ?> part, StagedMessage staged) {
    try {
      @SuppressWarnings("unchecked") // every part of a write is a sink of the one kind that commits them
      M manifest = (M) VersionedSerialization.fromBytes(part.sink().commitInfoSerializer(), staged.manifest());
      return manifest;
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

  /** The Spark write of one part: its tasks stage, the driver collects their manifests. */
  static final class PartWrite implements BatchWrite {
    private final WriteRun<?, ?> write;
    private final Part part;

    private PartWrite(WriteRun<?, ?> write, Part part) {
      this.write = write;
      this.part = part;
    }

    String describe() {
      return part.target().describe();
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      int first = write.nextWriter;
      write.nextWriter = Math.addExact(first, info.numPartitions());
      return new StagingWriterFactory(part.target(), part.data().schema(), write.commitId.jobId(),
          write.commitId.checkpointId(), write.run.epoch(), first, info.numPartitions());
    }

    @Override
    public boolean useCommitCoordinator() {
      // One attempt per partition may commit its task: exactly one manifest per partition reaches the driver.
      return true;
    }

    /** Runs on the driver once every partition's task of this part committed. */
    @Override
    public void commit(WriterCommitMessage[] messages) {
      collect(write, messages);
    }

    private <M extends WriterManifest> void collect(WriteRun<M, ?> into, WriterCommitMessage[] messages) {
      try (SinkCache.Lease sink = SinkCache.open(part.target(), part.data().schema())) {
        for (WriterCommitMessage message : messages) {
          StagedMessage staged = (StagedMessage) message;
          if (staged != null && staged.manifestBytes().isPresent()) {
            into.manifests.add(into.deserialize(sink.opened(), staged));
          }
        }
      }
    }

    /** The write deletes what its run staged once Spark gives up on it (see {@link WriteRun#execute}). */
    @Override
    public void abort(WriterCommitMessage[] messages) {
      LOG.debug("Spark aborted the write of {} to {}", write.commitId, describe());
    }
  }
}
