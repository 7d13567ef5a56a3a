package dev.lakecommit.core.runtime;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.testing.Audit;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.DirectoryTable;
import dev.lakecommit.core.testing.DirectoryTableSink;
import dev.lakecommit.core.testing.RangeSource;
import dev.lakecommit.core.testing.SimulatedCrash;
import java.io.IOException;
import java.nio.file.Path;
import dev.lakecommit.core.Sink;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToIntBiFunction;

/**
 * Runs a job over the reference sink, "kills" it as a {@link CrashSchedule} says, restarts it from what was
 * persisted (new objects, same directories) until a life runs to the end, and audits the table.
 */
public final class CrashHarness {
  private static final int MAX_LIVES = 20;

  /**
   * The job and the unsafe switches that must make the audit fail.
   *
   * @param maxUncommitted the job's {@code maxUncommittedCheckpoints}: 0 commits synchronously, K pipelines
   */
  public record Config(
      long records,
      int parallelism,
      long checkpointEvery,
      int rowsPerFile,
      boolean skipIdempotencyCheck,
      boolean commitBeforePersist,
      RestoreBehindPolicy restoreBehind,
      int maxUncommitted) {

    /** Synchronous commits. */
    public Config(long records, int parallelism, long checkpointEvery, int rowsPerFile, boolean skipIdempotencyCheck,
        boolean commitBeforePersist, RestoreBehindPolicy restoreBehind) {
      this(records, parallelism, checkpointEvery, rowsPerFile, skipIdempotencyCheck, commitBeforePersist,
          restoreBehind, 0);
    }

    public static Config small() {
      return new Config(600, 3, 53, 20, false, false, RestoreBehindPolicy.FAIL);
    }

    public Config withSkipIdempotencyCheck() {
      return new Config(records, parallelism, checkpointEvery, rowsPerFile, true, commitBeforePersist,
          restoreBehind, maxUncommitted);
    }

    public Config withCommitBeforePersist(RestoreBehindPolicy policy) {
      return new Config(records, parallelism, checkpointEvery, rowsPerFile, skipIdempotencyCheck, true, policy,
          maxUncommitted);
    }

    /** Pipelined commits: at most {@code k} persisted checkpoints wait for their commits (0: synchronous). */
    public Config withMaxUncommitted(int k) {
      return new Config(records, parallelism, checkpointEvery, rowsPerFile, skipIdempotencyCheck,
          commitBeforePersist, restoreBehind, k);
    }

    /** Roughly how many writes and checkpoints one uninterrupted life makes: bounds for random schedules. */
    public int writesPerLife() {
      return (int) records;
    }

    public int checkpointsPerLife() {
      return (int) Math.max(1, records / checkpointEvery);
    }
  }

  /** How the runs went and what the table holds. */
  public record Outcome(int lives, int crashes, Audit audit, List<JobResult> completed, Throwable failure) {
    public boolean exact() {
      return failure == null && audit.exact();
    }
  }

  private CrashHarness() {}

  /** The reference sink over a directory table. */
  public static Outcome run(Path dir, Config config, CrashSchedule schedule) throws IOException {
    DirectoryTable table = new DirectoryTable(dir.resolve("table"));
    return run(dir.resolve("checkpoints"), config, schedule,
        crashes -> new DirectoryTableSink(table, crashes, config.rowsPerFile())
            .skipIdempotencyCheck(config.skipIdempotencyCheck()),
        new RangeSource(config.records()), () -> table.read().keys());
  }

  /**
   * Any sink: {@code sinkForLife} makes the sink of one process life (new objects, same storage), and
   * {@code tableKeys} reads the keys a reader of the target sees.
   */
  public static <IN> Outcome run(Path checkpoints, Config config, CrashSchedule schedule,
      Function<CrashSchedule, Sink<IN, ?, ?>> sinkForLife, CheckpointedSource<IN> source,
      Supplier<Collection<Long>> tableKeys) throws IOException {
    return run(checkpoints, config, schedule, sinkForLife, null, source, tableKeys);
  }

  /**
   * As {@link #run(Path, Config, CrashSchedule, Function, CheckpointedSource, Supplier)}, each life's records routed
   * to its writers by {@code routerForLife} (asked right after the life's sink is made; null: round robin).
   */
  public static <IN> Outcome run(Path checkpoints, Config config, CrashSchedule schedule,
      Function<CrashSchedule, Sink<IN, ?, ?>> sinkForLife, Supplier<ToIntBiFunction<IN, Integer>> routerForLife,
      CheckpointedSource<IN> source, Supplier<Collection<Long>> tableKeys) throws IOException {
    JobId jobId = JobId.of("crash-job");
    List<JobResult> completed = new ArrayList<>();
    Throwable failure = null;
    int lives = 0;
    while (lives < MAX_LIVES) {
      lives++;
      schedule.newLife();
      StandaloneJob.Builder<IN> builder = StandaloneJob.builder(sinkForLife.apply(schedule), source);
      if (routerForLife != null) {
        builder.router(routerForLife.get());
      }
      StandaloneJob<IN> job = builder
          .jobId(jobId)
          .checkpointStore(new CheckpointStore(new LocalBlobStore(checkpoints)))
          .parallelism(config.parallelism())
          .checkpointEveryRecords(config.checkpointEvery())
          .queueCapacity(8)
          .commitRetry(RetryPolicy.builder().maxAttempts(3).initialBackoff(java.time.Duration.ZERO).build())
          .restoreBehind(config.restoreBehind())
          .listener(new CrashingListener(schedule))
          .unsafeCommitBeforePersist(config.commitBeforePersist())
          .maxUncommittedCheckpoints(config.maxUncommitted())
          .build();
      try {
        completed.add(job.run());
        break;
      } catch (SimulatedCrash crash) {
        // the process "died": start over with new objects
      } catch (JobFailedException | IOException e) {
        failure = e;
        break;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException(e);
      }
    }
    return new Outcome(lives, schedule.crashes(), Audit.of(config.records(), tableKeys.get()), completed,
        failure);
  }

  /** Crashes the runtime at its own steps. */
  private record CrashingListener(CrashSchedule schedule) implements JobListener {
    @Override
    public void onCheckpointPrepared(long checkpointId) {
      schedule.reach(CrashSchedule.PREPARED, checkpointId);
    }

    @Override
    public void onCheckpointPersisted(long checkpointId) {
      schedule.reach(CrashSchedule.PERSISTED, checkpointId);
    }

    @Override
    public void onCheckpointComplete(long checkpointId, long recordCount) {
      schedule.reach(CrashSchedule.COMPLETE, checkpointId);
    }

    @Override
    public void onCommitted(long checkpointId, CommitOutcome outcome, long durationNanos) {}
  }
}
