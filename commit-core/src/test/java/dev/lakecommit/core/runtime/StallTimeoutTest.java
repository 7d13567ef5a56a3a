package dev.lakecommit.core.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.testing.ForwardingSinkWriter;
import dev.lakecommit.core.testing.Audit;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.DirectoryTable;
import dev.lakecommit.core.testing.DirectoryTableSink;
import dev.lakecommit.core.testing.RangeSource;
import dev.lakecommit.core.testing.RefManifest;
import java.io.IOException;
import java.net.ConnectException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A job that cannot make progress fails after its stall timeout with a message naming what it was doing, its
 * endpoints and the last error; it keeps every completed checkpoint, and the next run resumes. Commit retries are
 * counted and timed.
 */
class StallTimeoutTest {
  private static final JobId JOB = JobId.of("stall");
  private static final String ENDPOINTS = "catalog thrift://127.0.0.1:9 (test)";

  @TempDir Path dir;

  private DirectoryTable table() {
    return new DirectoryTable(dir.resolve("table"));
  }

  private StandaloneJob.Builder<Long> job(Sink<Long, ?, ?> sink) throws IOException {
    return StandaloneJob.builder(sink, new RangeSource(1000))
        .jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints"))))
        .parallelism(2)
        .checkpointEveryRecords(100)
        .endpoints(ENDPOINTS);
  }

  /** Retries a commit practically forever, so that only the stall timeout can end it. */
  private static RetryPolicy patientRetries() {
    return RetryPolicy.builder().maxAttempts(1_000_000).initialBackoff(Duration.ofMillis(5))
        .maxBackoff(Duration.ofMillis(20)).totalTimeout(Duration.ofHours(1)).build();
  }

  /** Synchronous and pipelined commits: pipelined, the job reads on until 2 checkpoints wait, then stalls. */
  @ParameterizedTest(name = "{0} uncommitted")
  @ValueSource(ints = {0, 2})
  void aCatalogOutageLongerThanTheStallTimeoutFailsTheJobNamingEndpointAndLastError(int uncommitted)
      throws Exception {
    OutageSink down = new OutageSink(new DirectoryTableSink(table(), CrashSchedule.none(), 30), 4, -1, null);
    long start = System.nanoTime();

    assertThatThrownBy(() -> job(down).commitRetry(patientRetries()).stallTimeout(Duration.ofMillis(800))
        .maxUncommittedCheckpoints(uncommitted).build().run())
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining("Job stall made no progress for")
        .hasMessageContaining("retrying the commit of checkpoint 4")
        .hasMessageContaining("catalog at thrift://127.0.0.1:9 refused the connection")
        .hasMessageContaining(ENDPOINTS)
        .hasMessageContaining("run the same job again to resume");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
    assertThat(down.failedAttempts.get()).isGreaterThan(3);
    assertThat(table().watermark(JOB)).hasValue(3);

    // The outage is over: the rerun commits the durable checkpoint 4 (and 5, pipelined) and goes on.
    JobResult rerun = job(new DirectoryTableSink(table(), CrashSchedule.none(), 30)).build().run();
    assertThat(rerun.restoredCheckpointId()).isEqualTo(uncommitted == 0 ? 4 : 5);
    assertThat(Audit.of(1000, table().read().keys()).exact()).isTrue();
  }

  @Test
  void aHangingWriterFailsTheJobAndItsStagedFilesAreDeleted() throws Exception {
    CountDownLatch never = new CountDownLatch(1);
    OutageSink hanging = new OutageSink(new DirectoryTableSink(table(), CrashSchedule.none(), 30), -1, 450, never);

    assertThatThrownBy(() -> job(hanging).stallTimeout(Duration.ofMillis(600)).build().run())
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining("made no progress")
        .hasMessageContaining("last error: none reported")
        .hasMessageContaining("(last: 4)");
    assertThat(table().watermark(JOB)).hasValue(4);
    try (Stream<Path> staged = Files.walk(table().root())) {
      assertThat(staged.filter(Files::isRegularFile).map(Path::toString))
          .as("files staged for checkpoint 5 are deleted when the job fails")
          .noneMatch(p -> p.contains("/staging/stall/5/"));
    }

    JobResult rerun = job(new DirectoryTableSink(table(), CrashSchedule.none(), 30)).build().run();
    assertThat(rerun.restoredCheckpointId()).isEqualTo(4);
    assertThat(Audit.of(1000, table().read().keys()).exact()).isTrue();
  }

  @Test
  void aStalledJobAsksTheErrorProbeForFailuresItCannotSee() throws Exception {
    OutageSink hanging = new OutageSink(new DirectoryTableSink(table(), CrashSchedule.none(), 30), -1, 150,
        new CountDownLatch(1));

    assertThatThrownBy(() -> job(hanging).stallTimeout(Duration.ofMillis(500))
        .errorProbe(() -> "HTTP 503 SlowDown from PUT http://127.0.0.1:9/lake").build().run())
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining("last error: HTTP 503 SlowDown from PUT http://127.0.0.1:9/lake");
  }

