package dev.lakecommit.core.runtime;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.TargetRun;
import java.io.IOException;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;
import java.util.function.ToIntBiFunction;

/**
 * Runs a job on its own, without an engine: reads a {@link CheckpointedSource} on the calling thread, feeds N
 * writer threads, and takes checkpoints by record count, by interval and at the end of the input. Each checkpoint
 * is persisted durably before anything of it is committed; commits run oldest first, synchronously or, with
 * {@link Builder#maxUncommittedCheckpoints}, on a committer thread while the next checkpoints are read. Running
 * the same job again (same job id and checkpoint store) resumes from its last complete checkpoint.
 *
 * <pre>{@code
 * JobResult result = StandaloneJob.builder(sink, source)
 *     .jobId(JobId.of("ingest-7"))
 *     .checkpointStore(new CheckpointStore(new LocalBlobStore(dir)))
 *     .parallelism(4)
 *     .checkpointEveryRecords(100_000)
 *     .build()
 *     .run();
 * }</pre>
 *
 * @param <IN> records read and written
 */
public final class StandaloneJob<IN> {
  /** Commits are synchronous unless a job asks for pipelining: see {@link Builder#maxUncommittedCheckpoints}. */
  public static final int DEFAULT_MAX_UNCOMMITTED_CHECKPOINTS = 0;

  final Sink<IN, ?, ?> sink;
  final CheckpointedSource<IN> source;
  final JobId jobId;
  final CheckpointStore store;
  final int parallelism;
  final long checkpointEveryRecords;
  final Duration checkpointInterval;
  final int queueCapacity;
  final ToIntBiFunction<IN, Integer> router;
  final RetryPolicy commitRetry;
  final RestoreBehindPolicy restoreBehind;
  final JobListener listener;
  final boolean unsafeCommitBeforePersist;
  final boolean freshStartOnNewTarget;
  final Duration stallTimeout;
  final String endpoints;
  final Supplier<String> errorProbe;
  final int maxUncommittedCheckpoints;
  final Duration committerStopTimeout;

  private StandaloneJob(Builder<IN> builder) {
    this.sink = builder.sink;
    this.source = builder.source;
    this.jobId = builder.jobId;
    this.store = builder.store;
    this.parallelism = builder.parallelism;
    this.checkpointEveryRecords = builder.checkpointEveryRecords;
    this.checkpointInterval = builder.checkpointInterval;
    this.queueCapacity = builder.queueCapacity;
    this.router = builder.router;
    this.commitRetry = builder.commitRetry;
    this.restoreBehind = builder.restoreBehind;
    this.listener = builder.listener;
    this.unsafeCommitBeforePersist = builder.unsafeCommitBeforePersist;
    this.freshStartOnNewTarget = builder.freshStartOnNewTarget;
    this.stallTimeout = builder.stallTimeout;
    this.endpoints = builder.endpoints;
    this.errorProbe = builder.errorProbe;
    this.maxUncommittedCheckpoints = builder.maxUncommittedCheckpoints;
    this.committerStopTimeout = builder.committerStopTimeout;
  }

  public static <IN> Builder<IN> builder(Sink<IN, ?, ?> sink, CheckpointedSource<IN> source) {
    return new Builder<>(sink, source);
  }

  /**
   * Runs the job to the end of its input.
   *
   * @throws JobFailedException if a writer, the source or a commit failed; every completed checkpoint is kept
   * @throws IOException if the checkpoint store cannot be read or written
   */
  public JobResult run() throws IOException, InterruptedException {
    int attempt = store.startAttempt();
    return runWith(sink, attempt);
  }

  private <C, S> JobResult runWith(Sink<IN, C, S> typedSink, int attempt)
      throws IOException, InterruptedException {
    try (CommitPath<C, ?> path = CommitPath.of(typedSink)) {
      if (!(typedSink instanceof SupportsTarget targets)) {
        throw new IllegalArgumentException("Sink " + typedSink.getClass().getName() + " has no target: it must"
            + " implement SupportsTarget, so that its runs are fenced and restored against what the target holds");
      }
      try (TargetRun run = TargetRun.open(targets, jobId)) {
        return new JobRun<>(this, typedSink, path, run, attempt).run();
      }
    }
  }

  /** Builder; every setting checks its argument. */
  public static final class Builder<IN> {
    private final Sink<IN, ?, ?> sink;
    private final CheckpointedSource<IN> source;
    private JobId jobId;
    private CheckpointStore store;
    private int parallelism = 1;
    private long checkpointEveryRecords = Long.MAX_VALUE;
    private Duration checkpointInterval;
    private int queueCapacity = 1024;
    private ToIntBiFunction<IN, Integer> router;
    private RetryPolicy commitRetry = RetryPolicy.defaults();
    private RestoreBehindPolicy restoreBehind = RestoreBehindPolicy.FAIL;
    private JobListener listener = JobListener.NONE;
    private boolean unsafeCommitBeforePersist;
    private boolean freshStartOnNewTarget;
    private Duration stallTimeout;
    private String endpoints;
    private Supplier<String> errorProbe;
    private int maxUncommittedCheckpoints = DEFAULT_MAX_UNCOMMITTED_CHECKPOINTS;
    private Duration committerStopTimeout = Duration.ofSeconds(30);

    private Builder(Sink<IN, ?, ?> sink, CheckpointedSource<IN> source) {
      this.sink = Objects.requireNonNull(sink, "sink");
      this.source = Objects.requireNonNull(source, "source");
    }

    public Builder<IN> jobId(JobId id) {
      this.jobId = Objects.requireNonNull(id, "jobId");
      return this;
    }

    public Builder<IN> checkpointStore(CheckpointStore checkpointStore) {
      this.store = Objects.requireNonNull(checkpointStore, "checkpointStore");
      return this;
    }

