package dev.lakecommit.core.runtime;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsStagingCleanup;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.WriterContext;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One run of a {@link StandaloneJob}: restore, read and checkpoint to the end of input, commit. */
final class JobRun<IN, C, S, A> {
  private static final Logger LOG = LoggerFactory.getLogger(JobRun.class);

  private final StandaloneJob<IN> job;
  private final Sink<IN, C, S> sink;
  private final CommitPath<C, A> path;
  /** The sink's target, or null for a sink without one (no epoch claim; the store's attempt is the epoch). */
  private final CommitTarget target;
  private final int attempt;
  private final JobId jobId;
  private final TreeMap<Long, A> pending = new TreeMap<>();
  private final TreeMap<Long, byte[]> pendingBytes = new TreeMap<>();
  /** The source's commit position of each pending checkpoint that has one (CheckpointedSource#commitPosition). */
  private final TreeMap<Long, String> pendingPositions = new TreeMap<>();
  /** Whether the committer was given commit properties (a source position) that a later commit must clear. */
  private boolean positionSet;

  /** This run's epoch: claimed in the target, or the store's attempt number for a sink without target. */
  private long epoch;
  private String targetIdentity = "";
  private long nextCheckpointId;
  private long lastCheckpointId;
  private long recordCount;
  private long recordsRead;
  private long roundRobin;
  private int checkpoints;
  private int commits;
  private int skippedCommits;
  private int commitRetries;
  private long commitRetryNanos;
  private StallWatchdog watchdog;
  private volatile WriterPool<IN, C, S> activePool;
  private boolean persisting;
  private Exception failure;

  JobRun(StandaloneJob<IN> job, Sink<IN, C, S> sink, CommitPath<C, A> path, CommitTarget target, int attempt) {
    this.job = job;
    this.sink = sink;
    this.path = path;
    this.target = target;
    this.attempt = attempt;
    this.jobId = job.jobId;
  }

  JobResult run() throws IOException, InterruptedException {
    Thread coordinator = Thread.currentThread();
    watchdog = StallWatchdog.start(job.stallTimeout, jobId.value(), job.errorProbe, () -> {
      coordinator.interrupt();
      WriterPool<IN, C, S> pool = activePool;
      if (pool != null) {
        pool.interrupt();
      }
    });
    try {
      return runWatched();
    } catch (IOException | RuntimeException | InterruptedException e) {
      JobFailedException fenced = fencedInstead(e);
      if (fenced != null) {
        throw fenced;
      }
      if (watchdog.stalled() && failure == null) {
        Thread.interrupted();
        throw new JobFailedException("Job " + jobId + " " + watchdog.describe() + endpointsText()
            + ". Every completed checkpoint is kept in " + job.store.location() + " (last: " + lastCheckpointId
            + "); fix the cause and run the same job again to resume.", e);
      }
      if (e instanceof JobFailedException failed && job.endpoints != null) {
        throw new JobFailedException(failed.getMessage() + endpointsText(), failed.getCause());
      }
      throw e;
    } finally {
      watchdog.close();
      if (watchdog.stalled()) {
        Thread.interrupted();
      }
    }
  }

