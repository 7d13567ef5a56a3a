package dev.lakecommit.core.runtime;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.TargetRun;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One run of a {@link StandaloneJob}: restore, read and checkpoint to the end of input, commit. */
final class JobRun<IN, C, S, A> {
  private static final Logger LOG = LoggerFactory.getLogger(JobRun.class);

  private final StandaloneJob<IN> job;
  private final Sink<IN, C, S> sink;
  private final CommitPath<C, A> path;
  /** This run on the sink's target: its epoch claim, fence, watermark and sweeps. */
  private final TargetRun run;
  private final int attempt;
  private final JobId jobId;

  private long nextCheckpointId;
  private long lastCheckpointId;
  private long recordCount;
  private long recordsRead;
  private long roundRobin;
  private int checkpoints;
  private StallWatchdog watchdog;
  private volatile CheckpointCommitter<A> committer;
  private JobListener listener;
  private volatile WriterPool<IN, C, S> activePool;
  private boolean persisting;
  private Exception failure;
  /** When this run began (before its claim and restore): the earliest start of its first checkpoint interval. */
  private long started;

  JobRun(StandaloneJob<IN> job, Sink<IN, C, S> sink, CommitPath<C, A> path, TargetRun run, int attempt) {
    this.job = job;
    this.sink = sink;
    this.path = path;
    this.run = run;
    this.attempt = attempt;
    this.jobId = job.jobId;
  }

