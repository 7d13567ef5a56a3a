package dev.lakecommit.iceberg;

import static dev.lakecommit.iceberg.TestTables.JOB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.runtime.CheckpointRecord;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.JobListener;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.core.testing.SimulatedCrash;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several pending append checkpoints at a restore: one snapshot per checkpoint by default; with
 * {@code coalescePendingAppends} one snapshot carrying the newest checkpoint id, safe against crashes, partial
 * commits and replays; never for overwrite or upsert checkpoints.
 */
class CoalescePendingTest {
  @TempDir Path dir;
  private final List<AutoCloseable> servers = new ArrayList<>();
  private CatalogFixture fixture;

  @AfterEach
  void stopServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  private IcebergSinkConfig.Builder config(CommitMode mode) {
    if (fixture == null) {
      fixture = CatalogFixture.named("hadoop", dir, servers);
    }
    IcebergSinkConfig.Builder builder = IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties())
        .catalogName(fixture.name())
        .table("db.events")
        .createTable(TestTables.SCHEMA, List.of("bucket(2, id)"))
        .tableProperties(Map.of("format-version", "2"))
        .mode(mode);
    return mode == CommitMode.UPSERT ? builder.upsertKey(List.of("id")) : builder;
  }

  /** Keys 10(c-1) .. 10c-1 staged for checkpoints c = 1, 2, 3 by one writer, combined but never committed. */
  private static List<IcebergCommittable> stageThree(IcebergSink<Record> sink) throws Exception {
    SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(JOB, 0, 1, 0, 0));
    var committer = sink.createAggregatedCommitter();
    List<IcebergCommittable> pending = new ArrayList<>();
    for (long checkpoint = 1; checkpoint <= 3; checkpoint++) {
      for (long key = (checkpoint - 1) * 10; key < checkpoint * 10; key++) {
        writer.write(UpsertTables.row(key, "row-" + key));
      }
      StagingManifest manifest = writer.prepareCommit(checkpoint).orElseThrow();
      pending.add(committer.combine(new CommitId(JOB, checkpoint), List.of(manifest)));
    }
    return pending;
  }

  /** A durable checkpoint 3 (30 records read) whose three commits are all pending, as after a crash. */
  private CheckpointStore storeWithThreePending(IcebergSink<Record> sink) throws Exception {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints")));
    TreeMap<Long, byte[]> pending = new TreeMap<>();
    for (IcebergCommittable committable : stageThree(sink)) {
      pending.put(committable.commitId().checkpointId(),
          VersionedSerialization.toBytes(sink.aggregatedCommitSerializer(), committable));
    }
    byte[] state = VersionedSerialization.toBytes(sink.writerStateSerializer(), new StagingWriterState(0, 3));
    store.persist(new CheckpointRecord(JOB, 3, 0, 30, ByteBuffer.allocate(8).putLong(30).array(),
        List.of(state), pending));
    return store;
  }

  private void run(IcebergSink<Record> sink, CheckpointStore store, JobListener listener) throws Exception {
    StandaloneJob.builder(sink, IcebergCrashMatrixTest.records(40))
        .jobId(JOB)
        .checkpointStore(store)
        .listener(listener)
        .build()
        .run();
  }

  private Table table() {
    return fixture.newCatalog().loadTable(TestTables.IDENT);
  }

  private void assertExactlyKeys(int count) {
    Map<Long, Integer> keys = TestTables.keyCounts(table());
    assertThat(keys).hasSize(count).allSatisfy((key, n) -> assertThat(n).as("key %s", key).isOne());
  }

  @Test
  void byDefaultEachPendingCheckpointIsItsOwnSnapshot() throws Exception {
    IcebergSink<Record> sink = IcebergSink.forRecords(config(CommitMode.APPEND).build());

    run(sink, storeWithThreePending(sink), JobListener.NONE);

    assertThat(TestTables.committedCheckpoints(table())).containsExactly(1L, 2L, 3L, 4L);
    assertExactlyKeys(40);
  }

  @Test
  void aRestoreWithThreePendingAppendsCommitsThemAsOneSnapshotWithTheNewestId() throws Exception {
    IcebergSink<Record> sink =
        IcebergSink.forRecords(config(CommitMode.APPEND).coalescePendingAppends(true).build());

    run(sink, storeWithThreePending(sink), JobListener.NONE);

    Table table = table();
    assertThat(TestTables.committedCheckpoints(table)).containsExactly(3L, 4L);
    var coalesced = table.snapshot(table.currentSnapshot().parentId());
    assertThat(coalesced.summary()).containsEntry(CommitId.CHECKPOINT_ID_KEY, "3")
        .containsEntry(TableCommitter.COALESCED_KEY, "1,2,3")
        .containsEntry("added-records", "30");
    assertThat(table.properties()).containsEntry("lakecommit.committed.job-1", "4");
    assertExactlyKeys(40);
  }

  @Test
  void aCrashAfterTheCoalescedCommitCommitsNothingTwice() throws Exception {
    IcebergSink<Record> sink =
        IcebergSink.forRecords(config(CommitMode.APPEND).coalescePendingAppends(true).build());
    CheckpointStore store = storeWithThreePending(sink);
    JobListener crashAfterCommit = new JobListener() {
      @Override
      public void onCommitted(long checkpointId, CommitOutcome outcome, long durationNanos) {
        throw new SimulatedCrash("coalesced-commit-applied", checkpointId);
      }
    };

    assertThatThrownBy(() -> run(sink, store, crashAfterCommit)).isInstanceOf(SimulatedCrash.class);
    assertThat(TestTables.committedCheckpoints(table())).containsExactly(3L);

    // The next life restores the same three pending commits: the table holds them, nothing is added twice.
    IcebergSink<Record> restarted =
        IcebergSink.forRecords(config(CommitMode.APPEND).coalescePendingAppends(true).build());
    run(restarted, new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints"))), JobListener.NONE);

    assertThat(TestTables.committedCheckpoints(table())).containsExactly(3L, 4L);
    assertExactlyKeys(40);
  }

  @Test
  void aCoalescedCommitOverACheckpointCommittedAloneAddsOnlyTheOthers() throws Exception {
    IcebergSink<Record> sink =
        IcebergSink.forRecords(config(CommitMode.APPEND).coalescePendingAppends(true).build());
    List<IcebergCommittable> pending = stageThree(sink);
    SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committer = sink.createAggregatedCommitter();
    // An earlier life (or a racing committer) committed checkpoint 1 on its own before crashing.
    assertThat(committer.commit(pending.get(0))).isInstanceOf(CommitOutcome.Committed.class);

    IcebergCommittable coalesced = committer.coalesce(pending);
    assertThat(coalesced.firstCheckpointId()).isEqualTo(1);
    assertThat(committer.commit(coalesced)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(committer.commit(coalesced)).isInstanceOf(CommitOutcome.AlreadyCommitted.class);

    Table table = table();
    assertThat(TestTables.committedCheckpoints(table)).containsExactly(1L, 3L);
    assertThat(table.currentSnapshot().summary()).containsEntry(TableCommitter.COALESCED_KEY, "2,3");
    assertExactlyKeys(30);
  }

  @Test
  void overwriteAndUpsertCheckpointsAreNeverCoalesced() throws Exception {
    IcebergSink<Record> overwrite = IcebergSink.forRecords(
        config(CommitMode.OVERWRITE_PARTITIONS).coalescePendingAppends(true).build());
    List<IcebergCommittable> pending = stageThree(overwrite);
    assertThat(overwrite.createAggregatedCommitter().coalesce(pending)).isSameAs(pending.get(0));

    Catalog catalog = fixture.newCatalog();
    catalog.dropTable(TestTables.IDENT, false);
    IcebergSink<Record> upsert =
        IcebergSink.forRecords(config(CommitMode.UPSERT).coalescePendingAppends(true).build());
    List<IcebergCommittable> upserts = stageThree(upsert);
    assertThat(upsert.createAggregatedCommitter().coalesce(upserts)).isSameAs(upserts.get(0));
    // Even an append committer stops at a checkpoint that stages deletes.
    IcebergSink<Record> append =
        IcebergSink.forRecords(config(CommitMode.APPEND).coalescePendingAppends(true).build());
    assertThat(append.createAggregatedCommitter().coalesce(upserts)).isSameAs(upserts.get(0));

    // Through the runtime: three pending overwrite checkpoints are three snapshots.
    catalog.dropTable(TestTables.IDENT, false);
    IcebergSink<Record> restored = IcebergSink.forRecords(
        config(CommitMode.OVERWRITE_PARTITIONS).coalescePendingAppends(true).build());
    run(restored, storeWithThreePending(restored), JobListener.NONE);
    assertThat(TestTables.committedCheckpoints(table())).containsExactly(1L, 2L, 3L, 4L);
  }
}
