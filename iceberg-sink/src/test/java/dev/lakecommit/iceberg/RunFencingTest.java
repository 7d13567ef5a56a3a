package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.JobFailedException;
import dev.lakecommit.core.runtime.JobListener;
import dev.lakecommit.core.runtime.JobResult;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.staging.StagingManifest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Exactly-once across runs of one job (DESIGN.md rules 10-13) against real Iceberg tables: a second copy of a
 * running job fences the first, concurrent copies never commit a checkpoint twice, a recreated table and a missing
 * staged file stop a restore, and a removed watermark is found again in the snapshot history.
 */
class RunFencingTest {
  private static final JobId JOB = JobId.of("fenced-job");
  private static final long ROWS = 300;

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

  private static IcebergSinkConfig config(CatalogFixture fixture) {
    return IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties())
        .catalogName(fixture.name())
        .table("db.events")
        .createTable(TestTables.SCHEMA, List.of("bucket(2, id)"))
        .tableProperties(Map.of("format-version", "2"))
        .maxRowsPerFile(40)
        .writerManifestMinFiles(1)
        .build();
  }

  private static StandaloneJob<Record> job(IcebergSink<Record> sink, Path checkpoints, long every, long rows,
      JobListener listener) throws IOException {
    return StandaloneJob.builder(sink, IcebergCrashMatrixTest.records(rows))
        .jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(checkpoints)))
        .parallelism(2)
        .checkpointEveryRecords(every)
        .queueCapacity(8)
        .listener(listener)
        .build();
  }

  /**
   * Run B starts while run A is between checkpoints 2 and 3 and waits, right after its restore, until A is done;
   * B checkpoints every 30 rows, A every 50. Fenced, A commits nothing after B's claim and B writes everything
   * after checkpoint 2 once. With the epoch check switched off, A goes on committing its own checkpoints and B's
   * later ones land on top: rows twice.
   */
  private Map<String, Object> secondCopyDuringTheFirst(CatalogFixture fixture, boolean epochCheck)
      throws Exception {
    Path checkpoints = dir.resolve("checkpoints");
    CountDownLatch bRestored = new CountDownLatch(1);
    CountDownLatch aDone = new CountDownLatch(1);
    CompletableFuture<JobResult> b = new CompletableFuture<>();
    JobListener bListener = new JobListener() {
      @Override
      public void onStart(int attempt, long restoredCheckpointId, long recordCount) {
        bRestored.countDown();
        await(aDone);
      }
    };
    JobListener aListener = new JobListener() {
      @Override
      public void onCheckpointComplete(long checkpointId, long recordCount) {
        if (checkpointId == 2) {
          CompletableFuture.runAsync(() -> {
            try {
              b.complete(job(sink(fixture, epochCheck), checkpoints, 30, ROWS, bListener).run());
            } catch (Throwable e) {
              b.completeExceptionally(e);
            }
          });
          await(bRestored);
        }
      }
    };
    Map<String, Object> outcome = new HashMap<>();
    try {
      outcome.put("a", job(sink(fixture, epochCheck), checkpoints, 50, ROWS, aListener).run());
    } catch (JobFailedException e) {
      outcome.put("a", e);
    } finally {
      aDone.countDown();
    }
    outcome.put("b", b.get(2, TimeUnit.MINUTES));
    return outcome;
  }

  private static IcebergSink<Record> sink(CatalogFixture fixture, boolean epochCheck) {
    return IcebergSink.forRecords(config(fixture)).epochCheck(epochCheck);
  }

  private static void await(CountDownLatch latch) {
    try {
      assertThat(latch.await(2, TimeUnit.MINUTES)).as("the other run reached its step").isTrue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aSecondCopyOfARunningJobFencesTheFirstAndTheTableStaysExact(String catalog) throws Exception {
    CatalogFixture fixture = CatalogFixture.named(catalog, dir, servers);

    Map<String, Object> outcome = secondCopyDuringTheFirst(fixture, true);

    assertThat(outcome.get("a")).isInstanceOf(JobFailedException.class);
    JobFailedException fenced = (JobFailedException) outcome.get("a");
    assertThat(fenced).hasMessageContaining("fenced").hasMessageContaining("epoch 2").hasMessageContaining("pid");
    assertThat(fenced).hasRootCauseInstanceOf(FencedException.class);
    JobResult b = (JobResult) outcome.get("b");
    assertThat(b.restoredCheckpointId()).isEqualTo(2);
    Table table = fixture.newCatalog().loadTable(TestTables.IDENT);
    assertExact(table, ROWS);
    assertThat(snapshotsPerCheckpoint(table).values()).as("one snapshot per checkpoint").allMatch(n -> n == 1);

    JobResult again = job(sink(fixture, true), dir.resolve("checkpoints"), 30, ROWS, JobListener.NONE).run();
    assertThat(again.commits()).isZero();
    assertExact(fixture.newCatalog().loadTable(TestTables.IDENT), ROWS);
  }

  @Test
  void withoutTheEpochCheckTheFirstCopyGoesOnCommittingAndRowsLandTwice() throws Exception {
    CatalogFixture fixture = CatalogFixture.hadoop(dir);

    Map<String, Object> outcome = secondCopyDuringTheFirst(fixture, false);

    assertThat(outcome.get("a")).isInstanceOf(JobResult.class);
    Map<Long, Integer> counts = TestTables.keyCounts(fixture.newCatalog().loadTable(TestTables.IDENT));
    assertThat(counts.values()).as("rows written by both runs").anyMatch(n -> n > 1);
  }

  /**
   * Two or three copies of the job started at random checkpoints of one another, on threads, many times: every
   * copy either ends well or fails as fenced (or refused at start as running twice); no checkpoint is committed
   * twice; after a final run the table is readable and exact. Fencing must actually be seen.
   */
  @Test
  void concurrentCopiesNeverCommitACheckpointTwiceAndAFinalRunIsExact() throws Exception {
    long seed = TestScale.seed();
    Random random = new Random(seed);
    // 8 trials (more, up to 20, until a copy was fenced), 500 with -Plong
    int trials = TestScale.pick(8, 500);
    int fencedRuns = 0;
    for (int trial = 0; trial < trials || (fencedRuns == 0 && trial < Math.max(trials, 20)); trial++) {
      Path base = Files.createDirectory(dir.resolve("trial-" + trial));
      CatalogFixture fixture = CatalogFixture.hadoop(base);
      Path checkpoints = base.resolve("checkpoints");
      String context = "seed " + seed + " (-Dlakecommit.seed=" + seed + "), trial " + trial;
      int copies = 2 + random.nextInt(2);
      long rows = 120;
      List<CompletableFuture<Object>> runs = new ArrayList<>();
      CompletableFuture<Object> previous = null;
      for (int copy = 0; copy < copies; copy++) {
        long every = 10 + random.nextInt(3) * 10;
        int startAt = random.nextInt(5);
        CountDownLatch reached = new CountDownLatch(1);
        CompletableFuture<Object> starter = previous;
        JobListener listener = new JobListener() {
          @Override
          public void onCheckpointPersisted(long checkpointId) {
            if (checkpointId >= startAt) {
              reached.countDown();
            }
          }
        };
        CompletableFuture<Object> run = CompletableFuture.supplyAsync(() -> {
          try {
            return job(sink(fixture, true), checkpoints, every, rows, listener).run();
          } catch (Exception e) {
            return e;
          } finally {
            reached.countDown();
          }
        });
        runs.add(run);
        if (startAt > 0 || starter == null) {
          await(reached);
        }
        previous = run;
      }
      for (CompletableFuture<Object> run : runs) {
        Object result = run.get(2, TimeUnit.MINUTES);
        if (result instanceof Exception e) {
          assertThat(e.getMessage()).as(context + ": " + e).containsAnyOf("fenced", "running twice");
          if (e.getMessage().contains("fenced")) {
            fencedRuns++;
          }
        }
      }
      Table table = fixture.newCatalog().loadTable(TestTables.IDENT);
      assertThat(snapshotsPerCheckpoint(table).values()).as(context + ": one snapshot per checkpoint")
          .allMatch(n -> n == 1);
      job(sink(fixture, true), checkpoints, 10, rows, JobListener.NONE).run();
      assertExact(fixture.newCatalog().loadTable(TestTables.IDENT), rows);
    }
    assertThat(fencedRuns).as("runs fenced in %s trials (seed %s)", trials, seed).isPositive();
  }

  @Test
  void claimsOfOneJobNeverShareAnEpochAndAFencedCommitterCommitsNothing() throws Exception {
    CatalogFixture fixture = CatalogFixture.hadoop(dir);
    IcebergSink<Record> first = IcebergSink.forRecords(config(fixture));
    IcebergSink<Record> second = IcebergSink.forRecords(config(fixture));
    int rounds = TestScale.pick(10, 50);
    List<Long> epochs = new ArrayList<>();
    int conflicts = 0;
    RunEpoch newest;
    try (IcebergTarget a = (IcebergTarget) first.openTarget(); IcebergTarget b = (IcebergTarget) second.openTarget()) {
      for (int i = 0; i < rounds; i++) {
        CyclicBarrier together = new CyclicBarrier(2);
        CompletableFuture<RunEpoch> x = CompletableFuture.supplyAsync(() -> claim(a, together, "x"));
        CompletableFuture<RunEpoch> y = CompletableFuture.supplyAsync(() -> claim(b, together, "y"));
        epochs.add(x.get().epoch());
        epochs.add(y.get().epoch());
      }
      conflicts = a.claimConflicts() + b.claimConflicts();
      newest = a.currentEpoch(JOB).orElseThrow();
      assertThat(newest.epoch()).isEqualTo(2L * rounds);
    }
    assertThat(epochs).doesNotHaveDuplicates().hasSize(2 * rounds);
    assertThat(conflicts).as("claims that raced and were read again").isPositive();

    // A committer fenced at an older epoch: its commit is refused, names the newer run, and adds nothing.
    SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committer = first.createAggregatedCommitter();
    committer.fence(JOB, 2L * rounds - 1);
    Table before = fixture.newCatalog().loadTable(TestTables.IDENT);
    StagingManifest staged;
    try (var writer = first.createWriter(new dev.lakecommit.core.WriterContext(JOB, 0, 1, 0, 0, 2L * rounds - 1))) {
      writer.write(IcebergCrashMatrixTest.records(1).open(null).next());
      staged = writer.prepareCommit(1).orElseThrow();
    }
    CommitOutcome outcome =
        committer.commit(committer.combine(new dev.lakecommit.core.CommitId(JOB, 1), List.of(staged)));
    assertThat(outcome).isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(((CommitOutcome.Fatal) outcome).cause()).isInstanceOf(FencedException.class)
        .hasMessageContaining("epoch " + 2 * rounds).hasMessageContaining("(" + newest.run() + ")");
    Table after = fixture.newCatalog().loadTable(TestTables.IDENT);
    assertThat(after.currentSnapshot()).isEqualTo(before.currentSnapshot());
  }

  private static RunEpoch claim(CommitTarget target, CyclicBarrier together, String run) {
    try {
      together.await(1, TimeUnit.MINUTES);
      return target.claimEpoch(JOB, run);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Scenario 4: the table dropped and created again while the checkpoint directory survives. The old table's runs
   * reached epoch 3; the new table's epochs start over, and its checkpoints must still be restorable.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aRestoreAgainstARecreatedTableStopsOrStartsAfreshButNeverCommitsTheOldFiles(String catalog)
      throws Exception {
    CatalogFixture fixture = CatalogFixture.named(catalog, dir, servers);
    Path checkpoints = dir.resolve("checkpoints");
    for (long checkpoint = 2; checkpoint <= 4; checkpoint++) {
      crashAfterPersisting(fixture, checkpoints, checkpoint, false); // runs of epochs 1, 2 and 3
    }
    Catalog catalogue = fixture.newCatalog();
    catalogue.dropTable(TestTables.IDENT, false);
    IcebergSink<Record> onNewTable = sink(fixture, true); // creates the table again

    assertThatThrownBy(() -> job(onNewTable, checkpoints, 50, ROWS, JobListener.NONE).run())
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining("another table")
        .hasMessageContaining("dropped and created again");
    // (on a REST catalog the refused run's claim left an empty snapshot: no checkpoint, no rows)
    Table recreated = fixture.newCatalog().loadTable(TestTables.IDENT);
    assertThat(TestTables.committedCheckpoints(recreated)).as("nothing committed").isEmpty();
    assertThat(TestTables.keyCounts(recreated)).as("nothing committed").isEmpty();

    // Started afresh, the new table's run (epoch 2 there) dies after its first checkpoint (5) ...
    crashAfterPersisting(fixture, checkpoints, 5, true);
    // ... and the next run resumes from it, not from a checkpoint of the old table.
    JobResult resumed = job(sink(fixture, true), checkpoints, 50, ROWS, JobListener.NONE).run();
    assertThat(resumed.restoredCheckpointId()).isEqualTo(5);
    assertExact(fixture.newCatalog().loadTable(TestTables.IDENT), ROWS);
  }

  /** A pending commit whose staged files are gone is never committed. */
  @Test
  void aPendingCommitWhoseStagedFileIsGoneIsNeverCommitted() throws Exception {
    CatalogFixture fixture = CatalogFixture.hadoop(dir);
    Path checkpoints = dir.resolve("checkpoints");
    crashAfterPersisting(fixture, checkpoints, 3, false);
    Table table = fixture.newCatalog().loadTable(TestTables.IDENT);
    Path ckpt3 = Path.of((IcebergSink.stagingRoot(table) + "/" + JOB + "/ckpt-3").replaceFirst("^file:", ""));
    Path victim;
    try (Stream<Path> files = Files.walk(ckpt3)) {
      victim = files.filter(p -> p.toString().endsWith(".parquet")).findFirst().orElseThrow();
    }
    Files.delete(victim);
    long before = table.currentSnapshot().snapshotId();

    assertThatThrownBy(() -> job(sink(fixture, true), checkpoints, 50, ROWS, JobListener.NONE).run())
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining("Pending checkpoint 3")
        .hasMessageContaining(victim.getFileName().toString());
    assertThat(fixture.newCatalog().loadTable(TestTables.IDENT).currentSnapshot().snapshotId()).isEqualTo(before);
  }

  /**
   * Scenario 6: the watermark property removed while the job's last commit was never acknowledged and another
   * writer committed after it. The replay is found in the snapshot history, not committed again.
   */
  @Test
  void aRemovedWatermarkIsFoundInTheSnapshotHistoryAndAReplayCommitsNothingTwice() throws Exception {
    CatalogFixture fixture = CatalogFixture.hadoop(dir);
    Path checkpoints = dir.resolve("checkpoints");
    // Checkpoint 3 committed, but the run dies before it hears so: the checkpoint keeps it as pending.
    crashAt(fixture, checkpoints, l -> new JobListener() {
      @Override
      public void onCommitted(long checkpointId, CommitOutcome outcome, long durationNanos) {
        if (checkpointId == 3) {
          throw new dev.lakecommit.core.testing.SimulatedCrash("committed-before-ack", checkpointId);
        }
      }
    });
    Table table = fixture.newCatalog().loadTable(TestTables.IDENT);
    table.newFastAppend().set("written-by", "another writer").commit(); // the job's snapshot is not the head
    table.refresh();
    assertThat(table.currentSnapshot().summary()).doesNotContainKey(dev.lakecommit.core.CommitId.JOB_ID_KEY);
    table.updateProperties().remove(dev.lakecommit.core.CommitId.watermarkKey(JOB)).commit();

    job(sink(fixture, true), checkpoints, 50, ROWS, JobListener.NONE).run();

    Table after = fixture.newCatalog().loadTable(TestTables.IDENT);
    assertExact(after, ROWS);
    assertThat(snapshotsPerCheckpoint(after).values()).allMatch(n -> n == 1);
  }

  private void crashAfterPersisting(CatalogFixture fixture, Path checkpoints, long checkpoint, boolean afresh)
      throws Exception {
    JobListener crash = new JobListener() {
      @Override
      public void onCheckpointPersisted(long checkpointId) {
        if (checkpointId == checkpoint) {
          throw new dev.lakecommit.core.testing.SimulatedCrash("persisted-before-commit", checkpointId);
        }
      }
    };
    StandaloneJob<Record> job = StandaloneJob.builder(sink(fixture, true), IcebergCrashMatrixTest.records(ROWS))
        .jobId(JOB).checkpointStore(new CheckpointStore(new LocalBlobStore(checkpoints))).parallelism(2)
        .checkpointEveryRecords(50).freshStartOnNewTarget(afresh).listener(crash).build();
    assertThatThrownBy(job::run).isInstanceOf(dev.lakecommit.core.testing.SimulatedCrash.class);
  }

  private void crashAt(CatalogFixture fixture, Path checkpoints,
      java.util.function.Function<Void, JobListener> listener) throws Exception {
    assertThatThrownBy(() -> job(sink(fixture, true), checkpoints, 50, ROWS, listener.apply(null)).run())
        .isInstanceOf(dev.lakecommit.core.testing.SimulatedCrash.class);
  }

  /** Every source row once, read with Iceberg's reader, and every data file the table references exists. */
  static void assertExact(Table table, long rows) throws IOException {
    Map<Long, Integer> counts = TestTables.keyCounts(table);
    assertThat(counts).hasSize((int) rows);
    assertThat(counts.values()).allMatch(n -> n == 1);
    assertThat(counts.keySet()).allMatch(key -> key >= 0 && key < rows);
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        assertThat(table.io().newInputFile(task.file().location()).exists())
            .as("referenced data file %s exists", task.file().location()).isTrue();
      }
    }
  }

  /** How many snapshots of the job carry each checkpoint id. */
  static Map<Long, Integer> snapshotsPerCheckpoint(Table table) {
    table.refresh();
    Map<Long, Integer> counts = new HashMap<>();
    for (Snapshot snapshot : table.snapshots()) {
      if (JOB.value().equals(snapshot.summary().get(dev.lakecommit.core.CommitId.JOB_ID_KEY))) {
        counts.merge(Long.parseLong(snapshot.summary().get(dev.lakecommit.core.CommitId.CHECKPOINT_ID_KEY)), 1,
            Integer::sum);
      }
    }
    return counts;
  }
}
