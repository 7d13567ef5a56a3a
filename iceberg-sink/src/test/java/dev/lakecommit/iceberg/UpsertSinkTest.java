package dev.lakecommit.iceberg;

import static dev.lakecommit.iceberg.TestTables.JOB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.JobFailedException;
import dev.lakecommit.core.runtime.JobResult;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Upsert mode against real catalogs: every checkpoint is one row delta of new rows plus equality deletes (older
 * rows of the keys) and position deletes (rows of the same checkpoint), read back with Iceberg's generic reader.
 */
class UpsertSinkTest {
  @TempDir Path dir;
  private final List<AutoCloseable> servers = new ArrayList<>();

  @AfterEach
  void stopServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  static Stream<String> catalogs() {
    return CatalogFixture.NAMES.stream();
  }

  private CatalogFixture fixture(String name) {
    return CatalogFixture.named(name, dir, servers);
  }

  private static JobResult run(IcebergSink<Record> sink, Path checkpoints, long count, int keys, int writers,
      long every) throws Exception {
    return StandaloneJob.builder(sink, UpsertTables.updates(count, keys))
        .jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(checkpoints)))
        .parallelism(writers)
        .checkpointEveryRecords(every)
        .router(sink.keyRouter())
        .build()
        .run();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void upsertsOverSeveralCheckpointsLeaveOneRowPerKeyWithTheLatestValue(String catalog) throws Exception {
    CatalogFixture fixture = fixture(catalog);
    IcebergSink<Record> sink = IcebergSink.forRecords(UpsertTables.config(fixture).build());

    // 160 updates of 24 keys by 2 writers, 40 per checkpoint: every key changes in every checkpoint, some twice.
    JobResult result = run(sink, dir.resolve("checkpoints"), 160, 24, 2, 40);

    Table table = fixture.newCatalog().loadTable(TestTables.IDENT);
    assertThat(UpsertTables.single(UpsertTables.rows(table))).isEqualTo(UpsertTables.latest(160, 24));
    assertThat(TestTables.committedCheckpoints(table)).containsExactly(1L, 2L, 3L, 4L);
    assertThat(result.commits()).isEqualTo(4);
    assertThat(table.schema().identifierFieldNames()).containsExactly("id");
    assertThat(table.currentSnapshot().operation()).isEqualTo(DataOperations.OVERWRITE);
    Map<FileContent, Integer> deletes = UpsertTables.deleteFiles(table);
    assertThat(deletes.get(FileContent.EQUALITY_DELETES)).as("equality deletes of older rows").isPositive();
    assertThat(deletes.get(FileContent.POSITION_DELETES)).as("position deletes within a checkpoint").isPositive();
    assertThat(table.properties()).containsEntry("lakecommit.committed.job-1", "4");
  }

  @Test
  void aKeyWrittenThreeTimesByOneWriterInOneCheckpointLeavesOneRow() throws Exception {
    CatalogFixture fixture = fixture("hadoop");
    IcebergSink<Record> sink = IcebergSink.forRecords(UpsertTables.config(fixture).build());
    SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(JOB, 0, 1, 0, 0));
    writer.write(UpsertTables.row(7, "a"));
    writer.write(UpsertTables.row(8, "a"));
    writer.write(UpsertTables.row(7, "b"));
    writer.write(UpsertTables.row(7, "c"));
    StagingManifest manifest = writer.prepareCommit(1).orElseThrow();

    assertThat(manifest.recordCount()).as("every row is written, the replaced ones deleted by position").isEqualTo(4);
    assertThat(manifest.deleteFiles()).extracting(StagedFile::content).contains(FileContent.POSITION_DELETES);
    assertThat(manifest.files()).allSatisfy(file -> assertThat(file.path()).contains("/lakecommit/job-1/ckpt-1/")
        .contains("/job-1-1-0-0-"));
    assertThat(commit(sink.createAggregatedCommitter(), 1, manifest)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(UpsertTables.single(UpsertTables.rows(sink.table()))).containsExactlyInAnyOrderEntriesOf(
        Map.of(7L, "c", 8L, "a"));
  }

  private static CommitOutcome commit(SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committer,
      long checkpoint, StagingManifest... manifests) {
    return committer.commit(committer.combine(new CommitId(JOB, checkpoint), List.of(manifests)));
  }

  private static StagingManifest stage(IcebergSink<Record> sink, long checkpoint, long from, long to, String value)
      throws IOException {
    SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(JOB, 0, 1, 0, checkpoint - 1));
    for (long key = from; key < to; key++) {
      writer.write(UpsertTables.row(key, value));
    }
    return writer.prepareCommit(checkpoint).orElseThrow();
  }

  @Test
  void aReplayedCheckpointIsSkippedAndWithoutTheCheckItsOldValuesComeBack() throws Exception {
    CatalogFixture fixture = fixture("jdbc-sqlite");
    IcebergSink<Record> sink = IcebergSink.forRecords(UpsertTables.config(fixture).build());
    StagingManifest first = stage(sink, 1, 0, 10, "a");
    StagingManifest second = stage(sink, 2, 0, 5, "b");
    var committer = sink.createAggregatedCommitter();
    commit(committer, 1, first);
    commit(committer, 2, second);

    // iceberg#10431: a replayed checkpoint must not bring its keys back a second time or with old values.
    assertThat(commit(committer, 1, first)).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(commit(committer, 2, second)).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    Map<Long, String> expected = new java.util.HashMap<>();
    for (long key = 0; key < 10; key++) {
      expected.put(key, key < 5 ? "b" : "a");
    }
    assertThat(UpsertTables.single(UpsertTables.rows(sink.table()))).isEqualTo(expected);
    assertThat(TestTables.committedCheckpoints(sink.table())).containsExactly(1L, 2L);

    // The same replay without the idempotency check: the checkpoint lands twice and undoes the newer update.
    var unchecked = IcebergSink.forRecords(UpsertTables.config(fixture).build()).idempotencyCheck(false)
        .createAggregatedCommitter();
    assertThat(commit(unchecked, 1, first)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(TestTables.committedCheckpoints(sink.table())).containsExactly(1L, 2L, 1L);
    assertThat(UpsertTables.single(UpsertTables.rows(sink.table()))).isNotEqualTo(expected).containsEntry(0L, "a");
  }

  @Test
  void anAbortedCheckpointLeavesNoDuplicateKeysAndLosesNoDeletes() throws Exception {
    CatalogFixture fixture = fixture("hadoop");
    IcebergSink<Record> sink = IcebergSink.forRecords(UpsertTables.config(fixture).build());
    var committer = sink.createAggregatedCommitter();
    commit(committer, 1, stage(sink, 1, 0, 10, "a"));

    SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(JOB, 0, 1, 1, 1));
    for (long key = 0; key < 5; key++) {
      writer.write(UpsertTables.row(key, "aborted"));
    }
    writer.abortPrepare();
    // iceberg#11008: the replayed records after the abort must still delete the older rows of their keys.
    for (long key = 0; key < 6; key++) {
      writer.write(UpsertTables.row(key, "b"));
      writer.write(UpsertTables.row(key, "c"));
    }
    StagingManifest replayed = writer.prepareCommit(2).orElseThrow();
    assertThat(commit(committer, 2, replayed)).isInstanceOf(CommitOutcome.Committed.class);

    Map<Long, String> rows = UpsertTables.single(UpsertTables.rows(sink.table()));
    assertThat(rows).hasSize(10);
    for (long key = 0; key < 10; key++) {
      assertThat(rows.get(key)).as("key %s", key).isEqualTo(key < 6 ? "c" : "a");
    }
    List<String> staged = new ArrayList<>();
    ((org.apache.iceberg.io.SupportsPrefixOperations) sink.table().io())
        .listPrefix(sink.layout().checkpointPrefix(JOB, 2)).forEach(f -> staged.add(f.location()));
    List<String> committed = new ArrayList<>();
    replayed.files().forEach(f -> committed.add(f.path()));
    replayed.deleteFiles().forEach(f -> committed.add(f.path()));
    assertThat(staged).as("the aborted attempt's files are gone").hasSameSizeAs(committed);
  }

  @Test
  void recordsNotRoutedByKeyAreRefusedNamingTheRouter() {
    CatalogFixture fixture = fixture("hadoop");
    IcebergSink<Record> sink = IcebergSink.forRecords(UpsertTables.config(fixture).build());

    assertThatThrownBy(() -> StandaloneJob.builder(sink, UpsertTables.updates(50, 10))
        .jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints"))))
        .parallelism(3)
        .build()
        .run())
        .isInstanceOf(JobFailedException.class)
        .rootCause().hasMessageContaining("but its key belongs to writer").hasMessageContaining("keyRouter()");
  }

  @Test
  void badUpsertConfigurationFailsBeforeAnyDataIsWritten() {
    CatalogFixture fixture = fixture("hadoop");
    Catalog catalog = fixture.newCatalog();
    Table noKey = TestTables.create(catalog);
    assertThat(noKey.schema().identifierFieldNames()).isEmpty();
    assertThatThrownBy(() -> IcebergSink.forRecords(IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties()).table("db.events").mode(CommitMode.UPSERT).build()))
        .hasMessageContaining("Missing upsertKey").hasMessageContaining("no identifier fields");

    assertThatThrownBy(() -> IcebergSinkConfig.builder().catalogProperties(fixture.properties())
        .table("db.events").upsertKey(List.of("id")).build())
        .hasMessageContaining("upsertKey [id] is only used by mode UPSERT");

    Schema schema = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.required(2, "day", Types.DateType.get()),
        Types.NestedField.optional(3, "payload", Types.StringType.get()));
    catalog.createTable(org.apache.iceberg.catalog.TableIdentifier.of("db", "v1"), schema,
        PartitionSpec.unpartitioned(), Map.of("format-version", "1"));
    assertThatThrownBy(() -> IcebergSink.forRecords(IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties()).table("db.v1").mode(CommitMode.UPSERT)
        .upsertKey(List.of("id")).build()))
        .hasMessageContaining("format-version 1").hasMessageContaining("need format-version 2");

    catalog.createTable(org.apache.iceberg.catalog.TableIdentifier.of("db", "daily"), schema,
        PartitionSpec.builderFor(schema).day("day").build(), Map.of("format-version", "2"));
    assertThatThrownBy(() -> IcebergSink.forRecords(IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties()).table("db.daily").mode(CommitMode.UPSERT)
        .upsertKey(List.of("id")).build()))
        .hasMessageContaining("partitioned by column 'day', which must be part of the key");
    assertThatThrownBy(() -> IcebergSink.forRecords(IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties()).table("db.daily").mode(CommitMode.UPSERT)
        .upsertKey(List.of("id", "payload")).build()))
        .hasMessageContaining("column 'payload'").hasMessageContaining("must be required primitive columns");
  }
}
