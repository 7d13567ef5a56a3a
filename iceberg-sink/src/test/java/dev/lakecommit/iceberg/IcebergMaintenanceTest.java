package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.JobListener;
import dev.lakecommit.core.runtime.JobResult;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.core.testing.RangeSource;
import dev.lakecommit.core.testing.SimulatedCrash;
import dev.lakecommit.staging.StagingLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Maintenance of real Iceberg tables (Hadoop and JDBC/SQLite catalogs on a temp dir) while a Lakecommit job commits
 * checkpoints: rows stay exact and every referenced file exists after every round, a restart after expiry finds
 * its last checkpoint, conflicting compactions are dropped, crashes leave only orphans, and live runs' staged files
 * survive orphan removal.
 */
class IcebergMaintenanceTest {
  private static final JobId JOB = JobId.of("maint-job");
  private static final Duration OLD = Duration.ofDays(4);

  @TempDir Path dir;

  private CatalogFixture fixture(String name) {
    return CatalogFixture.named(name, dir, new ArrayList<>());
  }

  private static IcebergSinkConfig.Builder config(CatalogFixture fixture) {
    return IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties())
        .catalogName(fixture.name())
        .table("db.events")
        .createTable(TestTables.SCHEMA, List.of("bucket(2, id)"))
        .tableProperties(Map.of("format-version", "2"))
        .maxRowsPerFile(15)
        .writerManifestMinFiles(1);
  }

  private StandaloneJob<Record> job(IcebergSink<Record> sink, long rows, long every, JobListener listener)
      throws IOException {
    return StandaloneJob.builder(sink, IcebergCrashMatrixTest.records(rows))
        .jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints"))))
        .parallelism(2)
        .checkpointEveryRecords(every)
        .queueCapacity(8)
        .listener(listener)
        .build();
  }

  /**
   * Iceberg's own Hadoop catalog is refused: its commits are not kept apart from the job's (with it as the
   * maintenance catalog, {@link #maintenanceWhileAJobCommits} lost a checkpoint in 6 of 160 runs: two commits renamed
   * onto one version file; none in 80 with the catalog loaded as Lakecommit loads it, which is accepted).
   */
  @Test
  void icebergsOwnHadoopCatalogIsRefused() {
    Map<String, String> properties = Map.of("type", "hadoop",
        "warehouse", dir.resolve("warehouse").toUri().toString());
    Catalog plain = org.apache.iceberg.CatalogUtil.buildIcebergCatalog("plain", properties,
        new org.apache.hadoop.conf.Configuration());
    assertThatThrownBy(() -> IcebergMaintenance.of(plain, TestTables.IDENT))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Maintenance of " + TestTables.IDENT)
        .hasMessageContaining("Iceberg's own HadoopCatalog")
        .hasMessageContaining("CatalogLoader.load");
    Catalog guarded = CatalogLoader.load("guarded", properties, new org.apache.hadoop.conf.Configuration());
    assertThat(IcebergMaintenance.of(guarded, TestTables.IDENT)).isNotNull();
  }

  /** Rows 0..n-1 each once for some n (a prefix of the source: what the committed checkpoints hold). */
  private static long assertExactPrefix(Table table) {
    Map<Long, Integer> counts = TestTables.keyCounts(table);
    assertThat(counts.values()).allMatch(count -> count == 1);
    for (long key = 0; key < counts.size(); key++) {
      assertThat(counts).containsKey(key);
    }
    return counts.size();
  }

  /** Every data and delete file the current snapshot references exists. */
  private static void assertReferencedFilesExist(Table table) {
    table.refresh();
    if (table.currentSnapshot() == null) {
      return;
    }
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        assertThat(table.io().newInputFile(task.file().location()).exists()).as(task.file().location()).isTrue();
        for (DeleteFile delete : task.deletes()) {
          assertThat(table.io().newInputFile(delete.location()).exists()).as(delete.location()).isTrue();
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Path local(String location) {
    return location.startsWith("file:") ? Paths.get(java.net.URI.create(location.startsWith("file:///")
        ? location : "file://" + location.substring("file:".length()))) : Paths.get(location);
  }

  private static String plant(Table table, String location) throws IOException {
    Path path = local(location);
    Files.createDirectories(path.getParent());
    Files.write(path, new byte[] {1, 2, 3});
    Files.setLastModifiedTime(path, FileTime.from(Instant.now().minus(OLD)));
    return location;
  }

  private static void age(String location) throws IOException {
    Files.setLastModifiedTime(local(location), FileTime.from(Instant.now().minus(OLD)));
  }

  /**
   * A job commits 30 checkpoints of small files while the test thread compacts, expires and removes orphans in
   * rounds; the job waits at every 5th checkpoint for one more round, so rounds and commits interleave. After each
   * round the table holds an exact prefix of the source and every referenced file exists; a planted old orphan is
   * removed. Then the watermark's lookup works after expiry: the same job run again commits nothing.
   */
  @ParameterizedTest
  @ValueSource(strings = {"hadoop", "jdbc-sqlite"})
  void maintenanceWhileAJobCommits(String catalogName) throws Exception {
    CatalogFixture fixture = fixture(catalogName);
    long rows = 600;
    Object monitor = new Object();
    int[] rounds = {0};
    JobListener listener = new JobListener() {
      @Override
      public void onCheckpointComplete(long checkpointId, long recordCount) {
        if (checkpointId % 5 != 0) {
          return;
        }
        synchronized (monitor) {
          int wanted = rounds[0] + 1;
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
          while (rounds[0] < wanted && System.nanoTime() < deadline) {
            try {
              monitor.wait(1000);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              return;
            }
          }
        }
      }
    };
    CompletableFuture<JobResult> run;
    String planted;
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config(fixture).build())) {
      planted = plant(sink.table(), sink.table().location() + "/data/planted-orphan.parquet");
      StandaloneJob<Record> job = job(sink, rows, 20, listener);
      run = CompletableFuture.supplyAsync(() -> {
        try {
          return job.run();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      Catalog catalog = fixture.newCatalog();
      IcebergMaintenance maintenance = IcebergMaintenance.of(catalog, TestTables.IDENT);
      List<Compaction.Outcome> outcomes = new ArrayList<>();
      long removedOrphans = 0;
      while (!run.isDone()) {
        outcomes.add(maintenance.compact(2).outcome());
        maintenance.expireSnapshots(Instant.now(), 3);
        removedOrphans += maintenance.removeOrphans(IcebergMaintenance.DEFAULT_ORPHAN_AGE).deleted().size();
        maintenance.rewriteManifests(4);
        Table table = maintenance.table();
        assertExactPrefix(table);
        assertReferencedFilesExist(table);
        synchronized (monitor) {
          rounds[0]++;
          monitor.notifyAll();
        }
      }
      assertThat(run.get(2, TimeUnit.MINUTES).lastCheckpointId()).isEqualTo(30);
      assertThat(outcomes).contains(Compaction.Outcome.COMMITTED);
      assertThat(removedOrphans).isEqualTo(1);
      assertThat(Files.exists(local(planted))).isFalse();

      maintenance.compact(0);
      maintenance.expireSnapshots(Instant.now(), 1);
      Table table = maintenance.table();
      assertThat(assertExactPrefix(table)).isEqualTo(rows);
      assertReferencedFilesExist(table);
      assertThat(table.snapshots()).hasSize(1);
      try (CommitTarget target = sink.openTarget()) {
        assertThat(target.lastCommittedCheckpoint(JOB)).hasValue(30);
      }
    }
    try (IcebergSink<Record> again = IcebergSink.forRecords(config(fixture).build())) {
      JobResult rerun = job(again, rows, 20, new JobListener() {}).run();
      assertThat(rerun.commits()).isZero();
      assertThat(assertExactPrefix(again.table())).isEqualTo(rows);
    }
  }

  /** Without a watermark property the lookup walks the history: expiry keeps it down to the job's last commit. */
  @Test
  void expiryKeepsTheHistoryAJobWithoutWatermarkNeeds() throws Exception {
    CatalogFixture fixture = fixture("hadoop");
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config(fixture).build())) {
      job(sink, 100, 20, new JobListener() {}).run();
      Table table = sink.table();
      table.refresh();
      table.updateProperties().remove(CommitId.watermarkKey(JOB)).commit();
      long jobsLast = table.currentSnapshot().snapshotId();
      // Later snapshots of another job on top of the job's last one.
      StandaloneJob.builder(sink, range(1000, 40, "other"))
          .jobId(JobId.of("other-job"))
          .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints-other"))))
          .checkpointEveryRecords(20)
          .build()
          .run();
      table.refresh();

      IcebergMaintenance maintenance = IcebergMaintenance.of(fixture.newCatalog(), TestTables.IDENT);
      SnapshotExpiry.Plan plan = maintenance.planExpiry(Instant.now(), 1);
      assertThat(plan.protectedBy()).containsEntry(JOB.value(), jobsLast);
      assertThat(plan.expire()).isNotEmpty().doesNotContain(jobsLast);
      assertThat(maintenance.table().snapshots()).hasSize(plan.expire().size() + 3);
      assertThat(plan.protectedBy()).doesNotContainKey("other-job"); // its watermark answers its lookup
      SnapshotExpiry.Result result = maintenance.expireSnapshots(Instant.now(), 1);
      assertThat(result.expired()).containsExactlyInAnyOrderElementsOf(plan.expire());
      try (CommitTarget target = sink.openTarget()) {
        assertThat(target.lastCommittedCheckpoint(JOB)).hasValue(5);
      }
    }
    try (IcebergSink<Record> again = IcebergSink.forRecords(config(fixture).build())) {
      assertThat(job(again, 100, 20, new JobListener() {}).run().commits()).isZero();
      assertThat(TestTables.keyCounts(again.table())).hasSize(140).allSatisfy((key, count) -> assertThat(count)
          .isEqualTo(1));
    }
  }

  /** Two compactions of the same files: the one that commits second fails validation and is dropped. */
  @Test
  void aConflictingCompactionIsDropped() throws Exception {
    CatalogFixture fixture = fixture("hadoop");
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config(fixture).build())) {
      job(sink, 200, 20, new JobListener() {}).run();
    }
    IcebergMaintenance first = IcebergMaintenance.of(fixture.newCatalog(), TestTables.IDENT);
    IcebergMaintenance second = IcebergMaintenance.of(fixture.newCatalog(), TestTables.IDENT);
    AtomicReference<Compaction.Result> winner = new AtomicReference<>();
    List<String> loserFiles = new ArrayList<>();
    first.beforeCompactionCommit(() -> {
      try {
        winner.set(second.compact(0));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      loserFiles.addAll(compactedFiles(dir.resolve("warehouse")));
    });
    Compaction.Result loser = first.compact(0);
    assertThat(winner.get().outcome()).isEqualTo(Compaction.Outcome.COMMITTED);
    assertThat(loser.outcome()).isEqualTo(Compaction.Outcome.DROPPED_CONFLICT);
    assertThat(loser.reason()).contains("Missing required files to delete");
    Table table = first.table();
    assertThat(assertExactPrefix(table)).isEqualTo(200);
    assertReferencedFilesExist(table);
    List<String> live = new ArrayList<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(task -> live.add(OrphanFiles.normalize(task.file().location())));
    }
    // The dropped rewrite's own files are deleted; the winner's are the table's.
    assertThat(compactedFiles(dir.resolve("warehouse"))).allMatch(live::contains);
    assertThat(loserFiles.size()).isGreaterThan(compactedFiles(dir.resolve("warehouse")).size());
  }

  private static List<String> compactedFiles(Path warehouse) {
    try (var files = Files.walk(warehouse)) {
      return files.filter(p -> p.getFileName().toString().startsWith("lakecommit-compact-")
              && p.toString().endsWith(".parquet"))
          .map(Path::toString).toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * An upsert checkpoint commits while a compaction of the same keys' files is between writing and committing:
   * the compaction commits (its files carry the planned data sequence number), and the upsert's equality deletes
   * still apply to the compacted rows: one row per key, the newest value.
   */
  @Test
  void upsertsCommittedDuringCompactionStillApply() throws Exception {
    CatalogFixture fixture = fixture("hadoop");
    IcebergSinkConfig upserts = UpsertTables.config(fixture).maxRowsPerFile(5).build();
    try (IcebergSink<Record> sink = IcebergSink.forRecords(upserts)) {
      upsertJob(sink, JobId.of("upserts-1"), UpsertTables.updates(200, 20)).run();
    }
    IcebergMaintenance maintenance = IcebergMaintenance.of(fixture.newCatalog(), TestTables.IDENT);
    maintenance.beforeCompactionCommit(() -> {
      try (IcebergSink<Record> sink = IcebergSink.forRecords(upserts)) {
        upsertJob(sink, JobId.of("upserts-2"), late(20)).run();
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    Compaction.Result result = maintenance.compact(0);
    assertThat(result.outcome()).isEqualTo(Compaction.Outcome.COMMITTED);
    Table table = maintenance.table();
    Map<Long, List<String>> rows = UpsertTables.rows(table);
    assertThat(rows).hasSize(20);
    rows.forEach((key, values) -> assertThat(values).containsExactly("late-" + key));
    assertReferencedFilesExist(table);
  }

  private StandaloneJob<Record> upsertJob(IcebergSink<Record> sink, JobId jobId, CheckpointedSource<Record> source)
      throws IOException {
    return StandaloneJob.builder(sink, source)
        .jobId(jobId)
        .router(sink.keyRouter())
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints-" + jobId.value()))))
        .parallelism(2)
        .checkpointEveryRecords(20)
        .build();
  }

  private static CheckpointedSource<Record> late(int keys) {
    return range(0, keys, "late");
  }

  /** Records of keys {@code from .. from+count-1}, payload {@code <prefix>-<key>}. */
  private static CheckpointedSource<Record> range(long from, long count, String prefix) {
    RangeSource positions = new RangeSource(count);
    return position -> {
      CheckpointedSource.SourceReader<Long> reader = positions.open(position);
      return new CheckpointedSource.SourceReader<>() {
        @Override
        public Record next() throws IOException {
          Long i = reader.next();
          return i == null ? null : UpsertTables.row(from + i, prefix + "-" + (from + i));
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

  /**
   * A crash after the compacted files are written and before the commit: the table is unchanged, the leftover
   * files are orphans that orphan removal takes once old enough (also after a crash during that deletion), and the
   * compaction run again commits. Run once more after its commit, it finds nothing left to do.
   */
  @Test
  void crashBeforeAndAfterTheCompactionCommit() throws Exception {
    CatalogFixture fixture = fixture("hadoop");
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config(fixture).build())) {
      job(sink, 200, 20, new JobListener() {}).run();
    }
    IcebergMaintenance crashing = IcebergMaintenance.of(fixture.newCatalog(), TestTables.IDENT)
        .beforeCompactionCommit(() -> {
          throw new SimulatedCrash("before compaction commit", 0);
        });
    long snapshotBefore = crashing.table().currentSnapshot().snapshotId();
    assertThatThrownBy(() -> crashing.compact(0)).isInstanceOf(SimulatedCrash.class);
    List<String> leftovers = compactedFiles(dir.resolve("warehouse"));
    assertThat(leftovers).isNotEmpty();
    IcebergMaintenance maintenance = IcebergMaintenance.of(fixture.newCatalog(), TestTables.IDENT);
    assertThat(maintenance.table().currentSnapshot().snapshotId()).isEqualTo(snapshotBefore);
    assertThat(assertExactPrefix(maintenance.table())).isEqualTo(200);

    assertThat(maintenance.planOrphans(IcebergMaintenance.DEFAULT_ORPHAN_AGE).orphans()).isEmpty(); // too young
    for (String leftover : leftovers) {
      age(leftover);
    }
    OrphanFiles.Plan plan = maintenance.planOrphans(IcebergMaintenance.DEFAULT_ORPHAN_AGE);
    assertThat(plan.orphans()).map(OrphanFiles::normalize).containsExactlyInAnyOrderElementsOf(leftovers);
    assertThat(compactedFiles(dir.resolve("warehouse"))).hasSameSizeAs(leftovers); // planning deleted nothing
    // A crash during orphan deletion: one file gone, the rest still there; the next run deletes the rest.
    IcebergMaintenance crashingDelete = IcebergMaintenance.of(fixture.newCatalog(), TestTables.IDENT)
        .beforeOrphanDelete(() -> {
          try {
            Files.delete(Path.of(leftovers.get(0)));
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
          throw new SimulatedCrash("during orphan deletion", 0);
        });
    assertThatThrownBy(() -> crashingDelete.removeOrphans(IcebergMaintenance.DEFAULT_ORPHAN_AGE))
        .isInstanceOf(SimulatedCrash.class);
    assertThat(compactedFiles(dir.resolve("warehouse"))).hasSize(leftovers.size() - 1);
    assertThat(maintenance.removeOrphans(IcebergMaintenance.DEFAULT_ORPHAN_AGE).deleted()).hasSize(
        leftovers.size() - 1);
    assertThat(compactedFiles(dir.resolve("warehouse"))).isEmpty();
    assertThat(assertExactPrefix(maintenance.table())).isEqualTo(200);

    Compaction.Result committed = maintenance.compact(0);
    assertThat(committed.outcome()).isEqualTo(Compaction.Outcome.COMMITTED);
    assertThat(committed.filesAdded()).isLessThan(committed.filesRewritten());
    assertThat(maintenance.compact(0).outcome()).isEqualTo(Compaction.Outcome.NOTHING_TO_DO);
    assertThat(assertExactPrefix(maintenance.table())).isEqualTo(200);
    assertReferencedFilesExist(maintenance.table());
  }

  /**
   * Unreferenced old staged files: above the watermark and of the current run, or of a fenced run whose fencer
   * claimed recently, they are kept (a run may still commit them); at or below the watermark, or fenced long ago,
   * they go.
   */
  @Test
  void orphansOfALiveRunsUncommittedCheckpointSurvive() throws Exception {
    CatalogFixture fixture = fixture("hadoop");
    String ownLive;
    String fencedRecent;
    String committedLeftover;
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config(fixture).build())) {
      job(sink, 100, 20, new JobListener() {}).run(); // checkpoints 1..5, epoch 1
      StagingLayout layout = sink.layout();
      long epoch;
      try (CommitTarget target = sink.openTarget()) {
        epoch = target.claimEpoch(JOB, RunEpoch.thisProcess()).epoch(); // epoch 2: a live run
      }
      ownLive = plant(sink.table(), staged(layout, 7, epoch));
      fencedRecent = plant(sink.table(), staged(layout, 6, epoch - 1));
      committedLeftover = plant(sink.table(), staged(layout, 3, epoch - 1));
      IcebergMaintenance maintenance = IcebergMaintenance.of(fixture.newCatalog(), TestTables.IDENT);
      OrphanFiles.Plan plan = maintenance.planOrphans(IcebergMaintenance.DEFAULT_ORPHAN_AGE);
      assertThat(plan.keptStaged()).map(OrphanFiles::normalize)
          .containsExactlyInAnyOrder(OrphanFiles.normalize(ownLive), OrphanFiles.normalize(fencedRecent));
      assertThat(plan.orphans()).map(OrphanFiles::normalize).containsExactly(OrphanFiles.normalize(committedLeftover));
      maintenance.removeOrphans(IcebergMaintenance.DEFAULT_ORPHAN_AGE);
      assertThat(Files.exists(local(ownLive))).isTrue();
      assertThat(Files.exists(local(fencedRecent))).isTrue();
      assertThat(Files.exists(local(committedLeftover))).isFalse();

      // The fencing run claimed long ago: its restore is over, the fenced run's files are garbage.
      Table table = maintenance.table();
      table.updateProperties().set(RunEpoch.key(JOB),
          new RunEpoch(epoch, "pid 1 on host at " + Instant.now().minus(OLD) + ", attempt 1").value()).commit();
      assertThat(maintenance.removeOrphans(IcebergMaintenance.DEFAULT_ORPHAN_AGE).deleted())
          .map(OrphanFiles::normalize).containsExactly(OrphanFiles.normalize(fencedRecent));
      assertThat(Files.exists(local(ownLive))).isTrue();
      assertThat(assertExactPrefix(maintenance.table())).isEqualTo(100);
      assertReferencedFilesExist(maintenance.table());
    }
  }

  /** The claim time is read from run descriptions as the runtime and the engine adapters write them. */
  @Test
  void claimTimesAreReadFromRunDescriptions() {
    Instant now = Instant.parse("2026-12-01T02:10:00.123Z");
    assertThat(OrphanFiles.claimTime(new RunEpoch(3, "pid 7 on h at " + now + ", attempt 2"))).hasValue(now);
    assertThat(OrphanFiles.claimTime(new RunEpoch(3, "Flink job submitted from pid 7 on h at " + now)))
        .hasValue(now);
    assertThat(OrphanFiles.claimTime(new RunEpoch(3, RunEpoch.thisProcess() + ", attempt 1"))).isPresent();
    assertThat(OrphanFiles.claimTime(new RunEpoch(3, "someone"))).isEmpty();
  }

  private static String staged(StagingLayout layout, long checkpoint, long epoch) {
    return layout.fileLocation(new WriterContext(JOB, 0, 2, 0, 0, epoch), checkpoint, "id_bucket=0", 0,
        FileFormat.PARQUET);
  }

  /** Many checkpoints leave many small manifests; the rewrite merges them, rows unchanged. Dry plans change nothing. */
  @Test
  void manifestRewriteAndDryPlans() throws Exception {
    CatalogFixture fixture = fixture("hadoop");
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config(fixture).build())) {
      job(sink, 200, 20, new JobListener() {}).run();
      assertThat(sink.table().properties())
          .containsEntry(TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, "true")
          .containsEntry(TableProperties.METADATA_PREVIOUS_VERSIONS_MAX, "100");
    }
    IcebergMaintenance maintenance = IcebergMaintenance.of(fixture.newCatalog(), TestTables.IDENT);
    Snapshot before = maintenance.table().currentSnapshot();
    assertThat(maintenance.planCompaction(2).bins()).isNotEmpty();
    int snapshots = 0;
    for (Snapshot ignored : maintenance.table().snapshots()) {
      snapshots++;
    }
    assertThat(maintenance.planExpiry(Instant.now(), 1).expire()).hasSize(snapshots - 1);
    assertThat(maintenance.planOrphans(Duration.ZERO).orphans()).isEmpty();
    ManifestRewrite.Plan manifests = maintenance.planManifestRewrite(4);
    assertThat(manifests.manifests()).hasSizeGreaterThanOrEqualTo(10);
    assertThat(maintenance.table().currentSnapshot().snapshotId()).isEqualTo(before.snapshotId());

    ManifestRewrite.Result result = maintenance.rewriteManifests(4);
    assertThat(result.rewritten()).isEqualTo(manifests.manifests().size());
    Table table = maintenance.table();
    assertThat(table.currentSnapshot().dataManifests(table.io()).size()).isLessThan(manifests.manifests().size());
    assertThat(assertExactPrefix(table)).isEqualTo(200);
    assertThat(maintenance.planManifestRewrite(4).manifests()).isEmpty();
  }

  /**
   * A round's compaction leaves the manifests that listed its files carrying them as deleted entries, which every
   * scan reads until they are rewritten; the round rewrites them after its compaction, so the current snapshot
   * lists live files only, in one manifest per partition, with the rows unchanged.
   */
  @Test
  void aRoundLeavesNoDeletedEntriesForScansToRead() throws Exception {
    CatalogFixture fixture = fixture("hadoop");
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config(fixture).build())) {
      job(sink, 200, 20, new JobListener() {}).run();
    }
    IcebergMaintenance maintenance = IcebergMaintenance.of(fixture.newCatalog(), TestTables.IDENT);
    MaintenanceRound.Result round = maintenance.round(MaintenanceOptions.builder().keepCheckpoints(1)
        .minSmallManifests(100).build(), "test");
    assertThat(round.compaction().outcome()).isEqualTo(Compaction.Outcome.COMMITTED);
    assertThat(round.steps()).anyMatch(step -> step.startsWith("manifest rewrite after compaction: ")
        && !step.endsWith(": 0"));
    Table table = maintenance.table();
    List<org.apache.iceberg.ManifestFile> manifests = table.currentSnapshot().dataManifests(table.io());
    assertThat(manifests).noneMatch(ManifestRewrite::carriesDeletedEntries);
    assertThat(manifests).as("one manifest per partition of bucket(2, id)").hasSizeLessThanOrEqualTo(2);
    assertThat(assertExactPrefix(table)).isEqualTo(200);
    assertReferencedFilesExist(table);
  }

  /** Compaction leaves the newest N checkpoint commits' files alone. */
  @Test
  void compactionKeepsTheNewestCheckpoints() throws Exception {
    CatalogFixture fixture = fixture("hadoop");
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config(fixture).build())) {
      job(sink, 200, 20, new JobListener() {}).run();
    }
    IcebergMaintenance maintenance = IcebergMaintenance.of(fixture.newCatalog(), TestTables.IDENT);
    Table table = maintenance.table();
    long boundary = -1;
    int seen = 0;
    for (Snapshot s : org.apache.iceberg.util.SnapshotUtil.ancestorsOf(table.currentSnapshot().snapshotId(),
        table::snapshot)) {
      if (++seen == 3) {
        boundary = s.sequenceNumber();
      }
    }
    long b = boundary;
    Compaction.Plan plan = maintenance.planCompaction(3);
    assertThat(plan.bins()).isNotEmpty();
    assertThat(plan.bins()).flatMap(Compaction.Bin::files).allMatch(f -> f.fileSequenceNumber() < b);
    assertThat(maintenance.planCompaction(11).bins()).isEmpty(); // only 10 checkpoints
  }
}
