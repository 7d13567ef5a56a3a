package dev.lakecommit.hive;

import static dev.lakecommit.hive.HiveTestData.MIXED;
import static dev.lakecommit.hive.HiveTestData.PARTITIONED;
import static dev.lakecommit.hive.HiveTestData.SCHEMA;
import static dev.lakecommit.hive.HiveTestData.rows;
import static dev.lakecommit.hive.HiveTestData.stage;
import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import dev.lakecommit.staging.testing.FaultInjectingS3Proxy;
import dev.lakecommit.staging.testing.S3TestServer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.LongStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Hive on S3 without copies: staged files are S3 multipart uploads (S3A's magic committer paths) that a commit only
 * completes. Every request of the sink goes through the fault proxy, which counts server-side copies.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class S3MultipartCommitIT {
  private S3TestServer s3;
  private FaultInjectingS3Proxy proxy;
  private HiveMetastoreServer hms;
  private HiveFixture fixture;

  @BeforeAll
  void start() throws Exception {
    String bucket = "lc-multipart";
    s3 = S3TestServer.start(bucket);
    proxy = FaultInjectingS3Proxy.start(s3, 7);
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

  @Test
  void aCommitCompletesTheUploadsAndCopiesNothing() throws Exception {
    String table = HiveFixture.newTable("mpu");
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, PARTITIONED).build());
    try (HiveAggregatedCommitter committer = HiveSinkSuite.committer(sink)) {
      HiveCommittable first = stage(sink, committer, "mpu", 1, rows(0, 200, MIXED));
      List<StagedFile> files = first.files().toList();
      assertThat(files).hasSize(10).allSatisfy(file -> assertThat(file.path()).contains("/__magic_job-lakecommit/"));
      assertThat(pendingUnder(table)).as("uploads in progress before the commit").hasSize(10);

      long copiesBefore = proxy.copyRequests();
      long requestsBefore = proxy.requests();
      assertThat(committer.commit(first)).isInstanceOf(CommitOutcome.Committed.class);
      assertThat(proxy.requests()).as("the commit went through the proxy").isGreaterThan(requestsBefore);
      assertThat(proxy.copyRequests() - copiesBefore).as("copy requests of the commit").isZero();

      // A second checkpoint appends to the partitions the first added.
      HiveCommittable second = stage(sink, committer, "mpu", 2, rows(200, 300, MIXED));
      copiesBefore = proxy.copyRequests();
      assertThat(committer.commit(second)).isInstanceOf(CommitOutcome.Committed.class);
      assertThat(proxy.copyRequests() - copiesBefore).as("copy requests of the second commit").isZero();
    }
    TableContents contents = fixture.contents(table);
    assertThat(contents.ids()).containsExactlyInAnyOrderElementsOf(LongStream.range(0, 300).boxed().toList());
    assertThat(contents.parts()).hasSize(10);
    assertThat(pendingUnder(table)).as("uploads left in progress").isEmpty();
  }

  /**
   * A commit that dies after completing some uploads: the next committer (a new run) completes the rest from what
   * its intent holds and finds the completed ones in place — no row twice, none lost, no copy.
   */
  @Test
  void aReplayedCommitCompletesWhatIsLeftOnce() throws Exception {
    String table = HiveFixture.newTable("mpu_crash");
    AtomicInteger moved = new AtomicInteger();
    // One completion at a time, so that the crash leaves uploads pending.
    HiveSink<Record> crashing = HiveSink.forRecords(
            fixture.config(table).createTable(SCHEMA, PARTITIONED).moveThreads(1).build())
        .commitHook((point, id) -> {
          if (point.equals(CommitHook.FILE_MOVED) && moved.incrementAndGet() == 4) {
            throw new IllegalStateException("crash after 4 completed uploads");
          }
        });
    HiveCommittable committable;
    long copiesBefore = proxy.copyRequests();
    try (HiveAggregatedCommitter committer = HiveSinkSuite.committer(crashing)) {
      committable = stage(crashing, committer, "mpu-crash", 1, rows(0, 200, MIXED));
      try {
        assertThat(committer.commit(committable)).isNotInstanceOf(CommitOutcome.Committed.class);
      } catch (IllegalStateException expected) {
        // the crash
      }
    }
    assertThat(moved.get()).as("the crash point was reached").isEqualTo(4);
    // The fifth completion may have started before the crash stopped the others.
    assertThat(pendingUnder(table)).as("uploads still in progress after the crash").hasSizeBetween(5, 6);
    assertThat(TableParameters.committed(fixture.client().getTable(HiveFixture.DB, table).getParameters(),
        JobId.of("mpu-crash"))).as("watermark after the crash").isEmpty();

    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table).build());
    try (HiveAggregatedCommitter committer = HiveSinkSuite.committer(sink)) {
      assertThat(committer.commit(committable)).isInstanceOf(CommitOutcome.Committed.class);
      assertThat(committer.commit(committable)).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    }
    assertThat(proxy.copyRequests() - copiesBefore).as("copy requests").isZero();
    assertThat(fixture.contents(table).ids())
        .containsExactlyInAnyOrderElementsOf(LongStream.range(0, 200).boxed().toList());
    assertThat(pendingUnder(table)).isEmpty();
  }

  /** The uploads of a checkpoint that never commits are aborted by the clean-up of staged leftovers. */
  @Test
  void cleanupAbortsTheUploadsOfCheckpointsThatNeverCommit() throws Exception {
    String table = HiveFixture.newTable("mpu_leak");
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, PARTITIONED).build());
    try (HiveAggregatedCommitter committer = HiveSinkSuite.committer(sink)) {
      assertThat(committer.commit(stage(sink, committer, "leak", 1, rows(0, 50, MIXED))))
          .isInstanceOf(CommitOutcome.Committed.class);
      stage(sink, committer, "leak", 2, rows(50, 100, MIXED));
      stage(sink, committer, "other", 1, rows(100, 110, MIXED));
    }
    assertThat(pendingUnder(table)).hasSize(20);

    long deleted;
    try (CommitTarget target = sink.openTarget()) {
      deleted = target.deleteStaged(JobId.of("leak"), 1, 0, Long.MAX_VALUE);
    }

    assertThat(deleted).as("staged files deleted").isPositive();
    List<String> left = pendingUnder(table);
    assertThat(left).as("only the other job's uploads stay").hasSize(10)
        .allSatisfy(destination -> assertThat(new Path(destination).getName()).startsWith("other-1-"));
    assertThat(fixture.contents(table).ids())
        .containsExactlyInAnyOrderElementsOf(LongStream.range(0, 50).boxed().toList());
  }

  /**
   * A writer attempt that failed before its checkpoint completed leaves uploads the committed checkpoint never
   * names: cleaning up the committed checkpoints' leftovers aborts them, and the table keeps its rows.
   */
  @Test
  void cleanupOfCommittedLeftoversAbortsTheUploadsOfFailedWriterAttempts() throws Exception {
    String table = HiveFixture.newTable("mpu_attempt");
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, PARTITIONED).build());
    JobId job = JobId.of("attempts");
    SinkWriter<Record, StagingManifest, StagingWriterState> failed =
        sink.createWriter(new WriterContext(job, 0, 1, 0, 0));
    for (Record row : rows(0, 20, MIXED)) {
      failed.write(row);
    }
    failed.prepareCommit(1); // its files are staged, but the checkpoint never completes with them
    failed.close();
    try (HiveAggregatedCommitter committer = HiveSinkSuite.committer(sink)) {
      SinkWriter<Record, StagingManifest, StagingWriterState> writer =
          sink.createWriter(new WriterContext(job, 0, 1, 1, 0));
      for (Record row : rows(0, 20, MIXED)) {
        writer.write(row);
      }
      StagingManifest manifest = writer.prepareCommit(1).orElseThrow();
      writer.close();
      assertThat(committer.commit(committer.combine(new dev.lakecommit.core.CommitId(job, 1), List.of(manifest))))
          .isInstanceOf(CommitOutcome.Committed.class);
    }
    assertThat(pendingUnder(table)).as("the failed attempt's uploads").hasSize(10);

    try (HiveTarget target = (HiveTarget) sink.openTarget()) {
      target.deleteCommittedLeftovers(job);
    }

    assertThat(pendingUnder(table)).as("uploads left in progress").isEmpty();
    assertThat(fixture.contents(table).ids())
        .containsExactlyInAnyOrderElementsOf(LongStream.range(0, 20).boxed().toList());
  }

  private List<String> pendingUnder(String table) throws Exception {
    Path location = new Path(fixture.client().getTable(HiveFixture.DB, table).getSd().getLocation());
    FileSystem fs = location.getFileSystem(fixture.conf());
    return PendingUploads.of(fs).pendingUnder(location);
  }
}