  JobResult run() throws IOException, InterruptedException {
    started = System.nanoTime();
    Thread coordinator = Thread.currentThread();
    watchdog = StallWatchdog.start(job.stallTimeout, jobId.value(), job.errorProbe, () -> {
      coordinator.interrupt();
      WriterPool<IN, C, S> pool = activePool;
      if (pool != null) {
        pool.interrupt();
      }
      CheckpointCommitter<A> commits = committer;
      if (commits != null) {
        commits.interrupt();
      }
    });
    committer = new CheckpointCommitter<>(job, path, run, watchdog);
    listener = committer.listener();
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
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof FencedException) {
        return null;
      }
    }
    String fenced = run.fencedMessage("Job " + jobId);
    return fenced == null ? null : new JobFailedException(fenced + ". The failure it hit: " + e, e);
  }

  private String endpointsText() {
    return job.endpoints == null ? "" : " (endpoints: " + job.endpoints + ")";
  }

  private JobResult runWatched() throws IOException, InterruptedException {
    watchdog.phase("restoring from " + job.store.location());
    CheckpointRecord restored = restore();
    long restoredId = restored == null ? 0 : restored.checkpointId();
    committer.commitNow(Long.MAX_VALUE);
    listener.onStart(attempt, restoredId, recordCount);

    WriterPool<IN, C, S> pool = new WriterPool<>(jobId.value(), writers(restored), job.queueCapacity);
    activePool = pool;
    watchdog.progressed("reading and writing records after checkpoint " + restoredId);
    boolean finished = false;
    try (CheckpointedSource.SourceReader<IN> reader =
        job.source.open(restored == null ? null : restored.sourcePosition())) {
      pool.start();
      committer.start();
      byte[] persistedPosition = restored == null ? null : restored.sourcePosition();
      long sinceCheckpoint = 0;
      long checkpointStart = firstIntervalStart();
      while (true) {
        IN record = reader.poll(untilNextCheckpoint(checkpointStart));
        if (record == null) {
          if (reader.ended()) {
            break;
          }
          // An idle stream is no stall, but a commit that failed or hangs meanwhile is (pipelined, nothing else
          // would notice it until the next record); a checkpoint by interval still commits what was read before.
          committer.checkFailed();
          if (!committer.waiting()) {
            watchdog.progressed();
          }
          // due by interval, or by record count at a boundary that came without a record (a transaction's end)
          if ((intervalElapsed(checkpointStart) || sinceCheckpoint >= job.checkpointEveryRecords)
              && reader.atBoundary()) {
            if (sinceCheckpoint > 0 || !Arrays.equals(persistedPosition, reader.position())) {
              persistedPosition = checkpoint(pool, reader.position(), sinceCheckpoint);
              sinceCheckpoint = 0;
            }
            checkpointStart = System.nanoTime();
          }
          continue;
        }
        committer.checkFailed();
        pool.send(route(record), record);
        watchdog.progressed();
        recordsRead++;
        sinceCheckpoint++;
        // a checkpoint that is due waits for the end of a unit the source keeps whole (a source transaction)
        if ((sinceCheckpoint >= job.checkpointEveryRecords || intervalElapsed(checkpointStart))
            && reader.atBoundary()) {
          persistedPosition = checkpoint(pool, reader.position(), sinceCheckpoint);
          sinceCheckpoint = 0;
          checkpointStart = System.nanoTime();
        }
      }
      if (sinceCheckpoint > 0 || !Arrays.equals(persistedPosition, reader.position())) {
        checkpoint(pool, reader.position(), sinceCheckpoint);
      }
      // The end of the input (or a stop asked for): every persisted checkpoint is committed before the run ends.
      committer.drain();
      committer.close();
      pool.finish();
      finished = true;
    } catch (Error crash) {
      // A crash (or a simulated one): nothing more runs; leftovers are cleaned on the next start.
      pool.stop();
      committer.close();
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
      // No commit starts after a failure; one being made ends first (a stalled one was interrupted). The watchdog
      // may interrupt a wait here (a commit that hangs): the clean-up goes on all the same.
      try {
        committer.close();
      } catch (InterruptedException cut) {
        e.addSuppressed(cut);
      }
      try {
        pool.stop();
      } catch (InterruptedException cut) {
        e.addSuppressed(cut);
      }
      abortWriters(pool);
      deleteStagedOfFailedCheckpoint();
      throw e;
    } finally {
      if (finished) {
        closeWriters(pool);
      }
    }
    return new JobResult(attempt, restoredId, lastCheckpointId, checkpoints, committer.commits(),
        committer.skippedCommits(), recordsRead, recordCount, committer.commitRetries(),
        committer.commitRetryNanos());
  }

  /**
   * Claims this run's epoch in the target (fencing every older run of the job), finds the newest complete
   * checkpoint that no fenced run wrote, checks it against the target, sets up ids and pending commits, and deletes
   * what older runs staged above it. The claim comes first: whatever an older run persists or commits after it is
   * fenced, and whatever it did before is seen here.
   */
  private CheckpointRecord restore() throws IOException {
    run.claim(RunEpoch.thisProcess() + ", attempt " + attempt);
    path.fence(run);
    List<CheckpointStore.Stored> stored = job.store.checkpoints();
    NavigableMap<Long, Long> epochStarts = job.store.epochStarts(run.identity());
    OptionalLong watermark = run.lastCommitted();
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
    job.store.markEpochStart(run.epoch(), restoredId, run.identity());
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
        committer.add(entry.getKey(), committable, entry.getValue(),
            record.commitPositions().get(entry.getKey()));
      }
      LOG.info("Restored job {} from checkpoint {} ({} records read so far, {} pending commits), attempt {}",
          jobId, restoredId, recordCount, committer.pendingCount(), attempt);
    }
    long keep = Math.max(restoredId, committed);
    // Older runs' files above what is kept can never be committed: those runs are fenced (DESIGN.md rule 11). The
    // writers have not started, so a file with this run's epoch is a leftover too (of a table created again).
    run.deleteBeforeStaging(keep);
    return record;
  }

  /** A checkpoint taken against another table (dropped and created again under the name) is never committed. */
  private CheckpointRecord checkTargetIdentity(CheckpointRecord record) {
    String identity = run.identity();
    if (record == null || record.targetIdentity().isEmpty() || identity.isEmpty()
        || record.targetIdentity().equals(identity)) {
      return record;
    }
    String message = "Checkpoint " + record.checkpointId() + " of job " + jobId + " in " + job.store.location()
        + " was taken against another table than " + run.name() + " is now (identity "
        + record.targetIdentity() + ", now " + identity + "; was the table dropped and created again?)";
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
      WriterContext context = new WriterContext(jobId, i, n, attempt, nextCheckpointId - 1, run.epoch());
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

  /**
   * Where the first checkpoint interval starts: when the run began, so that neither its restore (claim, pending
   * commits, sweep) nor a source slow to open (its brokers away as the run started) delays the first commit by more
   * than an interval; but no sooner than half an interval after the source opened, so that the first checkpoint
   * carries what it read in that half.
   */
  private long firstIntervalStart() {
    long now = System.nanoTime();
    return job.checkpointInterval == null ? now : Math.max(started, now - job.checkpointInterval.toNanos() / 2);
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
    committer.awaitRoom(nextCheckpointId);
    long id = nextCheckpointId++;
    watchdog.phase("preparing checkpoint " + id + " (writers closing their staged files)");
    List<WriterPool.Prepared<C, S>> prepared = pool.checkpoint(id);
    watchdog.progressed("persisting checkpoint " + id + " to " + job.store.location());
    listener.onCheckpointPrepared(id);

    List<C> infos = new ArrayList<>();
    List<byte[]> states = new ArrayList<>();
    for (WriterPool.Prepared<C, S> writer : prepared) {
      writer.info().ifPresent(infos::add);
      states.add(VersionedSerialization.toBytes(sink.writerStateSerializer(), writer.state()));
    }
    if (!infos.isEmpty()) {
      A combined = path.combine(new CommitId(jobId, id), infos);
      committer.add(id, combined, VersionedSerialization.toBytes(path.serializer(), combined),
          job.source.commitPosition(position));
    }
    recordCount += records;
    // Every commit whose outcome is not final yet goes into the record, also one the committer thread is making.
    CheckpointRecord record = new CheckpointRecord(jobId, id, Math.toIntExact(run.epoch()), recordCount, position,
        states, committer.pendingBytes(), run.identity(), committer.pendingPositions());
    if (job.unsafeCommitBeforePersist) {
      committer.commitNow(id);
    }
    persisting = true;
    job.store.persist(record);
    persisting = false;
    checkpoints++;
    lastCheckpointId = id;
    watchdog.progressed("checkpoint " + id + " persisted");
    listener.onCheckpointPersisted(id);
    committer.persisted(id, recordCount);
    return position;
  }

  /**
   * Writers that prepared the failed checkpoint handed their staged files to the coordinator, which will never
   * persist them: delete everything staged above the last durable checkpoint now rather than on the next start.
   * Not when the failure hit the checkpoint's own persist: it may be durable after all.
   */
  private void deleteStagedOfFailedCheckpoint() {
    if (persisting) {
      return;
    }
    try {
      // Only this run's own files: a newer run of the job may be staging under the same prefixes.
      long deleted = run.deleteOwn(lastCheckpointId);
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
    SinkWriter.closeAll(pool.writers());
  }
}
