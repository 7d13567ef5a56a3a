package dev.lakecommit.iceberg;

import static dev.lakecommit.iceberg.TestTables.IDENT;
import static dev.lakecommit.iceberg.TestTables.JOB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Writers configured to write no manifests: the committer writes one manifest per checkpoint and appends it,
 * instead of adding every file; a failed attempt leaves no unused manifest behind.
 */
class CommitterManifestsTest {
  @TempDir Path dir;
  private final List<AutoCloseable> servers = new ArrayList<>();
  private CatalogFixture fixture;

  @AfterEach
  void stopServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  private IcebergSink<Record> sink(String formatVersion, boolean writerManifests) {
    fixture = CatalogFixture.named("jdbc-sqlite", dir, servers);
    return IcebergSink.forRecords(IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties())
        .catalogName(fixture.name())
        .table("db.events")
        .createTable(TestTables.SCHEMA, List.of("bucket(4, id)"))
        .tableProperties(Map.of("format-version", formatVersion))
        .maxRowsPerFile(7)
        .writeManifests(writerManifests)
        .writerManifestMinFiles(1)
        .build());
  }

  private void run(IcebergSink<Record> sink) throws Exception {
    StandaloneJob.builder(sink, IcebergCrashMatrixTest.records(120))
        .jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints"))))
        .parallelism(3)
        .checkpointEveryRecords(60)
        .build()
        .run();
  }

  /** The manifests a snapshot added, as its manifest list holds them. */
  private static List<ManifestFile> added(Table table, Snapshot snapshot) {
    return snapshot.dataManifests(table.io()).stream()
        .filter(m -> m.snapshotId() != null && m.snapshotId() == snapshot.snapshotId()).toList();
  }

  private static List<Snapshot> jobSnapshots(Table table) {
    List<Snapshot> snapshots = new ArrayList<>();
    table.snapshots().forEach(s -> {
      if (s.summary().containsKey(CommitId.CHECKPOINT_ID_KEY)) {
        snapshots.add(s);
      }
    });
    return snapshots;
  }

  @Test
  void theCommitterAppendsOneManifestPerCheckpointWhenWritersWroteNone() throws Exception {
    IcebergSink<Record> sink = sink("2", false);
    run(sink);

    Table table = fixture.newCatalog().loadTable(IDENT);
    List<Snapshot> snapshots = jobSnapshots(table);
    assertThat(snapshots).hasSize(2);
    for (Snapshot snapshot : snapshots) {
      String checkpoint = snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY);
      int files = Integer.parseInt(snapshot.summary().get("added-data-files"));
      assertThat(files).as("3 writers x 4 buckets, files of 7 rows").isGreaterThan(12);
      List<ManifestFile> manifests = added(table, snapshot);
      assertThat(manifests).as("checkpoint %s", checkpoint).hasSize(1);
      assertThat(manifests.get(0).path()).contains("/lakecommit/job-1/ckpt-" + checkpoint + "/")
          .contains("-committer-");
      assertThat(manifests.get(0).addedFilesCount()).isEqualTo(files);
    }
    assertThat(TestTables.keyCounts(table)).hasSize(120).allSatisfy((k, n) -> assertThat(n).isOne());
  }

  @Test
  void writerManifestsAreAppendedAsTheyAreAndV1TablesGetTheirFilesAdded() throws Exception {
    IcebergSink<Record> withWriterManifests = sink("2", true);
    run(withWriterManifests);
    Table table = fixture.newCatalog().loadTable(IDENT);
    for (Snapshot snapshot : jobSnapshots(table)) {
      assertThat(added(table, snapshot)).as("one manifest per writer").hasSize(3)
          .allSatisfy(m -> assertThat(m.path()).contains("-manifest.avro").doesNotContain("-committer-"));
    }

    fixture.newCatalog().dropTable(IDENT, true);
    IcebergSink<Record> v1 = sink("1", false);
    StandaloneJob.builder(v1, IcebergCrashMatrixTest.records(120))
        .jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints-v1"))))
        .parallelism(3)
        .checkpointEveryRecords(60)
        .build()
        .run();
    Table v1Table = fixture.newCatalog().loadTable(IDENT);
    for (Snapshot snapshot : jobSnapshots(v1Table)) {
      assertThat(added(v1Table, snapshot)).hasSize(1)
          .allSatisfy(m -> assertThat(m.path()).contains("/metadata/").doesNotContain("-committer-"));
    }
    assertThat(TestTables.keyCounts(v1Table)).hasSize(120);
  }

  /**
   * Snapshots that append manifests carry the sizes of the files in them: {@code added-files-size} and a
   * {@code total-files-size} that grows with every commit (Iceberg alone leaves both out for appended manifests),
   * and the file and record counts, with writer manifests and with the committer's.
   */
  @ParameterizedTest(name = "writer manifests: {0}")
  @ValueSource(booleans = {true, false})
  void summariesOfAppendedManifestsCarryTheTrueSizesAndCounts(boolean writerManifests) throws Exception {
    {
      IcebergSink<Record> sink = sink("2", writerManifests);
      run(sink);
      Table table = fixture.newCatalog().loadTable(IDENT);
      long totalSize = 0;
      long totalRecords = 0;
      long totalFiles = 0;
      List<Snapshot> snapshots = jobSnapshots(table);
      assertThat(snapshots).hasSize(2);
      for (Snapshot snapshot : snapshots) {
        long size = 0;
        long records = 0;
        long files = 0;
        for (var file : snapshot.addedDataFiles(table.io())) {
          size += file.fileSizeInBytes();
          records += file.recordCount();
          files++;
        }
        totalSize += size;
        totalRecords += records;
        totalFiles += files;
        assertThat(size).isPositive();
        assertThat(snapshot.summary())
            .as("summary of checkpoint %s (writer manifests: %s)", snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY),
                writerManifests)
            .containsEntry("added-files-size", Long.toString(size))
            .containsEntry("total-files-size", Long.toString(totalSize))
            .containsEntry("added-records", Long.toString(records))
            .containsEntry("total-records", Long.toString(totalRecords))
            .containsEntry("added-data-files", Long.toString(files))
            .containsEntry("total-data-files", Long.toString(totalFiles));
      }
      assertThat(totalRecords).isEqualTo(120);
    }
  }

  private static List<String> committerManifests(IcebergSink<Record> sink, long checkpoint) {
    List<String> found = new ArrayList<>();
    ((SupportsPrefixOperations) sink.table().io())
        .listPrefix(sink.layout().checkpointPrefix(JOB, checkpoint))
        .forEach(f -> {
          if (f.location().contains("-committer-")) {
            found.add(f.location());
          }
        });
    return found;
  }

  private StagingManifest stage(IcebergSink<Record> sink) throws Exception {
    SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(JOB, 0, 1, 0, 0));
    for (long key = 0; key < 40; key++) {
      writer.write(UpsertTables.row(key, "row-" + key));
    }
    return writer.prepareCommit(1).orElseThrow();
  }

  @Test
  void writersBelowTheMinimumHaveTheirFilesInTheCommittersManifestInTheSameSnapshot() throws Exception {
    fixture = CatalogFixture.named("jdbc-sqlite", dir, servers);
    IcebergSink<Record> sink = IcebergSink.forRecords(IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties())
        .catalogName(fixture.name())
        .table("db.events")
        .createTable(TestTables.SCHEMA, List.of("bucket(4, id)"))
        .tableProperties(Map.of("format-version", "2"))
        .maxRowsPerFile(7)
        .writerManifestMinFiles(10)
        .build());
    // writer 0: 140 rows over 4 buckets, files of 7 rows -> 20 files; writer 1: 14 rows -> at most 4 files
    long[][] keys = {{0, 140}, {140, 154}};
    List<StagingManifest> reported = new ArrayList<>();
    for (int w = 0; w < keys.length; w++) {
      SinkWriter<Record, StagingManifest, StagingWriterState> writer =
          sink.createWriter(new WriterContext(JOB, w, keys.length, 0, 0));
      for (long key = keys[w][0]; key < keys[w][1]; key++) {
        writer.write(UpsertTables.row(key, "row-" + key));
      }
      reported.add(writer.prepareCommit(1).orElseThrow());
    }
    assertThat(reported.get(0).files()).hasSizeGreaterThanOrEqualTo(10);
    assertThat(reported.get(0).icebergManifest()).isPresent();
    assertThat(reported.get(1).files()).hasSizeLessThan(10);
    assertThat(reported.get(1).icebergManifest()).isEmpty();

    var committer = sink.createAggregatedCommitter();
    assertThat(committer.commit(committer.combine(new CommitId(JOB, 1), reported)))
        .isInstanceOf(CommitOutcome.Committed.class);

    Table table = fixture.newCatalog().loadTable(IDENT);
    assertThat(jobSnapshots(table)).hasSize(1);
    List<ManifestFile> manifests = added(table, table.currentSnapshot());
    assertThat(manifests).extracting(ManifestFile::path).hasSize(2)
        .anySatisfy(path -> assertThat(path).endsWith(
            reported.get(0).icebergManifest().get().path().replaceFirst("^file:", "")))
        .anySatisfy(path -> assertThat(path).contains("-committer-"));
    assertThat(manifests).extracting(ManifestFile::addedFilesCount).containsExactlyInAnyOrder(
        reported.get(0).files().size(), reported.get(1).files().size());
    assertThat(TestTables.keyCounts(table)).hasSize(154).allSatisfy((k, n) -> assertThat(n).isOne());
  }

  /**
   * A committer that has not read the table yet (a restored checkpoint's replay) finds a checkpoint the table holds
   * before it plans anything for it — no file rewritten, no manifest written and deleted; one that just committed it
   * (its table loaded) finds it in the commit's own check, after planning.
   */
  @Test
  void aReplayOfACommittedCheckpointIsFoundBeforeAnythingIsPlanned() throws Exception {
    IcebergSink<Record> sink = sink("2", false);
    IcebergCommittable committable = new IcebergCommittable(new CommitId(JOB, 1), List.of(stage(sink)));
    int[] planned = {0};
    IcebergAggregatedCommitter.Hooks counting = new IcebergAggregatedCommitter.Hooks() {
      @Override
      public void afterRewrite(FieldIdRewrite.Result rewrite) {
        planned[0]++;
      }
    };
    var first = ((IcebergAggregatedCommitter) sink.createAggregatedCommitter()).hooks(counting);
    assertThat(first.commit(committable)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(first.commit(committable)).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(planned[0]).as("plans of the committer that committed it").isEqualTo(2);

    var replay = ((IcebergAggregatedCommitter) sink.createAggregatedCommitter()).hooks(counting);
    assertThat(replay.commit(committable)).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(planned[0]).as("plans of the replay").isEqualTo(2);
    assertThat(committerManifests(sink, 1)).hasSize(1);
    assertThat(TestTables.keyCounts(fixture.newCatalog().loadTable(IDENT))).hasSize(40)
        .allSatisfy((k, n) -> assertThat(n).isOne());
  }

  @Test
  void aFailedAttemptDeletesItsManifestAndALostAckKeepsTheCommittedOne() throws Exception {
    IcebergSink<Record> sink = sink("2", false);
    IcebergCommittable committable = new IcebergCommittable(new CommitId(JOB, 1), List.of(stage(sink)));
    var notApplied = new IcebergAggregatedCommitter(new TableCommitter(
        new FaultyCatalog(fixture.newCatalog(), FaultyCatalog.Fault.NOT_APPLIED, 1), IDENT, CommitMode.APPEND,
        null, null, CommitMetrics.NONE), sink.table(), sink.layout(), false);

    assertThat(notApplied.commit(committable)).isInstanceOf(CommitOutcome.Retryable.class);
    assertThat(committerManifests(sink, 1)).as("the unused manifest of the failed attempt").isEmpty();

    var ackLost = new IcebergAggregatedCommitter(new TableCommitter(
        new FaultyCatalog(fixture.newCatalog(), FaultyCatalog.Fault.ACK_LOST, 1), IDENT, CommitMode.APPEND,
        null, null, CommitMetrics.NONE), sink.table(), sink.layout(), false);
    assertThat(ackLost.commit(committable)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(sink.createAggregatedCommitter().commit(committable))
        .isInstanceOf(CommitOutcome.AlreadyCommitted.class);

    Table table = fixture.newCatalog().loadTable(IDENT);
    List<String> left = committerManifests(sink, 1);
    assertThat(left).as("exactly the manifest the table references").hasSize(1);
    assertThat(added(table, table.currentSnapshot())).extracting(ManifestFile::path)
        .singleElement().satisfies(path -> assertThat(left.get(0)).endsWith(path.replaceFirst("^file:", "")));
    assertThat(TestTables.keyCounts(table)).hasSize(40).allSatisfy((k, n) -> assertThat(n).isOne());
  }
}
