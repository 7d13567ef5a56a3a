package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.ForwardingSourceReader;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.core.testing.Audit;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.staging.testing.FaultInjectingS3Proxy;
import dev.lakecommit.staging.testing.FaultRule;
import dev.lakecommit.staging.testing.FaultRule.Fault;
import dev.lakecommit.staging.testing.S3TestServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Hive table on S3 through S3A while the store goes away: the sink's writers and committer reach the store
 * through the fault proxy, which resets every connection or answers 503 / 500 to every request for a bounded time,
 * starting when the job has read two checkpoints' worth of rows (the metastore reaches the store directly). With
 * S3A's own retry settings (Hadoop 3.4 defaults: {@code fs.s3a.retry.limit=7}, {@code fs.s3a.retry.interval=500ms},
 * exponential; {@code fs.s3a.attempts.maximum=5} SDK attempts inside each) the job rides through and the table
 * holds every row once.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class S3aOutageIT {
  private static final long ROWS = 400;
  private static final long CHECKPOINT_EVERY = 50;

  @TempDir Path dir;
  private S3TestServer s3;
  private FaultInjectingS3Proxy proxy;
  private HiveMetastoreServer hms;
  private HiveFixture fixture;
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

  @BeforeAll
  void start() throws Exception {
    String bucket = "lc-outage";
    s3 = S3TestServer.start(bucket);
    proxy = FaultInjectingS3Proxy.start(s3, 21);
    Configuration direct = s3.s3aConfiguration();
    Configuration viaProxy = proxy.s3aConfiguration();
    HiveMetastoreServer.Builder builder = HiveMetastoreServer.builder().derby();
    Map<String, String> sink = new LinkedHashMap<>();
    for (String key : S3HiveSinkIT.S3A_KEYS) {
      builder.serverConf(key, direct.get(key));
      sink.put(key, viaProxy.get(key));
    }
    sink.put("fs.s3a.create.performance", "true");
    // Never the metastore's cached file system of the same bucket, which reaches the store directly.
    sink.put("fs.s3a.impl.disable.cache", "true");
    hms = builder.start();
    fixture = new HiveFixture(hms, s3.s3aLocation(bucket, "warehouse"), sink);
  }

  @AfterAll
  void stop() throws Exception {
    timer.shutdownNow();
    if (fixture != null) {
      fixture.close();
    }
    if (hms != null) {
      hms.close();
    }
    if (proxy != null) {
      proxy.close();
    }
    if (s3 != null) {
      s3.close();
    }
  }

  private CheckpointedSource<Record> source(Duration outage, AtomicLong startedAt) {
    CheckpointedSource<Record> rows = HiveTestData.source(ROWS, HiveTestData.MIXED);
    return position -> {
      return new ForwardingSourceReader<>(rows.open(position)) {
        @Override
        protected void onRecord(Record row) {
          if ((Long) row.getField("id") == 2 * CHECKPOINT_EVERY && startedAt.get() == 0) {
            startedAt.set(System.nanoTime());
            proxy.rules(FaultRule.everyRequest(1.0, Fault.RESET, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR));
            timer.schedule(() -> proxy.rules(), outage.toMillis(), TimeUnit.MILLISECONDS);
          }
        }
      };
    };
  }

  @Test
  void aHiveJobOnS3aRidesThroughAStoreOutage() throws Exception {
    // 10 s in the default build (S3A's retries take several minutes to ride through 60 s), 60 s with -Plong
    Duration outage = Duration.ofSeconds(dev.lakecommit.core.testing.TestScale.pick(10, 60));
    String table = HiveFixture.newTable("outage");
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table)
        .createTable(HiveTestData.SCHEMA, HiveTestData.PARTITIONED).build());
    AtomicLong startedAt = new AtomicLong();
    long start = System.nanoTime();
    StandaloneJob.builder(sink, source(outage, startedAt))
        .jobId(JobId.of("s3a-outage"))
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints"))))
        .parallelism(2)
        .checkpointEveryRecords(CHECKPOINT_EVERY)
        .stallTimeout(Duration.ofMinutes(5))
        .build()
        .run();
    long endedAt = System.nanoTime();

    // Read back as the metastore reaches the store (directly, one cached file system), not through the proxy.
    Configuration direct = s3.s3aConfiguration();
    direct.set("fs.s3a.impl.disable.cache", "false");
    Audit audit = Audit.of(ROWS, TableContents.read(fixture.client(), direct, HiveFixture.DB, table).ids());
    assertThat(audit.exact()).as(audit.toString()).isTrue();
    assertThat(startedAt.get()).as("the outage began").isPositive();
    assertThat(Duration.ofNanos(endedAt - startedAt.get())).isGreaterThanOrEqualTo(outage);
    assertThat(proxy.injected()).isPositive();
    System.out.printf("S3A outage of %s s ridden through: job %.1f s, %d requests, %d failed (%d resets, %d 503, "
            + "%d 500), %d SDK retries on the wire%n", outage.toSeconds(), (endedAt - start) / 1e9,
        proxy.requests(), proxy.injected(), proxy.injected(Fault.RESET), proxy.injected(Fault.SLOW_DOWN),
        proxy.injected(Fault.INTERNAL_ERROR), proxy.retriedRequests());
  }
}