    public Builder<IN> parallelism(int writers) {
      check(writers > 0, "Invalid writer count: %s (must be > 0)", writers);
      this.parallelism = writers;
      return this;
    }

    /** Takes a checkpoint after this many records (default: only by interval and at the end of input). */
    public Builder<IN> checkpointEveryRecords(long records) {
      check(records > 0, "Invalid checkpoint record count: %s (must be > 0)", records);
      this.checkpointEveryRecords = records;
      return this;
    }

    /** Takes a checkpoint when this much time passed since the last one (checked between records). */
    public Builder<IN> checkpointInterval(Duration interval) {
      check(interval != null && interval.toNanos() > 0, "Invalid checkpoint interval: %s (must be > 0)", interval);
      this.checkpointInterval = interval;
      return this;
    }

    /** Records buffered per writer before the reader waits (back-pressure). */
    public Builder<IN> queueCapacity(int records) {
      check(records > 0, "Invalid queue capacity: %s (must be > 0)", records);
      this.queueCapacity = records;
      return this;
    }

    /** Chooses the writer of a record from the record and the writer count (default: round robin). */
    public Builder<IN> router(ToIntBiFunction<IN, Integer> chooser) {
      this.router = Objects.requireNonNull(chooser, "router");
      return this;
    }

    /** Retries of commit outcomes that may succeed later (conflicts, unknown state). */
    public Builder<IN> commitRetry(RetryPolicy policy) {
      this.commitRetry = Objects.requireNonNull(policy, "commitRetry");
      return this;
    }

    public Builder<IN> restoreBehind(RestoreBehindPolicy policy) {
      this.restoreBehind = Objects.requireNonNull(policy, "restoreBehind");
      return this;
    }

    public Builder<IN> listener(JobListener jobListener) {
      this.listener = Objects.requireNonNull(jobListener, "listener");
      return this;
    }

    /**
     * Fails the job when it makes no progress — no record read, no checkpoint persisted, no commit settled — for
     * this long (default: never). The job's threads are interrupted and {@link #run()} throws a {@link
     * JobFailedException} that names what the job was doing, the {@link #endpoints endpoints} and the last error;
     * every completed checkpoint is kept, and running the job again resumes. Choose it longer than the slowest
     * checkpoint (staging uploads of one checkpoint, one commit with its retries).
     */
    public Builder<IN> stallTimeout(Duration timeout) {
      check(timeout != null && timeout.toNanos() > 0, "Invalid stall timeout: %s (must be > 0)", timeout);
      this.stallTimeout = timeout;
      return this;
    }

    /**
     * What the job talks to (storage endpoint, catalog URI), named in its failure messages. Must not hold
     * credentials: it is printed as given.
     */
    public Builder<IN> endpoints(String description) {
      this.endpoints = Objects.requireNonNull(description, "endpoints");
      return this;
    }

    /**
     * Where a stalled job looks for the last failure when it saw none itself — e.g. the last failed request of a
     * storage client, whose retries happen inside the client. Called once, when the job stalls; may return null.
     * What it returns is printed: it must not hold credentials.
     */
    public Builder<IN> errorProbe(Supplier<String> probe) {
      this.errorProbe = Objects.requireNonNull(probe, "errorProbe");
      return this;
    }

    /**
     * When the newest checkpoint was taken against another table than the target is now (dropped and created
     * again under the same name): start afresh — read the input from the start and commit nothing of the old
     * checkpoints — instead of stopping with a message (the default). Never commits into the new table what was
     * staged for the old one.
     */
    public Builder<IN> freshStartOnNewTarget(boolean enabled) {
      this.freshStartOnNewTarget = enabled;
      return this;
    }

    /**
     * Pipelined commits: how many persisted checkpoints may wait for their commits while the job reads and writes
     * on (default {@value #DEFAULT_MAX_UNCOMMITTED_CHECKPOINTS}). With 0, each checkpoint is committed before the
     * next record is read, so reading waits for every commit. With K above 0, one committer thread commits the
     * persisted checkpoints, oldest first, while the writers go on with the next ones; at a checkpoint the job
     * waits while K are uncommitted. A slow catalog then costs throughput only when a commit takes longer than K
     * checkpoint intervals. Either way a checkpoint is durable, with its source position, before its commit
     * starts; a failed commit stops reading at the next record and fails the job with the commit's error; the end
     * of the input waits for every commit.
     */
    public Builder<IN> maxUncommittedCheckpoints(int checkpoints) {
      check(checkpoints >= 0, "Invalid uncommitted checkpoint count: %s (must be >= 0)", checkpoints);
      this.maxUncommittedCheckpoints = checkpoints;
      return this;
    }

    /** Test-only: commit before the checkpoint is persisted, which breaks exactly-once (the matrix must notice). */
    Builder<IN> unsafeCommitBeforePersist(boolean enabled) {
      this.unsafeCommitBeforePersist = enabled;
      return this;
    }

    /** Test-only: how long a stalled run waits for its interrupted committer thread (default 30 s). */
    Builder<IN> committerStopTimeout(Duration timeout) {
      check(timeout != null && !timeout.isNegative(), "Invalid committer stop timeout: %s", timeout);
      this.committerStopTimeout = timeout;
      return this;
    }

    public StandaloneJob<IN> build() {
      check(jobId != null, "Missing job id: set jobId(...)");
      check(store != null, "Missing checkpoint store: set checkpointStore(...)");
      return new StandaloneJob<>(this);
    }

    private static void check(boolean condition, String message, Object... args) {
      if (!condition) {
        throw new IllegalArgumentException(String.format(message, args));
      }
    }
  }
}
