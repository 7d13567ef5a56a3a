package dev.lakecommit.hive;

import static dev.lakecommit.hive.HiveTestData.MIXED;
import static dev.lakecommit.hive.HiveTestData.PARTITIONED;
import static dev.lakecommit.hive.HiveTestData.SCHEMA;
import static dev.lakecommit.hive.HiveTestData.row;
import static dev.lakecommit.hive.HiveTestData.rows;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.testing.SimulatedCrash;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.LongFunction;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.LockComponent;
import org.apache.hadoop.hive.metastore.api.LockLevel;
import org.apache.hadoop.hive.metastore.api.LockRequest;
import org.apache.hadoop.hive.metastore.api.LockResponse;
import org.apache.hadoop.hive.metastore.api.LockState;
import org.apache.hadoop.hive.metastore.api.LockType;
import org.apache.hadoop.hive.metastore.api.ShowLocksRequest;
import org.apache.hadoop.hive.metastore.api.ShowLocksResponseElement;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Exactly-once across runs of a job on a Hive table (DESIGN.md rules 10-13), on local disk with a metastore on
 * embedded Derby: run epochs claimed in the table and checked by every commit, commit intents that a later run
 * finishes or undoes, and the table's identity.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HiveRunEpochIT {
  /** Rows per checkpoint in the rerun scenario: checkpoint k holds source rows [30 (k - 1), 30 k). */
  private static final int ROWS_PER_CHECKPOINT = 30;

  private HiveMetastoreServer hms;
  private HiveFixture fixture;

  @BeforeAll
  void start() throws Exception {
    hms = HiveMetastoreServer.startOnDerby();
    fixture = new HiveFixture(hms, hms.warehouseLocation(), Map.of());
  }

  @AfterAll
  void stop() {
    if (fixture != null) {
      fixture.close();
    }
    if (hms != null) {
      hms.close();
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Scenario 3 of issue #14: a rerun after a Hive commit that failed after its first file moves

  /**
   * Run 1 commits checkpoint 1, then checkpoint 2 fails after its files moved into the (existing) partitions, where
   * readers see them at once: the metastore is down at {@code alter_partitions}. Run 2 claims a new epoch — the claim
   * rolls checkpoint 2 forward — reads the watermark (2) and goes on from there: every source row once, every file
   * of every registered partition once, exact statistics.
   */
  @Test
  void aRerunAfterACommitThatFailedAfterItsFirstMovesWritesEveryRowOnce() throws Exception {
    String table = HiveFixture.newTable("rerun");
    Rerun rerun = failThenRerun(table, true);

    assertThat(rerun.rolledForward()).as("intents rolled forward by run 2's claim").isEqualTo(1);
    assertThat(rerun.watermarkSeen()).as("watermark run 2 resumed after").isEqualTo(2);
    TableContents contents = fixture.contents(table);
    assertThat(contents.ids()).as("rows of %s", table).doesNotHaveDuplicates()
        .containsExactlyInAnyOrderElementsOf(HiveSinkSuite.ids(0, 3 * ROWS_PER_CHECKPOINT));
    assertThat(contents.files()).doesNotHaveDuplicates();
    contents.parts().forEach(HiveSinkSuite::assertStats);
    Map<String, String> params = fixture.client().getTable(HiveFixture.DB, table).getParameters();
    assertThat(params).containsEntry(CommitId.watermarkKey(rerun.job()), "3");
    assertThat(intents(table, rerun.job())).as("intents left").isEmpty();
  }

  /**
   * The same runs without the commit intent (test-only switch): run 2 sees watermark 1, writes the rows of
   * checkpoint 2 again, and the rows run 1 moved stay visible — every row of checkpoint 2 twice.
   */
  @Test
  void withoutTheCommitIntentTheRerunMakesTheMovedRowsVisibleTwice() throws Exception {
    String table = HiveFixture.newTable("rerun_unsafe");
    Rerun rerun = failThenRerun(table, false);

    assertThat(rerun.rolledForward()).isZero();
    assertThat(rerun.watermarkSeen()).isEqualTo(1);
    List<Long> ids = fixture.contents(table).ids();
    assertThat(ids).as("rows of %s", table).hasSize(4 * ROWS_PER_CHECKPOINT);
    assertThat(duplicates(ids)).containsExactlyInAnyOrderElementsOf(
        HiveSinkSuite.ids(ROWS_PER_CHECKPOINT, 2 * ROWS_PER_CHECKPOINT));
  }

  private record Rerun(JobId job, long watermarkSeen, int rolledForward) {}

  private Rerun failThenRerun(String table, boolean intents) throws Exception {
    JobId job = JobId.of("rerun-job");
    CountingClients clients = new CountingClients();
    HiveSinkConfig config = fixture.config(table).createTable(SCHEMA, PARTITIONED).clientFactory(clients).build();

    HiveSink<Record> first = HiveSink.forRecords(config).commitIntents(intents);
    try (HiveTarget target = target(first); HiveAggregatedCommitter committer = committer(first)) {
      long epoch = target.claimEpoch(job, "run 1").epoch();
      committer.fence(job, epoch);
      assertThat(committer.commit(stage(first, committer, job, epoch, 1))).isInstanceOf(CommitOutcome.Committed.class);
      HiveCommittable second = stage(first, committer, job, epoch, 2);
      clients.before((method, n) -> {
        if (method.equals("alter_partitions")) {
          throw new MetastoreDown("metastore down at " + method);
        }
      });
      assertThat(committer.commit(second)).as("checkpoint 2 with the metastore down")
          .isInstanceOf(CommitOutcome.Retryable.class);
      // Run 1 dies here. Its moved files are in partitions readers list already.
      assertThat(fixture.contents(table).ids()).as("rows visible after the failed commit")
          .hasSize(2 * ROWS_PER_CHECKPOINT);
    } finally {
      clients.before((method, n) -> {});
    }

    HiveSink<Record> rerun = HiveSink.forRecords(config).commitIntents(intents);
    try (HiveTarget target = target(rerun); HiveAggregatedCommitter committer = committer(rerun)) {
      long epoch = target.claimEpoch(job, "run 2").epoch();
      assertThat(epoch).isEqualTo(2);
      committer.fence(job, epoch);
      long committed = target.lastCommittedCheckpoint(job).orElse(0);
      // The rerun restored checkpoint 1 and resumes after what the table holds, to the end of the source (row 90).
      for (long checkpoint = committed + 1; checkpoint <= 3; checkpoint++) {
        CommitOutcome outcome = committer.commit(stage(rerun, committer, job, epoch, checkpoint));
        assertThat(outcome).as("checkpoint %s of the rerun", checkpoint).isInstanceOf(CommitOutcome.Committed.class);
      }
      return new Rerun(job, committed, target.recovery().rolledForward());
    }
  }

  /** Checkpoint k's rows, staged by one writer of the run's epoch. */
  private static HiveCommittable stage(HiveSink<Record> sink, HiveAggregatedCommitter committer, JobId job,
      long epoch, long checkpoint) throws IOException {
    long from = (checkpoint - 1) * ROWS_PER_CHECKPOINT;
    return stage(sink, committer, job, epoch, checkpoint, rows(from, from + ROWS_PER_CHECKPOINT, MIXED));
  }

  private static HiveCommittable stage(HiveSink<Record> sink, HiveAggregatedCommitter committer, JobId job,
      long epoch, long checkpoint, List<Record> rows) throws IOException {
    SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(job, 0, 1, 0, checkpoint - 1, epoch));
    for (Record row : rows) {
      writer.write(row);
    }
    Optional<StagingManifest> manifest = writer.prepareCommit(checkpoint);
    writer.close();
    return committer.combine(new CommitId(job, checkpoint), List.of(manifest.orElseThrow()));
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Epochs and fencing

  /**
   * Two targets claim for one job: increasing epochs. A committer fenced at the first epoch then commits nothing:
   * Fatal with a {@link FencedException} naming the newer run, no file moved, no intent left, the table unchanged.
   */
  @Test
  void aCommitterOfAnOlderEpochIsFencedAndMovesNothing() throws Exception {
    String table = HiveFixture.newTable("fenced");
    JobId job = JobId.of("fenced-job");
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, PARTITIONED).build());
    try (HiveTarget a = target(sink); HiveTarget b = target(sink); HiveAggregatedCommitter committer = committer(sink)) {
      RunEpoch older = a.claimEpoch(job, "run A (pid 1 on host-a)");
      RunEpoch newer = b.claimEpoch(job, "run B (pid 2 on host-b)");
      assertThat(newer.epoch()).isGreaterThan(older.epoch());
      assertThat(a.currentEpoch(job)).hasValue(newer);

      committer.fence(job, older.epoch());
      HiveCommittable committable = stage(sink, committer, job, older.epoch(), 1);
      Table before = fixture.client().getTable(HiveFixture.DB, table);
      CommitOutcome outcome = committer.commit(committable);

      assertThat(outcome).isInstanceOf(CommitOutcome.Fatal.class);
      Throwable cause = ((CommitOutcome.Fatal) outcome).cause();
      assertThat(cause).isInstanceOf(FencedException.class)
          .hasMessageContaining("run B (pid 2 on host-b)").hasMessageContaining(job.value())
          .hasMessageContaining(HiveFixture.DB + "." + table);
      assertThat(((FencedException) cause).newer()).isEqualTo(newer);
      assertThat(fixture.client().getTable(HiveFixture.DB, table).getParameters())
          .isEqualTo(before.getParameters());
      assertThat(fixture.client().listPartitionNames(HiveFixture.DB, table, (short) -1)).isEmpty();
      FileSystem fs = fs();
      for (StagedFile file : (Iterable<StagedFile>) committable.files()::iterator) {
        assertThat(fs.exists(new Path(file.path()))).as("still staged: %s", file.path()).isTrue();
      }
      assertThat(intents(table, job)).isEmpty();
    }
  }

  /**
   * A run claims while an older run's commit is between its partitions and its watermark: the older run's watermark
   * step finds the newer epoch, it is fenced with its moved files left in place, and its intent — written before the
   * claim — lets the next claim finish the commit exactly once.
   */
  @Test
  void aRunFencedAtItsWatermarkLeavesItsCommitToTheNextClaim() throws Exception {
    String table = HiveFixture.newTable("fencedlate");
    JobId job = JobId.of("late-job");
    HiveSinkConfig config = fixture.config(table).createTable(SCHEMA, PARTITIONED).build();
    HiveSink<Record> plain = HiveSink.forRecords(config);
    HiveSink<Record> older = HiveSink.forRecords(config).commitHook((point, id) -> {
      if (point.equals(CommitHook.BEFORE_WATERMARK)) {
        // A newer run claims now, through the table parameters alone (its claim is still finishing intents).
        try {
          Table read = fixture.client().getTable(HiveFixture.DB, table);
          Table changed = read.deepCopy();
          changed.getParameters().put(RunEpoch.key(job), new RunEpoch(2, "the newer run").value());
          TableParameters.swap(fixture.client(), TableFencing.COMPARE_AND_SWAP, read, changed);
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }
    });
    try (HiveTarget target = target(plain); HiveAggregatedCommitter committer = committer(older)) {
      long epoch = target.claimEpoch(job, "run 1").epoch();
      committer.fence(job, epoch);
      CommitOutcome outcome = committer.commit(stage(older, committer, job, epoch, 1));
      assertThat(outcome).isInstanceOf(CommitOutcome.Fatal.class);
      assertThat(((CommitOutcome.Fatal) outcome).cause()).isInstanceOf(FencedException.class)
          .hasMessageContaining("the newer run");
      assertThat(fixture.contents(table).ids()).as("moved files stay").hasSize(ROWS_PER_CHECKPOINT);
      assertThat(fixture.client().getTable(HiveFixture.DB, table).getParameters())
          .doesNotContainKey(CommitId.watermarkKey(job));
      assertThat(intents(table, job)).hasSize(1);
    }
    try (HiveTarget next = target(plain)) {
      assertThat(next.claimEpoch(job, "run 3").epoch()).isEqualTo(3);
      assertThat(next.recovery().rolledForward()).isEqualTo(1);
      assertThat(next.lastCommittedCheckpoint(job)).hasValue(1);
    }
    TableContents contents = fixture.contents(table);
    assertThat(contents.ids()).containsExactlyInAnyOrderElementsOf(HiveSinkSuite.ids(0, ROWS_PER_CHECKPOINT));
    contents.parts().forEach(HiveSinkSuite::assertStats);
    assertThat(intents(table, job)).isEmpty();
  }

  /**
   * A newer run claims right after an older run's commit wrote its intent, before its first move: the claim finds
   * the intent and finishes the commit as the newer epoch; the older committer then finds the checkpoint committed.
   * Every row once.
   */
  @Test
  void aClaimAfterACommitWroteItsIntentFinishesThatCommitOnce() throws Exception {
    String table = HiveFixture.newTable("inflight");
    JobId job = JobId.of("inflight-job");
    HiveSinkConfig config = fixture.config(table).createTable(SCHEMA, PARTITIONED).build();
    HiveSink<Record> plain = HiveSink.forRecords(config);
    List<RunEpoch> claimed = new ArrayList<>();
    List<Integer> rolledForward = new ArrayList<>();
    HiveSink<Record> older = HiveSink.forRecords(config).commitHook((point, id) -> {
      if (point.equals(CommitHook.INTENT_WRITTEN)) {
        try (HiveTarget newer = target(plain)) {
          claimed.add(newer.claimEpoch(job, "the newer run"));
          rolledForward.add(newer.recovery().rolledForward());
        } catch (IOException e) {
          throw new IllegalStateException(e);
        }
      }
    });
    try (HiveTarget target = target(plain); HiveAggregatedCommitter committer = committer(older)) {
      long epoch = target.claimEpoch(job, "run 1").epoch();
      committer.fence(job, epoch);
      CommitOutcome outcome = committer.commit(stage(older, committer, job, epoch, 1));

      assertThat(outcome).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
      assertThat(claimed).extracting(RunEpoch::epoch).containsExactly(2L);
      assertThat(rolledForward).containsExactly(1);
    }
    TableContents contents = fixture.contents(table);
    assertThat(contents.ids()).containsExactlyInAnyOrderElementsOf(HiveSinkSuite.ids(0, ROWS_PER_CHECKPOINT));
    assertThat(contents.files()).doesNotHaveDuplicates();
    contents.parts().forEach(HiveSinkSuite::assertStats);
    assertThat(intents(table, job)).isEmpty();
  }

  /**
   * A newer run's claim lists an older run's intent, and the older run — fenced by that claim before its first move
   * — takes the intent back before the claim reads it: the claim goes on (nothing to finish or undo), and the
   * newer run commits the checkpoint once.
   */
  @Test
  void anIntentTakenBackWhileTheClaimReadsItIsSkipped() throws Exception {
    String table = HiveFixture.newTable("takenback");
    JobId job = JobId.of("takenback-job");
    HiveSinkConfig config = fixture.config(table).createTable(SCHEMA, PARTITIONED).build();
    HiveSink<Record> older = HiveSink.forRecords(config).commitHook((point, id) -> {
      if (point.equals(CommitHook.INTENT_WRITTEN)) {
        throw new SimulatedCrash(point, id.checkpointId());
      }
    });
    try (HiveTarget target = target(older); HiveAggregatedCommitter committer = committer(older)) {
      long epoch = target.claimEpoch(job, "run 1").epoch();
      committer.fence(job, epoch);
      HiveCommittable committable = stage(older, committer, job, epoch, 1);
      assertThatThrownBy(() -> committer.commit(committable)).isInstanceOf(SimulatedCrash.class);
    }
    List<CommitIntents.Stored> written = intents(table, job);
    assertThat(written).hasSize(1);
    List<Long> listed = new ArrayList<>();
    HiveSink<Record> newer = HiveSink.forRecords(config).commitHook((point, id) -> {
      if (point.equals(CommitHook.INTENT_LISTED)) {
        listed.add(id.checkpointId());
        try {
          assertThat(fs().delete(written.get(0).path(), false)).as("taken back").isTrue();
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    });
    try (HiveTarget target = target(newer); HiveAggregatedCommitter committer = committer(newer)) {
      long epoch = target.claimEpoch(job, "run 2").epoch();
      assertThat(listed).as("the claim listed the intent, then found it gone").containsExactly(1L);
      assertThat(target.recovery().rolledForward()).isZero();
      assertThat(target.recovery().rolledBack()).isZero();
      assertThat(target.lastCommittedCheckpoint(job)).isEmpty();
      committer.fence(job, epoch);
      assertThat(committer.commit(stage(newer, committer, job, epoch, 1))).isInstanceOf(CommitOutcome.Committed.class);
    }
    TableContents contents = fixture.contents(table);
    assertThat(contents.ids()).containsExactlyInAnyOrderElementsOf(HiveSinkSuite.ids(0, ROWS_PER_CHECKPOINT));
    contents.parts().forEach(HiveSinkSuite::assertStats);
    assertThat(intents(table, job)).isEmpty();
  }

  /** Two threads claim at once, lined up on the swap: both succeed, with different epochs, one after a conflict. */
  @Test
  void racingClaimsBothSucceedWithDifferentEpochs() throws Exception {
    String table = HiveFixture.newTable("claims");
    JobId job = JobId.of("claim-job");
    CountingClients clients = new CountingClients();
    HiveSink<Record> sink = HiveSink.forRecords(
        fixture.config(table).createTable(SCHEMA, PARTITIONED).clientFactory(clients).build());
    CyclicBarrier bothRead = new CyclicBarrier(2);
    try (HiveTarget first = target(sink)) {   // the sink's fencing probe runs at its first claim: not in the race
      first.claimEpoch(JobId.of("first-job"), "first claim");
    }
    assertThat(sink.fencing()).hasValue(TableFencing.COMPARE_AND_SWAP);
    int probes = clients.calls("alter_table_with_environmentContext");
    clients.before((method, n) -> {
      if (method.equals("alter_table_with_environmentContext") && n - probes <= 2) {
        try {
          bothRead.await(60, TimeUnit.SECONDS);
        } catch (Exception e) {
          throw new IllegalStateException("claims did not line up", e);
        }
      }
    });
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (HiveTarget a = target(sink); HiveTarget b = target(sink)) {
      Future<RunEpoch> one = threads.submit(() -> a.claimEpoch(job, "thread a"));
      Future<RunEpoch> two = threads.submit(() -> b.claimEpoch(job, "thread b"));
      long first = one.get(120, TimeUnit.SECONDS).epoch();
      long second = two.get(120, TimeUnit.SECONDS).epoch();

      assertThat(Set.of(first, second)).containsExactlyInAnyOrder(1L, 2L);
      assertThat(a.conflicts() + b.conflicts()).as("conflicts seen by the claims").isPositive();
      assertThat(a.currentEpoch(job).orElseThrow().epoch()).isEqualTo(2);
    } finally {
      threads.shutdownNow();
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Intents: rolled back where they cannot be finished; insert-overwrite; lookups

  /**
   * A commit crashed after adding its new partitions; then one of its moved files is lost. Its intent cannot be
   * finished: the next claim rolls it back — the moved files removed, the partitions it added dropped — so none of
   * its rows is visible, and the watermark stays unset.
   */
  @Test
  void anIntentThatCannotBeFinishedIsRolledBack() throws Exception {
    String table = HiveFixture.newTable("rollback");
    JobId job = JobId.of("back-job");
    HiveSinkConfig config = fixture.config(table).createTable(SCHEMA, PARTITIONED).build();
    HiveSink<Record> dying = HiveSink.forRecords(config).commitHook((point, id) -> {
      if (point.equals(CommitHook.PARTITIONS_ADDED)) {
        throw new SimulatedCrash(point, id.checkpointId());
      }
    });
    HiveCommittable committable;
    try (HiveTarget target = target(dying); HiveAggregatedCommitter committer = committer(dying)) {
      long epoch = target.claimEpoch(job, "run 1").epoch();
      committer.fence(job, epoch);
      committable = stage(dying, committer, job, epoch, 1);
      assertThatThrownBy(() -> committer.commit(committable)).isInstanceOf(SimulatedCrash.class);
    }
    assertThat(fixture.contents(table).ids()).hasSize(ROWS_PER_CHECKPOINT);
    TableContents.Part lostFrom = fixture.contents(table).parts().get(0);
    assertThat(fs().delete(new Path(lostFrom.location(), lostFrom.files().get(0)), false)).isTrue();

    HiveSink<Record> next = HiveSink.forRecords(config);
    try (HiveTarget target = target(next)) {
      target.claimEpoch(job, "run 2");
      assertThat(target.recovery().rolledBack()).isEqualTo(1);
      assertThat(target.recovery().rolledForward()).isZero();
      assertThat(target.lastCommittedCheckpoint(job)).isEmpty();
    }
    assertThat(fixture.client().listPartitionNames(HiveFixture.DB, table, (short) -1)).isEmpty();
    for (StagedFile file : (Iterable<StagedFile>) committable.files()::iterator) {
      assertThat(fs().exists(new Path(file.path()))).isFalse();
    }
    assertThat(intents(table, job)).isEmpty();
  }

  /**
   * Insert-overwrite crashes after it switched the touched partitions to their new directories, before it deleted
   * the replaced files and recorded the watermark. The next claim rolls it forward: the touched partitions hold
   * exactly the new rows, their old files are gone, the untouched one is unchanged.
   */
  @ParameterizedTest(name = "crash at {0}")
  @ValueSource(strings = {CommitHook.INTENT_WRITTEN, CommitHook.FILES_MOVED, CommitHook.STATS_UPDATED})
  void anInterruptedInsertOverwriteIsRolledForwardByTheNextClaim(String point) throws Exception {
    String table = HiveFixture.newTable("owfwd");
    JobId job = JobId.of("ow-job");
    LongFunction<Record> old = id -> row(id, "p" + (id % 3), 0);
    LongFunction<Record> fresh = id -> row(id, List.of("p0", "p1", "p4").get((int) (id % 3)), 0);
    HiveSinkConfig.Builder base = fixture.config(table).createTable(SCHEMA, List.of("cat"));
    HiveSink<Record> seeder = HiveSink.forRecords(base.build());
    try (HiveAggregatedCommitter committer = committer(seeder)) {
      HiveCommittable seed = stage(seeder, committer, JobId.of("seed"), 0, 1, rows(1000, 1030, old));
      assertThat(committer.commit(seed).isSuccess()).isTrue();
    }
    TableContents before = fixture.contents(table);
    HiveSinkConfig overwrite = base.mode(WriteMode.INSERT_OVERWRITE).build();
    HiveSink<Record> dying = HiveSink.forRecords(overwrite).commitHook((reached, id) -> {
      if (reached.equals(point)) {
        throw new SimulatedCrash(reached, id.checkpointId());
      }
    });
    try (HiveTarget target = target(dying); HiveAggregatedCommitter committer = committer(dying)) {
      long epoch = target.claimEpoch(job, "run 1").epoch();
      committer.fence(job, epoch);
      HiveCommittable committable = stage(dying, committer, job, epoch, 1, rows(0, 30, fresh));
      assertThatThrownBy(() -> committer.commit(committable)).isInstanceOf(SimulatedCrash.class);
    }

    // The next run is configured to append: it finishes the intent as the overwrite it was.
    try (HiveTarget target = target(HiveSink.forRecords(base.mode(WriteMode.APPEND).build()))) {
      target.claimEpoch(job, "run 2");
      assertThat(target.recovery().rolledForward()).isEqualTo(1);
      assertThat(target.lastCommittedCheckpoint(job)).hasValue(1);
    }
    Map<String, List<Long>> newRows = HiveSinkSuite.idsByPartition(rows(0, 30, fresh));
    TableContents after = fixture.contents(table);
    assertThat(after.names()).containsExactlyInAnyOrder("cat=p0", "cat=p1", "cat=p2", "cat=p4");
    for (String partition : List.of("cat=p0", "cat=p1", "cat=p4")) {
      assertThat(after.part(partition).ids()).as(partition).containsExactlyInAnyOrderElementsOf(newRows.get(partition));
      HiveSinkSuite.assertStats(after.part(partition));
    }
    assertThat(after.part("cat=p2").params()).isEqualTo(before.part("cat=p2").params());
    assertThat(after.part("cat=p2").files()).containsExactlyInAnyOrderElementsOf(before.part("cat=p2").files());
    for (String partition : List.of("cat=p0", "cat=p1")) {
      assertThat(HiveSinkSuite.visibleFiles(fs(), new Path(before.part(partition).location())))
          .as("old files of %s", partition).isEmpty();
    }
    assertThat(intents(table, job)).isEmpty();
  }

  /**
   * A job whose watermark is missing while one of its intents is unfinished is not reported as never committed; the
   * staging cleaners leave the intent alone.
   */
  @Test
  void aLookupDoesNotReportNothingCommittedWhileAnIntentIsUnfinished() throws Exception {
    String table = HiveFixture.newTable("lookup");
    JobId job = JobId.of("lookup-job");
    HiveSink<Record> dying = HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, PARTITIONED).build())
        .commitHook((point, id) -> {
          if (point.equals(CommitHook.FILES_MOVED)) {
            throw new SimulatedCrash(point, id.checkpointId());
          }
        });
    try (HiveTarget target = target(dying); HiveAggregatedCommitter committer = committer(dying)) {
      HiveCommittable committable = stage(dying, committer, job, 0, 1, rows(0, 10, MIXED));
      assertThatThrownBy(() -> committer.commit(committable)).isInstanceOf(SimulatedCrash.class);
      // The staging cleaner never takes an intent: only its own commit or a later run's claim does.
      target.deleteStaged(job, 0, 0, Long.MAX_VALUE);
      assertThat(intents(table, job)).hasSize(1);
      assertThatThrownBy(() -> target.lastCommittedCheckpoint(job)).isInstanceOf(IOException.class)
          .hasMessageContaining("unfinished").hasMessageContaining("checkpoints [1]")
          .hasMessageContaining(job.value()).hasMessageContaining(HiveFixture.DB + "." + table);
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Identity

  @Test
  void identityDiffersAfterTheTableIsDroppedAndCreatedAgain() throws Exception {
    String table = HiveFixture.newTable("identity");
    HiveSinkConfig config = fixture.config(table).createTable(SCHEMA, PARTITIONED).build();
    String first;
    try (HiveTarget a = target(HiveSink.forRecords(config)); HiveTarget b = target(HiveSink.forRecords(config))) {
      first = a.identity();
      assertThat(b.identity()).as("the same table").isEqualTo(first);
      a.claimEpoch(JobId.of("id-job"), "run 1");
      assertThat(a.identity()).as("after a claim").isEqualTo(first);
    }
    fixture.client().dropTable(HiveFixture.DB, table, true, false);
    try (HiveTarget again = target(HiveSink.forRecords(config))) {
      assertThat(again.identity()).isNotEqualTo(first);
      assertThat(again.name()).isEqualTo(HiveFixture.DB + "." + table);
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Helpers

  private static HiveTarget target(HiveSink<Record> sink) throws IOException {
    return (HiveTarget) sink.openTarget();
  }

  private static HiveAggregatedCommitter committer(HiveSink<Record> sink) throws IOException {
    return HiveSinkSuite.committer(sink);
  }

  /**
   * A table lock whose holder was killed stays until the metastore's lock timeout (300 s): a writer restarted on the
   * same host releases it at once when the holder is provably gone (a Lakecommit process of this host and PID
   * namespace that no longer runs), and waits for a holder that still runs or runs elsewhere.
   */
  @Test
  void aLockOfAKilledWriterOfThisHostIsReleasedAndOthersAreWaitedFor() throws Exception {
    String table = HiveFixture.newTable("locked");
    IMetaStoreClient client = hms.newRetryingClient();
    String host = java.net.InetAddress.getLocalHost().getHostName();
    Process sleeper = new ProcessBuilder("sleep", "120").start();
    try {
      LockHolder alive = new LockHolder(sleeper.pid(), LockHolder.self().namespace(),
          sleeper.toHandle().info().startInstant().orElseThrow().toEpochMilli());
      long aliveLock = lockAs(client, table, alive, host);
      assertThatThrownBy(() -> TableFencing.lock(client, HiveFixture.DB, table, Duration.ofSeconds(2)))
          .hasMessageContaining("stayed locked by another writer");
      assertThat(lockIds(client, table)).as("a running holder's lock").containsExactly(aliveLock);

      // The same pid started at another time is another process: its holder is gone.
      LockHolder reused = new LockHolder(alive.pid(), alive.namespace(), alive.startMillis() - 1000);
      assertThat(reused.goneAsSeenFrom(LockHolder.self(), host, host)).isTrue();
      TableFencing.unlockQuietly(client, aliveLock);

      sleeper.destroyForcibly().waitFor();
      long deadLock = lockAs(client, table, alive, "elsewhere.example");
      assertThatThrownBy(() -> TableFencing.lock(client, HiveFixture.DB, table, Duration.ofSeconds(2)))
          .hasMessageContaining("stayed locked by another writer");
      assertThat(lockIds(client, table)).as("a holder of another host is not judged").containsExactly(deadLock);
      TableFencing.unlockQuietly(client, deadLock);

      long killedLock = lockAs(client, table, alive, host);
      long taken = TableFencing.lock(client, HiveFixture.DB, table, Duration.ofSeconds(30));
      assertThat(lockIds(client, table)).as("the killed holder's lock is released").containsExactly(taken)
          .doesNotContain(killedLock);
      TableFencing.unlockQuietly(client, taken);
    } finally {
      sleeper.destroyForcibly();
      client.close();
    }
  }

  /**
   * Iceberg's Hive catalog (through {@link CompatibleHiveCatalog}): a commit waiting for the metastore lock of a
   * Lakecommit process of this host that was killed in a commit releases that lock and commits, well within
   * Iceberg's lock timeout; Iceberg still finds its own locks by their agent info.
   */
  @Test
  void anIcebergCommitReleasesTheLockOfAKilledLakecommitProcess() throws Exception {
    IMetaStoreClient client = hms.newRetryingClient();
    String host = java.net.InetAddress.getLocalHost().getHostName();
    CompatibleHiveCatalog catalog = new CompatibleHiveCatalog();
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration();
    // Iceberg's lock timeout (3 min by default) shortened: without the release each commit attempt fails after it
    conf.set("iceberg.hive.lock-timeout-ms", "20000");
    catalog.setConf(conf);
    catalog.initialize("hive", Map.of("uri", hms.uri(), "warehouse", hms.warehouseLocation()));
    try {
      org.apache.iceberg.catalog.TableIdentifier id =
          org.apache.iceberg.catalog.TableIdentifier.of(HiveFixture.DB, "iceberg_locked");
      org.apache.iceberg.Table table = catalog.createTable(id, new org.apache.iceberg.Schema(
          org.apache.iceberg.types.Types.NestedField.required(1, "id", org.apache.iceberg.types.Types.LongType.get())));
      Process killed = new ProcessBuilder("sleep", "120").start();
      LockHolder holder = new LockHolder(killed.pid(), LockHolder.self().namespace(),
          killed.toHandle().info().startInstant().orElseThrow().toEpochMilli());
      killed.destroyForcibly().waitFor();
      LockComponent component = new LockComponent(LockType.EXCLUSIVE, LockLevel.TABLE, HiveFixture.DB);
      component.setTablename("iceberg_locked");
      LockRequest request = new LockRequest(List.of(component), "someone", host);
      request.setAgentInfo("Iceberg-" + java.util.UUID.randomUUID() + " " + holder.agentInfo());
      long deadLock = client.lock(request).getLockid();

      table.updateProperties().set("after", "the kill").commit();

      assertThat(catalog.loadTable(id).properties()).containsEntry("after", "the kill");
      assertThat(lockIds(client, "iceberg_locked")).as("the killed holder's lock").doesNotContain(deadLock);
    } finally {
      catalog.close();
      client.close();
    }
  }

  private static long lockAs(IMetaStoreClient client, String table, LockHolder holder, String host)
      throws Exception {
    LockComponent component = new LockComponent(LockType.EXCLUSIVE, LockLevel.TABLE, HiveFixture.DB);
    component.setTablename(table);
    LockRequest request = new LockRequest(List.of(component), "someone", host);
    request.setAgentInfo(holder.agentInfo());
    LockResponse response = client.lock(request);
    assertThat(response.getState()).isEqualTo(LockState.ACQUIRED);
    return response.getLockid();
  }

  private static List<Long> lockIds(IMetaStoreClient client, String table) throws Exception {
    ShowLocksRequest request = new ShowLocksRequest();
    request.setDbname(HiveFixture.DB);
    request.setTablename(table);
    List<ShowLocksResponseElement> locks = client.showLocks(request).getLocks();
    return locks == null ? List.of() : locks.stream().map(ShowLocksResponseElement::getLockid).toList();
  }

  private FileSystem fs() throws IOException {
    return new Path(fixture.warehouse()).getFileSystem(fixture.conf());
  }

  private List<CommitIntents.Stored> intents(String table, JobId job) throws Exception {
    Path location = new Path(fixture.client().getTable(HiveFixture.DB, table).getSd().getLocation());
    return new CommitIntents(fs(), new Path(HivePaths.baseLocation(location), HivePaths.STAGING_DIR)).list(job);
  }

  private static List<Long> duplicates(List<Long> ids) {
    Set<Long> seen = new HashSet<>();
    List<Long> twice = new ArrayList<>();
    for (Long id : ids) {
      if (!seen.add(id)) {
        twice.add(id);
      }
    }
    return twice;
  }

  /** What a broken metastore connection looks like to a caller. */
  private static final class MetastoreDown extends RuntimeException {
    MetastoreDown(String message) {
      super(new org.apache.thrift.transport.TTransportException(message));
    }
  }
}
