package dev.lakecommit.iceberg;

import static dev.lakecommit.iceberg.TestTables.IDENT;
import static dev.lakecommit.iceberg.TestTables.JOB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsDeletes;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.InvalidRecordException;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Deletes of keys in upsert mode ({@link SupportsDeletes}, a changelog's DELETE rows): ordered with the upserts of
 * the same checkpoint, committed in the checkpoint's row delta (alone too), and never applied twice by a replay.
 */
class UpsertDeleteTest {
  @TempDir Path dir;
  private final List<AutoCloseable> servers = new ArrayList<>();

  @AfterEach
  void stopServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  /** One change of a checkpoint: an upsert of (key, value), or a delete of key when value is null. */
  private record Change(long key, String value) {
    static Change upsert(long key, String value) {
      return new Change(key, value);
    }

    static Change delete(long key) {
      return new Change(key, null);
    }
  }

  @SuppressWarnings("unchecked")
  private static StagingManifest stage(IcebergSink<Record> sink, long checkpoint, List<Change> changes)
      throws IOException {
    SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(JOB, 0, 1, 0, checkpoint - 1));
    SupportsDeletes<Record> deletes = (SupportsDeletes<Record>) writer;
    for (Change change : changes) {
      if (change.value() == null) {
        // A changelog's DELETE row carries the old values; only the key is read.
        deletes.delete(UpsertTables.row(change.key(), "old value, ignored"));
      } else {
        writer.write(UpsertTables.row(change.key(), change.value()));
      }
    }
    return writer.prepareCommit(checkpoint).orElseThrow();
  }

  private static CommitOutcome commit(SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committer,
      long checkpoint, StagingManifest manifest) {
    return committer.commit(committer.combine(new CommitId(JOB, checkpoint), List.of(manifest)));
  }

  private static Map<Long, String> values(long from, long to, String value) {
    Map<Long, String> values = new HashMap<>();
    for (long key = from; key < to; key++) {
      values.put(key, value);
    }
    return values;
  }

  private static List<Change> upserts(long from, long to, String value) {
    List<Change> changes = new ArrayList<>();
    for (long key = from; key < to; key++) {
      changes.add(Change.upsert(key, value));
    }
    return changes;
  }

  @Test
  void deletesApplyInTheirOrderWithinACheckpoint() throws Exception {
    CatalogFixture fixture = CatalogFixture.named("jdbc-sqlite", dir, servers);
    IcebergSink<Record> sink = IcebergSink.forRecords(UpsertTables.config(fixture).build());
    var committer = sink.createAggregatedCommitter();
    assertThat(commit(committer, 1, stage(sink, 1, upserts(0, 5, "a")))).isInstanceOf(CommitOutcome.Committed.class);

    StagingManifest second = stage(sink, 2, List.of(
        Change.upsert(0, "b"), Change.delete(0),   // an older row, replaced then deleted: gone
        Change.delete(1), Change.upsert(1, "b"),   // an older row, deleted then written again: the new row
        Change.delete(2),                          // an older row, deleted
        Change.upsert(7, "b"), Change.delete(7),   // a new key, written then deleted: never there
        Change.delete(8), Change.upsert(8, "b"),   // a new key, deleted then written: there
        Change.delete(9),                          // a key that never had a row: nothing
        Change.upsert(3, "b"), Change.delete(3), Change.upsert(3, "c")));
    assertThat(commit(committer, 2, second)).isInstanceOf(CommitOutcome.Committed.class);

    assertThat(UpsertTables.single(UpsertTables.rows(sink.table())))
        .containsExactlyInAnyOrderEntriesOf(Map.of(1L, "b", 3L, "c", 4L, "a", 8L, "b"));
    assertThat(second.deleteFiles()).extracting(StagedFile::content)
        .contains(FileContent.EQUALITY_DELETES, FileContent.POSITION_DELETES);
    assertThat(TestTables.committedCheckpoints(sink.table())).containsExactly(1L, 2L);
  }

  @Test
  void aCheckpointOfDeletesOnlyIsOneRowDeltaOfDeleteFiles() throws Exception {
    CatalogFixture fixture = CatalogFixture.named("hadoop", dir, servers);
    IcebergSink<Record> sink = IcebergSink.forRecords(UpsertTables.config(fixture).build());
    var committer = sink.createAggregatedCommitter();
    commit(committer, 1, stage(sink, 1, upserts(0, 10, "a")));

    List<Change> deletes = new ArrayList<>();
    for (long key = 0; key < 10; key += 2) {
      deletes.add(Change.delete(key));
    }
    StagingManifest onlyDeletes = stage(sink, 2, deletes);

    assertThat(onlyDeletes.files()).as("no data files").isEmpty();
    assertThat(onlyDeletes.deleteFiles()).isNotEmpty().extracting(StagedFile::content)
        .containsOnly(FileContent.EQUALITY_DELETES);
    assertThat(onlyDeletes.deleteRecordCount()).isEqualTo(5);
    assertThat(commit(committer, 2, onlyDeletes)).isInstanceOf(CommitOutcome.Committed.class);

    Table table = sink.table();
    table.refresh();
    Snapshot snapshot = table.currentSnapshot();
    assertThat(snapshot.summary()).containsEntry(CommitId.CHECKPOINT_ID_KEY, "2")
        .containsEntry(SnapshotSummary.ADDED_EQ_DELETES_PROP, "5")
        .doesNotContainKey(SnapshotSummary.ADDED_FILES_PROP);
    assertThat(table.properties()).containsEntry(CommitId.WATERMARK_KEY_PREFIX + JOB.value(), "2");
    assertThat(UpsertTables.single(UpsertTables.rows(table))).isEqualTo(Map.of(
        1L, "a", 3L, "a", 5L, "a", 7L, "a", 9L, "a"));
  }

  /**
   * A delete checkpoint whose commit reached the catalog but whose acknowledgement was lost, then a newer
   * checkpoint that writes some of the deleted keys again, then a restart that replays the delete checkpoint (as a
   * restored pending commit): the replay is recognised, so the newer rows stay. Without the idempotency check the
   * same replay deletes them — what the check is there to prevent.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"hadoop", "jdbc-sqlite"})
  void aReplayedDeleteCheckpointIsNotAppliedTwice(String catalog) throws Exception {
    CatalogFixture fixture = CatalogFixture.named(catalog, dir, servers);
    IcebergSink<Record> sink = IcebergSink.forRecords(UpsertTables.config(fixture).build());
    commit(sink.createAggregatedCommitter(), 1, stage(sink, 1, upserts(0, 10, "a")));
    List<Change> deletes = new ArrayList<>();
    for (long key = 0; key < 5; key++) {
      deletes.add(Change.delete(key));
    }
    StagingManifest deleting = stage(sink, 2, deletes);

    var lostAck = new IcebergAggregatedCommitter(new TableCommitter(
        new FaultyCatalog(fixture.newCatalog(), FaultyCatalog.Fault.ACK_LOST, 1), IDENT, CommitMode.UPSERT, null,
        null, new CommitCounters()), sink.table(), sink.layout(), false, true);
    CommitOutcome first = commit(lostAck, 2, deleting);
    assertThat(first).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(((CommitOutcome.Committed) first).targetVersion()).startsWith("settled by reading back");
    commit(sink.createAggregatedCommitter(), 3, stage(sink, 3, upserts(0, 2, "c")));
    Map<Long, String> expected = values(5, 10, "a");
    expected.putAll(values(0, 2, "c"));
    assertThat(UpsertTables.single(UpsertTables.rows(sink.table()))).isEqualTo(expected);

    var restarted = IcebergSink.forRecords(UpsertTables.config(fixture).build()).createAggregatedCommitter();
    assertThat(commit(restarted, 2, deleting)).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(UpsertTables.single(UpsertTables.rows(sink.table()))).isEqualTo(expected);
    assertThat(TestTables.committedCheckpoints(sink.table())).containsExactly(1L, 2L, 3L);

    var unchecked = IcebergSink.forRecords(UpsertTables.config(fixture).build()).idempotencyCheck(false)
        .createAggregatedCommitter();
    assertThat(commit(unchecked, 2, deleting)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(UpsertTables.single(UpsertTables.rows(sink.table()))).as("the replay deleted the newer rows")
        .isEqualTo(values(5, 10, "a"));
  }

  @Test
  @SuppressWarnings("unchecked")
  void aDeleteWithoutAValidKeyOrOfAnotherWritersKeyIsRefused() throws Exception {
    CatalogFixture fixture = CatalogFixture.named("hadoop", dir, servers);
    IcebergSink<Record> sink = IcebergSink.forRecords(UpsertTables.config(fixture).build());
    var writer = (SupportsDeletes<Record>) sink.createWriter(new WriterContext(JOB, 0, 1, 0, 0));
    Record noKey = GenericRecord.create(TestTables.SCHEMA).copy(Map.of("payload", "x"));

    assertThatThrownBy(() -> writer.delete(noKey)).isInstanceOf(InvalidRecordException.class)
        .hasMessageContaining("Delete record 0").hasMessageContaining("no valid key [id]")
        .hasMessageContaining("id");

    var second = (SupportsDeletes<Record>) sink.createWriter(new WriterContext(JOB, 1, 2, 0, 0));
    long foreign = 0;
    while (sink.keyRouter().applyAsInt(UpsertTables.row(foreign, "x"), 2) == 1) {
      foreign++;
    }
    long key = foreign;
    assertThatThrownBy(() -> second.delete(UpsertTables.row(key, "x"))).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("its key belongs to writer 0").hasMessageContaining("keyRouter()");

    IcebergSink<Record> append = IcebergSink.forRecords(IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties()).catalogName(fixture.name()).table("db.appended")
        .createTable(TestTables.SCHEMA, List.of()).build());
    assertThat(append.createWriter(new WriterContext(JOB, 0, 1, 0, 0)))
        .as("an append writer cannot delete").isNotInstanceOf(SupportsDeletes.class);
  }
}
