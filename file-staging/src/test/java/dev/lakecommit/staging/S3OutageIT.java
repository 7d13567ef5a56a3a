package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.core.testing.Audit;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.DirectoryTable;
import dev.lakecommit.core.testing.DirectoryTableSink;
import dev.lakecommit.core.testing.RangeSource;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.staging.testing.FaultInjectingS3Proxy;
import dev.lakecommit.staging.testing.FaultRule;
import dev.lakecommit.staging.testing.FaultRule.Fault;
import dev.lakecommit.staging.testing.S3TestServer;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The object store goes away while a job runs: a job whose checkpoints live on S3 (written, listed and read through
 * S3FileIO, as the tool keeps them with {@code --checkpoint-dir s3://...}) meets a store that resets every
 * connection or answers 503 / 500 to every request, for a bounded time, starting when the job has committed two
 * checkpoints. With {@link S3Clients}' retries (the default of every S3FileIO the sinks and the tool open) the job
 * rides through a 60 s outage ({@code -Plong}; 20 s in the default build) and finishes exact; with Iceberg's own retry settings it stops within seconds.
 */
class S3OutageIT {
  private static final long ROWS = 400;
  private static final long CHECKPOINT_EVERY = 50;
  private static S3TestServer s3;

  @TempDir Path dir;
  private FaultInjectingS3Proxy proxy;
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

  @BeforeAll
  static void startServer() throws Exception {
    s3 = S3TestServer.start("lake");
  }

  @AfterAll
  static void stopServer() throws Exception {
    s3.close();
  }

  @AfterEach
  void stop() throws IOException {
    timer.shutdownNow();
    if (proxy != null) {
      proxy.close();
    }
  }

  /** Every request fails while the outage lasts: resets, 503 SlowDown and 500 InternalError, at random. */
  private static FaultRule outage() {
    return FaultRule.everyRequest(1.0, Fault.RESET, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR);
  }

  /**
   * The keys {@code 0 .. ROWS-1}; reading key {@code 2 x CHECKPOINT_EVERY} (two checkpoints are behind the job)
   * takes the store away for {@code outage}: every later checkpoint is written during or after it.
   */
  private CheckpointedSource<Long> source(Duration outage, AtomicLong startedAt) {
    RangeSource keys = new RangeSource(ROWS);
    return position -> {
      CheckpointedSource.SourceReader<Long> reader = keys.open(position);
      return new CheckpointedSource.SourceReader<>() {
        @Override
        public Long next() throws IOException {
          Long key = reader.next();
          if (key != null && key == 2 * CHECKPOINT_EVERY && startedAt.get() == 0) {
            startedAt.set(System.nanoTime());
            proxy.rules(outage());
            timer.schedule(() -> proxy.rules(), outage.toMillis(), TimeUnit.MILLISECONDS);
          }
          return key;
        }

        @Override
        public byte[] position() {
          return reader.position();
        }

        @Override
        public void close() {}
      };
    };
  }

  private StandaloneJob<Long> job(DirectoryTable table, FileIO io, Duration outage, AtomicLong startedAt) {
    FileIOBlobStore store = new FileIOBlobStore(io, s3.location("lake", "checkpoints/" + dir.getFileName()));
    return StandaloneJob.builder(new DirectoryTableSink(table, CrashSchedule.none(), 20), source(outage, startedAt))
        .jobId(JobId.of("outage"))
        .checkpointStore(new CheckpointStore(store))
        .parallelism(2)
        .checkpointEveryRecords(CHECKPOINT_EVERY)
        .stallTimeout(Duration.ofMinutes(5))
        .build();
  }

  @Test
  void aJobRidesThroughAStoreOutageWithTheDefaultRetries() throws Exception {
    // 20 s in the default build (twice what stops a job with Iceberg's own retries), 60 s with -Plong
    Duration outage = Duration.ofSeconds(TestScale.pick(20, 60));
    proxy = FaultInjectingS3Proxy.start(s3, 15);
    DirectoryTable table = new DirectoryTable(dir.resolve("table"));
    AtomicLong startedAt = new AtomicLong();
    long start = System.nanoTime();
    try (FileIO io = FileIOs.forLocation("s3://lake/", proxy.s3FileIOProperties(),
        new org.apache.hadoop.conf.Configuration())) {
      job(table, io, outage, startedAt).run();
    }
    long endedAt = System.nanoTime();

    Audit audit = Audit.of(ROWS, table.read().keys());
    assertThat(audit.exact()).as(audit.toString()).isTrue();
    assertThat(startedAt.get()).as("the outage began").isPositive();
    assertThat(Duration.ofNanos(endedAt - startedAt.get())).as("the job ran on after the outage")
        .isGreaterThanOrEqualTo(outage);
    assertThat(proxy.injected()).as("requests failed by the outage").isPositive();
    assertThat(proxy.retriedRequests()).as("SDK retries seen on the wire").isPositive();
    System.out.printf("S3 outage of %s s ridden through: job %.1f s, %d requests, %d failed (%d resets, %d 503, "
            + "%d 500), %d SDK retries%n", outage.toSeconds(), (endedAt - start) / 1e9, proxy.requests(),
        proxy.injected(), proxy.injected(Fault.RESET), proxy.injected(Fault.SLOW_DOWN),
        proxy.injected(Fault.INTERNAL_ERROR), proxy.retriedRequests());
  }

  /** The negative: Iceberg's own S3 client retries connection errors and 5xx within seconds. */
  @Test
  void withIcebergsOwnRetriesATenSecondOutageStopsTheJob() throws Exception {
    Duration outage = Duration.ofSeconds(10);
    proxy = FaultInjectingS3Proxy.start(s3, 16);
    DirectoryTable table = new DirectoryTable(dir.resolve("table"));
    AtomicLong startedAt = new AtomicLong();
    S3FileIO icebergDefaults = new S3FileIO();
    icebergDefaults.initialize(proxy.s3FileIOProperties());
    try (FileIO io = icebergDefaults) {
      assertThatThrownBy(() -> job(table, io, outage, startedAt).run()).isInstanceOf(Exception.class);
    }
    long failedAfter = System.nanoTime() - startedAt.get();
    assertThat(Duration.ofNanos(failedAfter)).as("failed during the outage").isLessThan(outage);
    System.out.printf("Iceberg's default S3 retries: job failed %.1f s into a %s s outage after %d SDK retries%n",
        failedAfter / 1e9, outage.toSeconds(), proxy.retriedRequests());
  }
}