  @Test
  void commitRetriesAreCountedAndTimed() throws Exception {
    OutageSink flaky = new OutageSink(new DirectoryTableSink(table(), CrashSchedule.none(), 30), 2, 2, null);
    AtomicInteger told = new AtomicInteger();
    JobResult result = job(flaky).commitRetry(RetryPolicy.builder().initialBackoff(Duration.ofMillis(20)).build())
        .listener(new JobListener() {
          @Override
          public void onCommitAttemptFailed(long checkpointId, int attempt, Throwable cause) {
            assertThat(checkpointId).isEqualTo(2);
            told.incrementAndGet();
          }
        })
        .build().run();

    assertThat(result.commitRetries()).isEqualTo(2);
    assertThat(told.get()).isEqualTo(2);
    assertThat(Duration.ofNanos(result.commitRetryNanos())).isGreaterThanOrEqualTo(Duration.ofMillis(40));
    assertThat(Audit.of(1000, table().read().keys()).exact()).isTrue();
  }

  @Test
  void noStallTimeoutMeansNoWatchdog() {
    assertThatThrownBy(() -> StandaloneJob.builder(new DirectoryTableSink(table(), CrashSchedule.none(), 1),
        new RangeSource(1)).stallTimeout(Duration.ZERO))
        .hasMessageContaining("Invalid stall timeout: PT0S");
  }

  /**
   * The reference sink with an outage: commits of checkpoint {@code downAt} and later are refused (all of them,
   * or only the first {@code failures} when that is positive); or writers hang at record {@code hangAt}.
   */
  private static final class OutageSink implements Sink<Long, RefManifest, Long>,
      SupportsAggregatedCommitter<RefManifest, RefManifest>, SupportsTarget {
    private final DirectoryTableSink delegate;
    private final long downAt;
    private final long hangAt;
    private final CountDownLatch hang;
    private final AtomicInteger failedAttempts = new AtomicInteger();
    private final int failures;

    OutageSink(DirectoryTableSink delegate, long downAt, long hangAtOrFailures, CountDownLatch hang) {
      this.delegate = delegate;
      this.downAt = downAt;
      this.hang = hang;
      this.hangAt = hang == null ? -1 : hangAtOrFailures;
      this.failures = hang == null ? (int) hangAtOrFailures : -1;
    }

    @Override
    public SinkWriter<Long, RefManifest, Long> createWriter(WriterContext context) throws IOException {
      return hanging(delegate.createWriter(context));
    }

    @Override
    public SinkWriter<Long, RefManifest, Long> restoreWriter(WriterContext context, List<Long> states)
        throws IOException {
      return hanging(delegate.restoreWriter(context, states));
    }

    private SinkWriter<Long, RefManifest, Long> hanging(SinkWriter<Long, RefManifest, Long> writer) {
      return new ForwardingSinkWriter<>(writer) {
        @Override
        public void write(Long record) throws IOException {
          if (record == hangAt) {
            try {
              hang.await(); // a storage call that never returns; only an interrupt ends it
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new java.io.InterruptedIOException("interrupted while hanging");
            }
          }
          writer.write(record);
        }

      };
    }

    @Override
    public SimpleVersionedSerializer<RefManifest> commitInfoSerializer() {
      return delegate.commitInfoSerializer();
    }

    @Override
    public SimpleVersionedSerializer<Long> writerStateSerializer() {
      return delegate.writerStateSerializer();
    }

    @Override
    public SinkAggregatedCommitter<RefManifest, RefManifest> createAggregatedCommitter() throws IOException {
      SinkAggregatedCommitter<RefManifest, RefManifest> committer = delegate.createAggregatedCommitter();
      return new Refusing(committer);
    }

    @Override
    public SimpleVersionedSerializer<RefManifest> aggregatedCommitSerializer() {
      return delegate.aggregatedCommitSerializer();
    }

    @Override
    public CommitTarget openTarget() {
      return delegate.openTarget();
    }

    private final class Refusing implements SinkAggregatedCommitter<RefManifest, RefManifest> {
      private final SinkAggregatedCommitter<RefManifest, RefManifest> committer;

      Refusing(SinkAggregatedCommitter<RefManifest, RefManifest> committer) {
        this.committer = committer;
      }

      @Override
      public RefManifest combine(CommitId commitId, List<RefManifest> infos) {
        return committer.combine(commitId, infos);
      }

      @Override
      public CommitOutcome commit(RefManifest committable) {
        if (downAt > 0 && committable.checkpointId() >= downAt
            && (failures < 0 || failedAttempts.get() < failures)) {
          failedAttempts.incrementAndGet();
          return CommitOutcome.unknown(new ConnectException("catalog at thrift://127.0.0.1:9 refused the connection"));
        }
        return committer.commit(committable);
      }

      @Override
      public CommitId commitId(RefManifest committable) {
        return committer.commitId(committable);
      }

      @Override
      public void fence(JobId jobId, long epoch) {
        committer.fence(jobId, epoch);
      }
    }
  }
}