  /**
   * A run that failed because a newer run of the job took over (its files deleted under it, its commit refused)
   * says so first: the failure it hit is a consequence. Null if the target still holds this run's epoch.
   */
  private JobFailedException fencedInstead(Exception e) {
    if (target == null || epoch == 0) {
      return null;
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof FencedException) {
        return null;
      }
    }
    try {
      Optional<RunEpoch> now = target.currentEpoch(jobId);
      if (now.isPresent() && now.get().epoch() > epoch) {
        return new JobFailedException("Job " + jobId + " stopped: a newer run of the same job holds "
            + now.get() + " in " + target.name() + ", so this run (epoch " + epoch + ") is fenced and commits"
            + " nothing more; it deleted only files it staged itself. The failure it hit: " + e, e);
      }
    } catch (IOException | RuntimeException check) {
      e.addSuppressed(check);
    }
    return null;
  }

  private String endpointsText() {
    return job.endpoints == null ? "" : " (endpoints: " + job.endpoints + ")";
  }

  private JobResult runWatched() throws IOException, InterruptedException {
    watchdog.phase("restoring from " + job.store.location());
    CheckpointRecord restored = restore();
    long restoredId = restored == null ? 0 : restored.checkpointId();
    commitPending();
    job.listener.onStart(attempt, restoredId, recordCount);

    WriterPool<IN, C, S> pool = new WriterPool<>(jobId.value(), writers(restored), job.queueCapacity);
    activePool = pool;
    watchdog.progressed("reading and writing records after checkpoint " + restoredId);
    boolean finished = false;
    try (CheckpointedSource.SourceReader<IN> reader =
        job.source.open(restored == null ? null : restored.sourcePosition())) {
      pool.start();
      byte[] persistedPosition = restored == null ? null : restored.sourcePosition();
      long sinceCheckpoint = 0;
      long checkpointStart = System.nanoTime();
      while (true) {
        IN record = reader.poll(untilNextCheckpoint(checkpointStart));
        if (record == null) {
          if (reader.ended()) {
            break;
          }
          // An idle stream is no stall; a checkpoint by interval still commits what was read before it went idle.
          watchdog.progressed();
          if (intervalElapsed(checkpointStart)) {
            if (sinceCheckpoint > 0 || !Arrays.equals(persistedPosition, reader.position())) {
              persistedPosition = checkpoint(pool, reader.position(), sinceCheckpoint);
              sinceCheckpoint = 0;
            }
            checkpointStart = System.nanoTime();
          }
          continue;
        }
        pool.send(route(record), record);
        watchdog.progressed();
        recordsRead++;
        sinceCheckpoint++;
        if (sinceCheckpoint >= job.checkpointEveryRecords || intervalElapsed(checkpointStart)) {
          persistedPosition = checkpoint(pool, reader.position(), sinceCheckpoint);
          sinceCheckpoint = 0;
          checkpointStart = System.nanoTime();
        }
      }
      if (sinceCheckpoint > 0 || !Arrays.equals(persistedPosition, reader.position())) {
        checkpoint(pool, reader.position(), sinceCheckpoint);
      }
      pool.finish();
      finished = true;
    } catch (Error crash) {
      // A crash (or a simulated one): nothing more runs; leftovers are cleaned on the next start.
      pool.stop();
      throw crash;
    } catch (IOException | RuntimeException | InterruptedException e) {
      if (watchdog.stalled()) {
        // the watchdog's interrupt is handled: the writers must still stop and delete what they staged
        Thread.interrupted();
      } else {
        // a failure of its own: reported as it is; the stall timeout now bounds the clean-up
        failure = e;
        watchdog.progressed("cleaning up after " + e);
      }
      try {
        pool.stop();
        abortWriters(pool);
        deleteStagedOfFailedCheckpoint();
      } catch (InterruptedException cut) {
        e.addSuppressed(cut);
      }
      throw e;
    } finally {
      if (finished) {
        closeWriters(pool);
      }
    }
    return new JobResult(attempt, restoredId, lastCheckpointId, checkpoints, commits, skippedCommits,
        recordsRead, recordCount, commitRetries, commitRetryNanos);
  }

  /**
   * Claims this run's epoch in the target (fencing every older run of the job), finds the newest complete
   * checkpoint that no fenced run wrote, checks it against the target, sets up ids and pending commits, and deletes
   * what older runs staged above it. The claim comes first: whatever an older run persists or commits after it is
   * fenced, and whatever it did before is seen here.
   */
  private CheckpointRecord restore() throws IOException {
    if (target != null) {
      RunEpoch claimed = target.claimEpoch(jobId, RunEpoch.thisProcess() + ", attempt " + attempt);
      epoch = claimed.epoch();
      path.fence(jobId, epoch);
      targetIdentity = target.identity();
      LOG.info("Job {} runs as {} in {}", jobId, claimed, target.name());
    } else {
      epoch = attempt;
    }
    List<CheckpointStore.Stored> stored = job.store.checkpoints();
    NavigableMap<Long, Long> epochStarts = job.store.epochStarts(targetIdentity);
    OptionalLong watermark = lastCommitted();
    CheckpointRecord record = null;
    int readable = 0;
    for (CheckpointStore.Stored candidate : stored) {
      if (CheckpointStore.fencedOut(candidate, epochStarts)) {
        LOG.info("Skipping {}: written by run epoch {} after a newer run had fenced it", job.store.describe(candidate),
            candidate.epoch());
        continue;
      }
      readable++;
      try {
        record = job.store.load(jobId, candidate);
        break;
      } catch (CorruptCheckpointException e) {
        checkFallbackIsSafe(e, candidate.checkpointId(), watermark);
      }
    }
    if (record == null && readable > 0) {
      throw new JobFailedException("No complete checkpoint of job " + jobId + " in " + job.store.location()
          + " (all of " + job.store.checkpointIds() + " are corrupt); refusing to start from scratch. Restore the"
          + " files or use a new job id and checkpoint location.");
    }
    record = checkTargetIdentity(record);
    long restoredId = record == null ? 0 : record.checkpointId();
    job.store.markEpochStart(epoch, restoredId, targetIdentity);
    long committed = watermark.orElse(0);
    if (committed > restoredId) {
      String message = "The target already holds checkpoint " + committed + " of job " + jobId
          + ", newer than the checkpoint restored from " + job.store.location() + " ("
          + (restoredId == 0 ? "none" : restoredId) + ")";
      if (job.restoreBehind == RestoreBehindPolicy.FAIL) {
        throw new JobFailedException(message + ": going on would write committed rows again. Restore the newer"
            + " checkpoint, use a new job id, or choose the CONTINUE restore policy to write the rows after"
            + " checkpoint " + restoredId + " again.");
      }
      LOG.warn("{}; continuing above checkpoint {} as configured: rows after checkpoint {} are written again",
          message, committed, restoredId);
    }
    nextCheckpointId = Math.max(Math.max(restoredId, committed), stored.isEmpty() ? 0 : stored.get(0).checkpointId())
        + 1;
    lastCheckpointId = restoredId;
    if (record != null) {
      recordCount = record.recordCount();
      for (Map.Entry<Long, byte[]> entry : record.pendingCommits().entrySet()) {
        A committable = VersionedSerialization.fromBytes(path.serializer(), entry.getValue());
        if (entry.getKey() > committed) {
          checkStagedFilesExist(entry.getKey(), committable);
        }
        pending.put(entry.getKey(), committable);
        pendingBytes.put(entry.getKey(), entry.getValue());
        String commitPosition = record.commitPositions().get(entry.getKey());
        if (commitPosition != null) {
          pendingPositions.put(entry.getKey(), commitPosition);
        }
      }
      LOG.info("Restored job {} from checkpoint {} ({} records read so far, {} pending commits), attempt {}",
          jobId, restoredId, recordCount, pending.size(), attempt);
    }
    long keep = Math.max(restoredId, committed);
    long deleted = 0;
    if (target != null) {
      // Older runs' files above what is kept can never be committed: those runs are fenced (DESIGN.md rule 11).
      deleted = target.deleteStaged(jobId, keep, 0, epoch);
    } else if (sink instanceof SupportsStagingCleanup cleanup) {
      deleted = cleanup.deleteStagedAfter(jobId, keep);
    }
    if (deleted > 0) {
      LOG.info("Deleted {} staged files of job {} above checkpoint {}", deleted, jobId, keep);
    }
    return record;
  }

  private OptionalLong lastCommitted() throws IOException {
    if (target != null) {
      return target.lastCommittedCheckpoint(jobId);
    }
    return path.canLookUp() ? path.lastCommitted(jobId) : OptionalLong.empty();
  }

  /** A checkpoint taken against another table (dropped and created again under the name) is never committed. */
  private CheckpointRecord checkTargetIdentity(CheckpointRecord record) {
    if (record == null || record.targetIdentity().isEmpty() || targetIdentity.isEmpty()
        || record.targetIdentity().equals(targetIdentity)) {
      return record;
    }
    String message = "Checkpoint " + record.checkpointId() + " of job " + jobId + " in " + job.store.location()
        + " was taken against another table than " + target.name() + " is now (identity "
        + record.targetIdentity() + ", now " + targetIdentity + "; was the table dropped and created again?)";
    if (!job.freshStartOnNewTarget) {
      throw new JobFailedException(message + ". Nothing was committed: its pending commits belong to the old"
          + " table. Start the job afresh on the new table (it reads its input from the start), or use a new job"
          + " id or checkpoint location.");
    }
    LOG.warn("{}; starting afresh from the beginning of the input, as configured", message);
    return null;
  }

  private void checkStagedFilesExist(long checkpointId, A committable) throws IOException {
    Optional<String> missing = path.missingStaged(committable);
    if (missing.isPresent()) {
      throw new JobFailedException("Pending checkpoint " + checkpointId + " of job " + jobId + " in "
          + job.store.location() + " is not in the target, and its staged file " + missing.get()
          + " no longer exists: committing it would make a commit without its rows. Nothing was committed."
          + " Restore the file, or start the job afresh with a new job id.");
    }
  }

  private void checkFallbackIsSafe(CorruptCheckpointException e, long id, OptionalLong watermark) {
    if (!path.canLookUp()) {
      throw new JobFailedException(e.getMessage() + ". The sink cannot tell whether checkpoint " + id
          + " was committed, so the job does not fall back to an older one; restore the file or use a new job id.",
          e);
    }
    if (watermark.isPresent() && watermark.getAsLong() >= id) {
      throw new JobFailedException(e.getMessage() + ". Checkpoint " + id + " is committed in the target (last"
          + " committed: " + watermark.getAsLong() + "), so an older checkpoint would write its rows again;"
          + " restore the file or use a new job id.", e);
    }
    LOG.warn("{}; checkpoint {} was never committed, falling back to an older checkpoint", e.getMessage(), id);
  }

  private List<SinkWriter<IN, C, S>> writers(CheckpointRecord restored) throws IOException {
    int n = job.parallelism;
    List<SinkWriter<IN, C, S>> writers = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      WriterContext context = new WriterContext(jobId, i, n, attempt, nextCheckpointId - 1, epoch);
      if (restored == null) {
        writers.add(sink.createWriter(context));
      } else {
        List<S> states = new ArrayList<>();
        List<byte[]> stored = restored.writerStates();
        for (int j = i; j < stored.size(); j += n) {
          states.add(VersionedSerialization.fromBytes(sink.writerStateSerializer(), stored.get(j)));
        }
        writers.add(sink.restoreWriter(context, states));
      }
    }
    return writers;
  }

  private int route(IN record) {
    if (job.router == null) {
      return (int) (roundRobin++ % job.parallelism);
    }
    int writer = job.router.applyAsInt(record, job.parallelism);
    if (writer < 0 || writer >= job.parallelism) {
      throw new IllegalStateException(
          String.format("Router chose writer %s of %s for record %s", writer, job.parallelism, record));
    }
    return writer;
  }

  /** How long a stream's reader may wait for a record before the next checkpoint by interval is due. */
  private java.time.Duration untilNextCheckpoint(long since) {
    long max = java.time.Duration.ofSeconds(1).toNanos();
    if (job.checkpointInterval == null) {
      return java.time.Duration.ofNanos(max);
    }
    long left = job.checkpointInterval.toNanos() - (System.nanoTime() - since);
    return java.time.Duration.ofNanos(Math.max(1_000_000, Math.min(max, left)));
  }

  private boolean intervalElapsed(long since) {
    return job.checkpointInterval != null && System.nanoTime() - since >= job.checkpointInterval.toNanos();
  }

  private byte[] checkpoint(WriterPool<IN, C, S> pool, byte[] position, long records)
      throws IOException, InterruptedException {
    long id = nextCheckpointId++;
    watchdog.phase("preparing checkpoint " + id + " (writers closing their staged files)");
    List<WriterPool.Prepared<C, S>> prepared = pool.checkpoint(id);
    watchdog.progressed("persisting checkpoint " + id + " to " + job.store.location());
    job.listener.onCheckpointPrepared(id);

    List<C> infos = new ArrayList<>();
    List<byte[]> states = new ArrayList<>();
    for (WriterPool.Prepared<C, S> writer : prepared) {
      writer.info().ifPresent(infos::add);
      states.add(VersionedSerialization.toBytes(sink.writerStateSerializer(), writer.state()));
    }
    if (!infos.isEmpty()) {
      A combined = path.combine(new CommitId(jobId, id), infos);
      pending.put(id, combined);
      pendingBytes.put(id, VersionedSerialization.toBytes(path.serializer(), combined));
      String commitPosition = job.source.commitPosition(position);
      if (commitPosition != null) {
        pendingPositions.put(id, commitPosition);
      }
    }
    recordCount += records;
    CheckpointRecord record = new CheckpointRecord(jobId, id, Math.toIntExact(epoch), recordCount, position, states,
        pendingBytes, targetIdentity, pendingPositions);
    if (job.unsafeCommitBeforePersist) {
      commitPending();
    }
    persisting = true;
    job.store.persist(record);
    persisting = false;
    checkpoints++;
    lastCheckpointId = id;
    watchdog.progressed("checkpoint " + id + " persisted");
    job.listener.onCheckpointPersisted(id);
    commitPending();
    job.listener.onCheckpointComplete(id, recordCount);
    return position;
  }

  /** Commits every pending checkpoint, oldest first, each until its outcome is final. */
  private void commitPending() throws InterruptedException {
    while (!pending.isEmpty()) {
      // With several pending, the committer may merge the oldest ones into one commit carrying the newest id.
      CommitPath.Next<A> next = path.next(pending);
      long id = next.lastCheckpointId();
      recordPosition(id);
      long start = System.nanoTime();
      watchdog.phase("committing checkpoint " + id);
      int[] attempts = {0};
      long[] firstFailure = {Long.MIN_VALUE};
      boolean[] unknown = {false};
      CommitOutcome outcome = job.commitRetry.commit("commit of checkpoint " + id + " of job " + jobId, () -> {
        int attemptNo = ++attempts[0];
        CommitOutcome result = path.commit(next.committable());
        if (result.isRetryable()) {
          Throwable cause = result instanceof CommitOutcome.Retryable r
              ? r.cause() : ((CommitOutcome.Unknown) result).cause();
          commitRetries++;
          unknown[0] |= result instanceof CommitOutcome.Unknown;
          if (firstFailure[0] == Long.MIN_VALUE) {
            firstFailure[0] = System.nanoTime();
          }
          watchdog.error(cause);
          watchdog.phase("retrying the commit of checkpoint " + id + " (attempt " + attemptNo + " failed)");
          job.listener.onCommitAttemptFailed(id, attemptNo, cause);
        }
        return result;
      });
      long duration = System.nanoTime() - start;
      if (firstFailure[0] != Long.MIN_VALUE) {
        commitRetryNanos += System.nanoTime() - firstFailure[0];
      }
      if (unknown[0] && outcome.isRetryable()) {
        outcome = settle(id, outcome);
      }
      if (outcome instanceof CommitOutcome.Committed c) {
        commits++;
        LOG.info("Committed checkpoint {} of job {} as {} in {} ms", id, jobId, c.targetVersion(),
            duration / 1_000_000);
      } else if (outcome instanceof CommitOutcome.AlreadyCommitted a) {
        skippedCommits++;
        LOG.info("Checkpoint {} of job {} was already committed ({}); skipped", id, jobId, a.reason());
      } else if (outcome instanceof CommitOutcome.Fatal f && f.cause() instanceof FencedException fenced) {
        throw new JobFailedException("Commit of checkpoint " + id + " of job " + jobId + " refused: "
            + fenced.getMessage() + ". This run committed nothing of checkpoint " + id + " and deletes only files"
            + " it staged itself.", fenced);
      } else if (outcome instanceof CommitOutcome.Fatal f) {
        throw new JobFailedException("Commit of checkpoint " + id + " of job " + jobId + " failed: "
            + f.cause().getMessage() + ". The checkpoint and its staged files are kept in "
            + job.store.location() + "; fix the cause and run the job again.", f.cause());
      } else if (outcome instanceof CommitOutcome.Retryable r && !unknown[0]) {
        throw gaveUp(id, r.cause());
      } else {
        Throwable cause = outcome instanceof CommitOutcome.Retryable r ? r.cause()
            : ((CommitOutcome.Unknown) outcome).cause();
        throw new JobFailedException("The outcome of the commit of checkpoint " + id + " of job " + jobId
            + " is unknown after " + attempts[0] + " attempts (the target did not answer whether an attempt landed; "
            + "last: " + cause.getMessage() + "). It is committed once either way: the next run of the job reads the"
            + " target and commits it only if it did not land. The checkpoint is durable in " + job.store.location()
            + ".", cause);
      }
      for (long covered : new ArrayList<>(pending.headMap(id, true).keySet())) {
        pending.remove(covered);
        pendingBytes.remove(covered);
        pendingPositions.remove(covered);
        watchdog.progressed("committed checkpoint " + covered);
        job.listener.onCommitted(covered, outcome, duration);
      }
    }
  }

  /**
   * The commit of checkpoint {@code id} sets the source position it was taken at in the table, next to the
   * watermark (CommitId#sourcePositionKey); a commit without one sets none.
   */
  private void recordPosition(long id) {
    String position = pendingPositions.get(id);
    if (position != null) {
      positionSet = path.commitProperties(Map.of(CommitId.sourcePositionKey(jobId), position));
    } else if (positionSet) {
      path.commitProperties(Map.of());
      positionSet = false;
    }
  }

  /**
   * After an attempt of unknown outcome, asks the target once whether the checkpoint landed: committed if the
   * target holds it; otherwise, or if the target cannot answer, the outcome stays as it was.
   */
  private CommitOutcome settle(long id, CommitOutcome outcome) {
    try {
      OptionalLong committed = lastCommitted();
      if (committed.isPresent() && committed.getAsLong() >= id) {
        LOG.info("Checkpoint {} of job {} landed in an attempt of unknown outcome (the target holds checkpoint {})",
            id, jobId, committed.getAsLong());
        return CommitOutcome.alreadyCommitted("an attempt of unknown outcome landed");
      }
    } catch (IOException | RuntimeException e) {
      LOG.debug("Could not settle the commit of checkpoint {} of job {}: {}", id, jobId, e.toString());
    }
    return outcome;
  }

  private JobFailedException gaveUp(long id, Throwable cause) {
    return new JobFailedException("Could not commit checkpoint " + id + " of job " + jobId + " after "
        + job.commitRetry.maxAttempts() + " attempts: " + cause.getMessage() + ". The checkpoint is durable in "
        + job.store.location() + "; run the job again to retry the commit.", cause);
  }

  /**
   * Writers that prepared the failed checkpoint handed their staged files to the coordinator, which will never
   * persist them: delete everything staged above the last durable checkpoint now rather than on the next start.
   * Not when the failure hit the checkpoint's own persist: it may be durable after all.
   */
  private void deleteStagedOfFailedCheckpoint() {
    if (persisting || (target == null && !(sink instanceof SupportsStagingCleanup))) {
      return;
    }
    try {
      // Only this run's own files: a newer run of the job may be staging under the same prefixes.
      long deleted = target != null
          ? target.deleteStaged(jobId, lastCheckpointId, epoch, epoch)
          : ((SupportsStagingCleanup) sink).deleteStagedAfter(jobId, lastCheckpointId);
      LOG.info("Deleted {} files staged by job {} after its last durable checkpoint {}", deleted, jobId,
          lastCheckpointId);
    } catch (IOException | RuntimeException e) {
      LOG.warn("Could not delete the files job {} staged after checkpoint {}; the next start deletes them: {}",
          jobId, lastCheckpointId, e.toString());
    }
  }

  private void abortWriters(WriterPool<IN, C, S> pool) {
    for (SinkWriter<IN, C, S> writer : pool.writers()) {
      try {
        writer.abortPrepare();
        writer.close();
      } catch (IOException | RuntimeException e) {
        LOG.warn("Could not abort a writer of job {}; its staged files are removed on the next start: {}",
            jobId, e.toString());
      }
    }
  }

  private void closeWriters(WriterPool<IN, C, S> pool) throws IOException {
    IOException failure = null;
    for (SinkWriter<IN, C, S> writer : pool.writers()) {
      try {
        writer.close();
      } catch (IOException e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }
}
