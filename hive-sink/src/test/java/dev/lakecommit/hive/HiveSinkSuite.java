package dev.lakecommit.hive;

import static dev.lakecommit.hive.HiveTestData.MIXED;
import static dev.lakecommit.hive.HiveTestData.PARTITIONED;
import static dev.lakecommit.hive.HiveTestData.SCHEMA;
import static dev.lakecommit.hive.HiveTestData.row;
import static dev.lakecommit.hive.HiveTestData.rows;
import static dev.lakecommit.hive.HiveTestData.stage;
import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.runtime.CrashHarness;
import dev.lakecommit.core.runtime.RestoreBehindPolicy;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.CrashingSink;
import dev.lakecommit.core.testing.SimulatedCrash;
import dev.lakecommit.core.testing.TestScale;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongFunction;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.hive.common.FileUtils;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The Hive sink against a real metastore, on one storage (a subclass per storage starts the metastore and the
 * storage for the class). Tables are read back as a plain Hive reader would: partitions listed by the
 * metastore, their visible Parquet files read with parquet-hadoop.
 *
 * <p>The default build runs every scenario with small counts, and the full crash matrices where storage is fast
 * ({@link #thorough()}); {@code -Plong} runs every crash point everywhere, at acceptance sizes.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class HiveSinkSuite {
  /**
   * 150 rows, 2 writers, a checkpoint every 50 rows: 3 checkpoints of 6 files in 3 partitions each; the first
   * two write the same partitions (the second updates them), the third adds 3 more.
   */
  static final CrashHarness.Config CONFIG =
      new CrashHarness.Config(150, 2, 50, 25, false, false, RestoreBehindPolicy.FAIL);

  /** Partition values that must stay inside their directory: a parent reference, separators, non-ASCII. */
  static final List<String> CRASH_CATS = List.of("../x", "a=b/c", "naïve ü");

  /** Every category in every checkpoint; bucket 0 for checkpoints 1-2, 1 for 3. */
  static final LongFunction<Record> CRASH_ROWS =
      id -> row(id, CRASH_CATS.get((int) (id % CRASH_CATS.size())), (int) (id / 100));
  static final String JOB = "crash-job";
  static final List<String> HIVE_POINTS = List.of(CommitHook.INTENT_WRITTEN, CommitHook.FILE_MOVED, CommitHook.FILES_MOVED,
      CommitHook.PARTITIONS_ADDED, CommitHook.STATS_UPDATED, CommitHook.SUCCESS_FILES, CommitHook.BEFORE_WATERMARK,
      CommitHook.AFTER_WATERMARK);

  @TempDir Path dir;

  abstract HiveFixture fixture();

  /** New partitions in one checkpoint for the large-commit test. */
  abstract int manyPartitions();

  /** Whether the default build runs the full crash matrices here (it does on fast storage). */
  abstract boolean thorough();

  private boolean full() {
    return thorough() || TestScale.isLong();
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The crash matrix

  /**
   * Synchronous commits everywhere; pipelined ones (up to 2 persisted checkpoints waiting for their commits) where
   * the full matrices run (fast storage, or {@code -Plong}): in the default build, a crash after a commit landed
   * and one half-way through a commit's moves.
   */
  Stream<Arguments> crashPoints() {
    List<Arguments> cases = new ArrayList<>();
    List<String> runtimePoints = TestScale.isLong() ? CrashSchedule.ALL_POINTS
        : full() ? List.of(CrashSchedule.WRITE, CrashSchedule.PERSISTED, CrashSchedule.COMMIT_APPLIED)
        : List.of(CrashSchedule.COMMIT_APPLIED);
    for (int uncommitted : uncommittedModes().toList()) {
      boolean all = uncommitted == 0 || TestScale.isLong();
      for (String point : runtimePoints) {
        if (all || point.equals(CrashSchedule.COMMIT_APPLIED)) {
          cases.add(Arguments.of(point, point.equals(CrashSchedule.WRITE) ? 120 : 3, uncommitted));
        }
      }
      // Checkpoints 1 and 3 add partitions, 2 updates those of 1; each moves 6 files.
      cases.add(Arguments.of(CommitHook.FILE_MOVED, 4, uncommitted));
      if (all) {
        cases.add(Arguments.of(CommitHook.BEFORE_WATERMARK, 3, uncommitted));
      }
      if (full() && all) {
        cases.add(Arguments.of(CommitHook.PARTITIONS_ADDED, 3, uncommitted));
        cases.add(Arguments.of(CommitHook.FILES_MOVED, 2, uncommitted));
        cases.add(Arguments.of(CommitHook.STATS_UPDATED, 2, uncommitted));
        cases.add(Arguments.of(CommitHook.SUCCESS_FILES, 3, uncommitted));
        cases.add(Arguments.of(CommitHook.AFTER_WATERMARK, 2, uncommitted));
      }
    }
    return cases.stream();
  }

  /** 0 (synchronous commits), and 2 (pipelined) where the full matrices run. */
  Stream<Integer> uncommittedModes() {
    return full() ? Stream.of(0, 2) : Stream.of(0);
  }

  @ParameterizedTest(name = "crash at {0} #{1}, {2} uncommitted")
  @MethodSource("crashPoints")
  void everyCrashPointEndsWithExactlyTheSourceRows(String point, int occurrence, int uncommitted) throws Exception {
    String table = HiveFixture.newTable("crash");
    CrashHarness.Outcome outcome = runJob(table, CrashSchedule.at(point, occurrence), true,
        crashes -> UnaryOperator.identity(), b -> b.createTable(SCHEMA, PARTITIONED).successFiles(true),
        CRASH_ROWS, new java.util.concurrent.CopyOnWriteArrayList<>(), uncommitted);

    assertThat(outcome.failure()).isNull();
    assertThat(outcome.crashes()).as("the crash point was reached").isEqualTo(1);
    assertExactlyOnce(table, outcome, true, CRASH_ROWS);
  }

  /**
   * Crashes inside a Hive commit: after its intent is written (nothing moved), after some of its files moved (into
   * partitions that exist: those rows are visible at once), after its new partitions were added. The next run claims
   * a new epoch and, in the claim, rolls the commit forward before it reads the watermark: rows exact, no intent
   * left, one epoch per process life.
   */
  @ParameterizedTest(name = "rolled forward after a crash at {0} #{1}")
  @MethodSource("rollForwardPoints")
  void aNewRunRollsForwardTheCommitACrashLeftUnfinished(String point, int occurrence) throws Exception {
    String table = HiveFixture.newTable("rollfwd");
    List<HiveTarget> targets = new java.util.concurrent.CopyOnWriteArrayList<>();
    CrashHarness.Outcome outcome = runJob(table, CrashSchedule.at(point, occurrence), true,
        crashes -> UnaryOperator.identity(), b -> b.createTable(SCHEMA, PARTITIONED).successFiles(true),
        CRASH_ROWS, targets, 0);

    assertThat(outcome.failure()).isNull();
    assertThat(outcome.crashes()).as("the crash point was reached").isEqualTo(1);
    assertThat(targets).as("one target per process life").hasSize(outcome.lives());
    assertThat(targets.stream().mapToInt(t -> t.recovery().rolledForward()).sum()).as("commits rolled forward")
        .isEqualTo(1);
    assertThat(targets.stream().mapToInt(t -> t.recovery().rolledBack()).sum()).as("commits rolled back")
        .isZero();
    String epoch = fixture().client().getTable(HiveFixture.DB, table).getParameters().get(RunEpoch.key(JobId.of(JOB)));
    assertThat(RunEpoch.parse(JobId.of(JOB), epoch).epoch()).as("epoch after %s lives", outcome.lives())
        .isEqualTo(outcome.lives());
    assertExactlyOnce(table, outcome, true, CRASH_ROWS);
  }

  /** Checkpoint 2 updates the partitions of 1 (6 files each), checkpoint 3 adds partitions. */
  static Stream<Arguments> rollForwardPoints() {
    return Stream.of(Arguments.of(CommitHook.INTENT_WRITTEN, 2), Arguments.of(CommitHook.FILE_MOVED, 10),
        Arguments.of(CommitHook.PARTITIONS_ADDED, 3));
  }

  @ParameterizedTest(name = "{0} uncommitted")
  @MethodSource("uncommittedModes")
  void randomCrashSchedulesEndWithExactlyTheSourceRows(int uncommitted) throws IOException {
    long seed = TestScale.seed();
    Random random = new Random(seed);
    int schedules = TestScale.pick(1, 60);
    for (int i = 0; i < schedules; i++) {
      CrashSchedule schedule = randomSchedule(random);
      String table = HiveFixture.newTable("random");
      CrashHarness.Outcome outcome = runJob(table, schedule, true, crashes -> UnaryOperator.identity(),
          b -> b.createTable(SCHEMA, PARTITIONED), CRASH_ROWS, new java.util.concurrent.CopyOnWriteArrayList<>(),
          uncommitted);
      String context = "seed " + seed + " (-Dlakecommit.seed=" + seed + "), schedule " + i + " " + schedule;
      assertThat(outcome.failure()).as(context).isNull();
      assertThat(outcome.audit().exact()).as(context + ": " + outcome.audit()).isTrue();
    }
  }

  Stream<String> unpartitionedPoints() {
    return full() ? Stream.of(CommitHook.FILE_MOVED, CommitHook.BEFORE_WATERMARK, CommitHook.AFTER_WATERMARK)
        : Stream.of(CommitHook.BEFORE_WATERMARK);
  }

  @ParameterizedTest(name = "unpartitioned, crash at {0}")
  @MethodSource("unpartitionedPoints")
  void unpartitionedTablesSurviveEveryCommitStep(String point) throws Exception {
    String table = HiveFixture.newTable("flat");
    CrashHarness.Outcome outcome = runJob(table, CrashSchedule.at(point, 2), true,
        crashes -> UnaryOperator.identity(),
        b -> b.createTable(SCHEMA, List.of()).external(true).location(fixture().location(table)).successFiles(true),
        CRASH_ROWS);

    assertThat(outcome.failure()).isNull();
    assertThat(outcome.crashes()).isEqualTo(1);
    assertExactlyOnce(table, outcome, true, CRASH_ROWS);
  }

  Stream<String> overwriteJobPoints() {
    return full() ? Stream.of(CommitHook.FILE_MOVED, CommitHook.BEFORE_WATERMARK)
        : Stream.of(CommitHook.BEFORE_WATERMARK);
  }

  /** Insert-overwrite through the runtime: each checkpoint writes partitions of its own, so all rows stay. */
  @ParameterizedTest(name = "insert-overwrite job, crash at {0}")
  @MethodSource("overwriteJobPoints")
  void insertOverwriteJobsReplayExactly(String point) throws IOException {
    String table = HiveFixture.newTable("owjob");
    LongFunction<Record> byCheckpoint = id -> row(id, "ckpt-" + id / CONFIG.checkpointEvery(), (int) (id % 2));
    CrashHarness.Outcome outcome = runJob(table, CrashSchedule.at(point, 2), true,
        crashes -> UnaryOperator.identity(),
        b -> b.createTable(SCHEMA, PARTITIONED).mode(WriteMode.INSERT_OVERWRITE), byCheckpoint);

    assertThat(outcome.failure()).isNull();
    assertThat(outcome.crashes()).isEqualTo(1);
    assertThat(outcome.audit().exact()).as(outcome.audit().toString()).isTrue();
    assertThat(fixture().contents(table).visibleDirs()).isEmpty();
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Large checkpoints

  @Test
  void manyNewPartitionsAreAddedInBoundedBatches() throws IOException {
    int partitions = manyPartitions();
    int batch = TestScale.isLong() ? 100 : (partitions + 2) / 3;
    String table = HiveFixture.newTable("many");
    CountingClients clients = new CountingClients();
    HiveSink<Record> sink = HiveSink.forRecords(fixture().config(table)
        .createTable(SCHEMA, List.of("bucket")).partitionBatchSize(batch).clientFactory(clients).build());
    try (HiveAggregatedCommitter committer = committer(sink)) {
      HiveCommittable committable =
          stage(sink, committer, "many", 1, rows(0, 2L * partitions, id -> row(id, "c", (int) (id / 2))));
      clients.reset();
      CommitOutcome outcome = committer.commit(committable);

      assertThat(outcome).isInstanceOf(CommitOutcome.Committed.class);
      assertThat(clients.calls("add_partitions")).isEqualTo((partitions + batch - 1) / batch);
      assertThat(clients.calls("alter_partitions")).isZero();
      assertThat(clients.calls("alter_table_with_environmentContext")).isEqualTo(1);
    }
    TableContents contents = fixture().contents(table);
    assertThat(contents.parts()).hasSize(partitions);
    assertThat(contents.ids()).hasSize(2 * partitions).doesNotHaveDuplicates();
    assertThat(contents.files()).hasSize(partitions);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Insert-overwrite

  Stream<String> overwritePoints() {
    if (TestScale.isLong()) {
      return Stream.of("none", CommitHook.FILE_MOVED, CommitHook.FILES_MOVED, CommitHook.PARTITIONS_ADDED,
          "alter_partitions#2", CommitHook.STATS_UPDATED, CommitHook.REPLACED_DELETED, CommitHook.SUCCESS_FILES,
          CommitHook.BEFORE_WATERMARK, CommitHook.AFTER_WATERMARK);
    }
    return full()
        ? Stream.of("none", CommitHook.FILE_MOVED, CommitHook.PARTITIONS_ADDED, "alter_partitions#2",
            CommitHook.REPLACED_DELETED, CommitHook.BEFORE_WATERMARK, CommitHook.AFTER_WATERMARK)
        : Stream.of("alter_partitions#2", CommitHook.REPLACED_DELETED);
  }

  /**
   * A table with partitions p0..p3 of old rows; a checkpoint overwrites p0 and p1 and adds p4. Whatever step it
   * dies at, each partition shows its old rows or its new rows, never both, never neither; after the restart,
   * exactly the touched partitions hold the new rows and the old files are gone.
   */
  @ParameterizedTest(name = "crash at {0}")
  @MethodSource("overwritePoints")
  void insertOverwriteReplacesExactlyTheTouchedPartitions(String point) throws Exception {
    String table = HiveFixture.newTable("overwrite");
    CountingClients clients = new CountingClients();
    LongFunction<Record> old = id -> row(id, "p" + (id % 4), 0);
    LongFunction<Record> fresh = id -> row(id, List.of("p0", "p1", "p4").get((int) (id % 3)), 0);
    HiveSinkConfig.Builder base = fixture().config(table).createTable(SCHEMA, List.of("cat")).successFiles(true)
        .clientFactory(clients);
    HiveSink<Record> seeder = HiveSink.forRecords(base.build());
    try (HiveAggregatedCommitter committer = committer(seeder)) {
      assertThat(committer.commit(stage(seeder, committer, "seed", 1, rows(1000, 1040, old))).isSuccess()).isTrue();
    }
    TableContents before = fixture().contents(table);
    HiveSinkConfig overwrite = base.mode(WriteMode.INSERT_OVERWRITE).partitionBatchSize(1).build();

    HiveSink<Record> dying = HiveSink.forRecords(overwrite).commitHook((reached, id) -> {
      if (reached.equals(point)) {
        throw new SimulatedCrash(reached, id.checkpointId());
      }
    });
    clients.reset();
    clients.before((method, n) -> {
      if (point.equals(method + "#" + n)) {
        throw new SimulatedCrash(point, 1);
      }
    });
    HiveAggregatedCommitter first = committer(dying);
    HiveCommittable committable = stage(dying, first, "ow", 1, rows(0, 30, fresh));
    byte[] persisted = VersionedSerialization.toBytes(dying.aggregatedCommitSerializer(), committable);
    boolean crashed = false;
    try {
      assertThat(first.commit(committable).isSuccess()).isTrue();
    } catch (SimulatedCrash crash) {
      crashed = true;
    } finally {
      first.close(); // the process is gone, and its connections with it
    }
    clients.before((method, n) -> {});
    assertThat(crashed).isEqualTo(!point.equals("none"));

    Map<String, List<Long>> oldRows = idsByPartition(rows(1000, 1040, old));
    Map<String, List<Long>> newRows = idsByPartition(rows(0, 30, fresh));
    TableContents mid = fixture().contents(table);
    for (String partition : List.of("cat=p0", "cat=p1")) {
      assertThat(new TreeSet<>(mid.part(partition).ids())).as("%s after a crash at %s", partition, point)
          .isIn(new TreeSet<>(oldRows.get(partition)), new TreeSet<>(newRows.get(partition)));
      assertThat(mid.part(partition).ids()).doesNotHaveDuplicates();
    }
    if (mid.names().contains("cat=p4")) {
      assertThat(mid.part("cat=p4").ids()).containsExactlyInAnyOrderElementsOf(newRows.get("cat=p4"));
    }

    // Restart: a new committer commits the checkpoint as the runtime restored it.
    HiveSink<Record> restarted = HiveSink.forRecords(overwrite);
    try (HiveAggregatedCommitter committer = committer(restarted)) {
      HiveCommittable restored = VersionedSerialization.fromBytes(restarted.aggregatedCommitSerializer(), persisted);
      assertThat(committer.commit(restored).isSuccess()).isTrue();
    }
    try (CommitTarget target = restarted.openTarget()) {
      assertThat(target.lastCommittedCheckpoint(JobId.of("ow"))).hasValue(1);
    }
    TableContents after = fixture().contents(table);
    assertThat(after.names()).containsExactlyInAnyOrder("cat=p0", "cat=p1", "cat=p2", "cat=p3", "cat=p4");
    for (String partition : List.of("cat=p0", "cat=p1", "cat=p4")) {
      assertThat(after.part(partition).ids()).containsExactlyInAnyOrderElementsOf(newRows.get(partition));
      assertStats(after.part(partition));
    }
    for (String partition : List.of("cat=p2", "cat=p3")) {
      TableContents.Part was = before.part(partition);
      TableContents.Part is = after.part(partition);
      assertThat(is.location()).as("%s untouched", partition).isEqualTo(was.location());
      assertThat(is.params()).as("%s untouched", partition).isEqualTo(was.params());
      assertThat(is.files()).as("%s untouched", partition).containsExactlyInAnyOrderElementsOf(was.files());
    }
    assertThat(after.visibleDirs()).isEmpty();
    FileSystem fs = new org.apache.hadoop.fs.Path(after.part("cat=p0").location()).getFileSystem(fixture().conf());
    for (String partition : List.of("cat=p0", "cat=p1")) {
      org.apache.hadoop.fs.Path usual = new org.apache.hadoop.fs.Path(before.part(partition).location());
      assertThat(visibleFiles(fs, usual)).as("old files of %s deleted", partition).isEmpty();
    }
  }

  /** A second overwrite of the same partition replaces the first one's directory, which goes whole. */
  @Test
  void repeatedOverwritesDeleteTheEarlierDirectory() throws Exception {
    String table = HiveFixture.newTable("reoverwrite");
    HiveSink<Record> sink = HiveSink.forRecords(fixture().config(table).createTable(SCHEMA, List.of("cat"))
        .mode(WriteMode.INSERT_OVERWRITE).build());
    try (HiveAggregatedCommitter committer = committer(sink)) {
      assertThat(committer.commit(stage(sink, committer, "ow", 1, rows(0, 10, id -> row(id, "a", 0))))
          .isSuccess()).isTrue();
      String firstLocation = fixture().contents(table).part("cat=a").location();
      assertThat(committer.commit(stage(sink, committer, "ow", 2, rows(10, 15, id -> row(id, "a", 0))))
          .isSuccess()).isTrue();

      TableContents after = fixture().contents(table);
      assertThat(after.part("cat=a").ids()).containsExactlyInAnyOrder(10L, 11L, 12L, 13L, 14L);
      assertThat(after.part("cat=a").location()).isNotEqualTo(firstLocation);
      org.apache.hadoop.fs.Path first = new org.apache.hadoop.fs.Path(firstLocation);
      assertThat(first.getFileSystem(fixture().conf()).exists(first)).isFalse();
    }
  }

  Stream<String> unpartitionedOverwritePoints() {
    return full()
        ? Stream.of("none", CommitHook.FILES_MOVED, CommitHook.STATS_UPDATED, CommitHook.REPLACED_DELETED,
            CommitHook.BEFORE_WATERMARK)
        : Stream.of(CommitHook.REPLACED_DELETED);
  }

  @ParameterizedTest(name = "crash at {0}")
  @MethodSource("unpartitionedOverwritePoints")
  void insertOverwriteOfAnUnpartitionedTableShowsOldOrNewRows(String point) throws Exception {
    String table = HiveFixture.newTable("flatow");
    HiveSinkConfig.Builder base = fixture().config(table).createTable(SCHEMA, List.of());
    HiveSink<Record> seeder = HiveSink.forRecords(base.build());
    try (HiveAggregatedCommitter committer = committer(seeder)) {
      committer.commit(stage(seeder, committer, "seed", 1, rows(100, 120, MIXED)));
    }
    HiveSinkConfig overwrite = base.mode(WriteMode.INSERT_OVERWRITE).build();
    HiveSink<Record> dying = HiveSink.forRecords(overwrite).commitHook((reached, id) -> {
      if (reached.equals(point)) {
        throw new SimulatedCrash(reached, id.checkpointId());
      }
    });
    HiveAggregatedCommitter first = committer(dying);
    HiveCommittable committable = stage(dying, first, "ow", 1, rows(0, 12, MIXED));
    try {
      first.commit(committable);
    } catch (SimulatedCrash expected) {
      // the process died
    } finally {
      first.close();
    }
    List<Long> mid = fixture().contents(table).ids();
    assertThat(new TreeSet<>(mid)).isIn(new TreeSet<>(ids(100, 120)), new TreeSet<>(ids(0, 12)));
    assertThat(mid).doesNotHaveDuplicates();

    try (HiveAggregatedCommitter committer = committer(HiveSink.forRecords(overwrite))) {
      assertThat(committer.commit(committable).isSuccess()).isTrue();
    }
    TableContents after = fixture().contents(table);
    assertThat(after.ids()).containsExactlyInAnyOrderElementsOf(ids(0, 12));
    assertStats(after.parts().get(0));
    assertThat(after.visibleDirs()).isEmpty();
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Racing committers

  /**
   * Two committers commit the same checkpoint at once, lined up so that both add the same new partitions and both
   * try to record the watermark: each sees the other's change as a conflict, and every file and partition is in
   * the table once.
   */
  @Test
  void twoCommittersRacingOnOneCheckpointCommitItOnce() throws Exception {
    raceOnOneCheckpoint(fixture(), TestScale.pick(1, 40));
  }

  /**
   * The race, on any fixture: lined up once (both conflicts forced), then {@code freeRounds} free-running races;
   * after each, every row, file and partition is in the table once.
   */
  static void raceOnOneCheckpoint(HiveFixture fixture, int freeRounds) throws Exception {
    String table = HiveFixture.newTable("race");
    HiveSinkConfig config = fixture.config(table).createTable(SCHEMA, PARTITIONED).build();
    CyclicBarrier moved = new CyclicBarrier(2);
    CyclicBarrier watermark = new CyclicBarrier(2);
    CommitHook lineUp = (point, id) -> {
      if (id.checkpointId() != 2) {
        return;
      }
      try {
        if (point.equals(CommitHook.FILES_MOVED)) {
          moved.await(60, TimeUnit.SECONDS);
        } else if (point.equals(CommitHook.BEFORE_WATERMARK)) {
          watermark.await(60, TimeUnit.SECONDS);
        }
      } catch (Exception e) {
        throw new IllegalStateException("committers did not line up at " + point, e);
      }
    };
    HiveSink<Record> a = HiveSink.forRecords(config).commitHook(lineUp);
    HiveSink<Record> b = HiveSink.forRecords(config).commitHook(lineUp);
    try (HiveAggregatedCommitter ca = committer(a); HiveAggregatedCommitter cb = committer(b)) {
      LongFunction<Record> threeCats = id -> row(id, HiveTestData.CATS.get((int) (id % 3)), (int) (id % 2));
      HiveCommittable first = stage(a, ca, "race", 1, rows(0, 30, threeCats));
      assertThat(ca.commit(first).isSuccess()).isTrue();
      HiveCommittable second = stage(a, ca, "race", 2, rows(30, 130, MIXED));

      List<CommitOutcome> outcomes = race(ca, cb, second);

      assertThat(outcomes).allMatch(CommitOutcome::isSuccess);
      assertThat(outcomes).filteredOn(o -> o instanceof CommitOutcome.Committed).hasSize(1);
      // Lined up, the loser meets the winner's change at least once (partitions or watermark); which step it
      // meets first depends on scheduling, so the count is at least one, not exactly two.
      assertThat(ca.conflicts() + cb.conflicts()).as("conflicts seen").isPositive();
      assertRaceResult(fixture, table, 130, first.fileCount() + second.fileCount());

      // Free-running races, without lining up: still exactly once.
      int files = first.fileCount() + second.fileCount();
      for (int round = 0; round < freeRounds; round++) {
        long from = 130 + round * 40L;
        HiveCommittable next = stage(a, ca, "race", 3 + round, rows(from, from + 40, MIXED));
        files += next.fileCount();
        assertThat(race(ca, cb, next)).allMatch(CommitOutcome::isSuccess);
        assertRaceResult(fixture, table, from + 40, files);
      }
    }
  }

  private static List<CommitOutcome> race(HiveAggregatedCommitter ca, HiveAggregatedCommitter cb,
      HiveCommittable committable) throws Exception {
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(6).initialBackoff(Duration.ofMillis(5)).build();
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      Future<CommitOutcome> one = threads.submit(() -> retry.commit("race a", () -> ca.commit(committable)));
      Future<CommitOutcome> two = threads.submit(() -> retry.commit("race b", () -> cb.commit(committable)));
      return List.of(one.get(120, TimeUnit.SECONDS), two.get(120, TimeUnit.SECONDS));
    } finally {
      threads.shutdownNow();
    }
  }

  private static void assertRaceResult(HiveFixture fixture, String table, long rows, int files) {
    TableContents contents = fixture.contents(table);
    assertThat(contents.ids()).containsExactlyInAnyOrderElementsOf(ids(0, rows));
    assertThat(contents.files()).doesNotHaveDuplicates().hasSize(files);
    assertThat(contents.names()).doesNotHaveDuplicates();
    contents.parts().forEach(HiveSinkSuite::assertStats);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Helpers

  CrashHarness.Outcome runJob(String table, CrashSchedule schedule, boolean check,
      Function<CrashSchedule, UnaryOperator<FileSystem>> fileSystems,
      UnaryOperator<HiveSinkConfig.Builder> configure, LongFunction<Record> rowOf) throws IOException {
    return runJob(table, schedule, check, fileSystems, configure, rowOf,
        new java.util.concurrent.CopyOnWriteArrayList<>(), 0);
  }

  /**
   * Runs the crash harness's job over a Hive sink whose target the runtime opens (each life claims a run epoch);
   * {@code targets} gets every target opened; {@code uncommitted} is the job's maxUncommittedCheckpoints.
   */
  CrashHarness.Outcome runJob(String table, CrashSchedule schedule, boolean check,
      Function<CrashSchedule, UnaryOperator<FileSystem>> fileSystems,
      UnaryOperator<HiveSinkConfig.Builder> configure, LongFunction<Record> rowOf, List<HiveTarget> targets,
      int uncommitted) throws IOException {
    HiveSinkConfig config = configure.apply(fixture().config(table).maxRowsPerFile(CONFIG.rowsPerFile())).build();
    Path checkpoints = Files.createTempDirectory(dir, "checkpoints");
    return CrashHarness.run(checkpoints, CONFIG.withMaxUncommitted(uncommitted), schedule,
        crashes -> new CrashingSink<>(HiveSink.forRecords(config)
            .idempotencyCheck(check)
            .commitHook((point, id) -> crashes.reach(point, id.checkpointId()))
            .fileSystems(fileSystems.apply(crashes)), crashes, target -> targets.add((HiveTarget) target)),
        HiveTestData.source(CONFIG.records(), rowOf),
        () -> fixture().contents(table).ids());
  }

  static CrashSchedule randomSchedule(Random random) {
    List<String> points = new ArrayList<>(CrashSchedule.ALL_POINTS);
    points.addAll(HIVE_POINTS);
    List<CrashSchedule.Crash> crashes = new ArrayList<>();
    for (int i = 0, n = 1 + random.nextInt(3); i < n; i++) {
      String point = points.get(random.nextInt(points.size()));
      int bound = point.equals(CrashSchedule.WRITE) ? CONFIG.writesPerLife()
          : point.equals(CommitHook.FILE_MOVED) ? 18 : CONFIG.checkpointsPerLife();
      crashes.add(new CrashSchedule.Crash(point, 1 + random.nextInt(bound)));
    }
    return new CrashSchedule(crashes);
  }

  /**
   * Exactly the source rows; the partitions of the source, at Hive's directory names; no file twice; exact
   * statistics; the watermark at the last checkpoint; nothing left in staging.
   */
  void assertExactlyOnce(String table, CrashHarness.Outcome outcome, boolean successFiles,
      LongFunction<Record> rowOf) throws Exception {
    assertThat(outcome.audit().exact()).as(outcome.audit().toString()).isTrue();
    TableContents contents = fixture().contents(table);
    assertThat(contents.visibleDirs()).as("visible sub-directories").isEmpty();
    assertThat(contents.files()).as("files").doesNotHaveDuplicates();
    boolean partitioned = !contents.parts().get(0).name().isEmpty();
    if (partitioned) {
      Set<String> expected = new HashSet<>();
      for (long id = 0; id < CONFIG.records(); id++) {
        Record row = rowOf.apply(id);
        expected.add(FileUtils.makePartName(PARTITIONED,
            List.of(String.valueOf(row.getField("cat")), String.valueOf(row.getField("bucket")))));
      }
      assertThat(contents.names()).containsExactlyInAnyOrderElementsOf(expected);
    }
    FileSystem fs = new org.apache.hadoop.fs.Path(contents.parts().get(0).location()).getFileSystem(fixture().conf());
    for (TableContents.Part part : contents.parts()) {
      assertStats(part);
      if (partitioned) {
        assertThat(part.location()).endsWith("/" + part.name());
      }
      if (successFiles) {
        assertThat(fs.exists(new org.apache.hadoop.fs.Path(part.location(), "_SUCCESS")))
            .as("_SUCCESS in %s", part.location()).isTrue();
      }
    }
    long last = outcome.completed().get(0).lastCheckpointId();
    Map<String, String> params = fixture().client().getTable(HiveFixture.DB, table).getParameters();
    assertThat(params).containsEntry(CommitId.watermarkKey(JobId.of(JOB)), Long.toString(last));
    org.apache.hadoop.fs.Path staging = new org.apache.hadoop.fs.Path(
        HivePaths.baseLocation(new org.apache.hadoop.fs.Path(locationOf(table))), HivePaths.STAGING_DIR);
    assertThat(stagedDataFiles(fs, staging)).as("staged files left").isEmpty();
    // On S3: staged uploads (S3A magic paths), none left staged or in progress.
    org.apache.hadoop.fs.Path base = HivePaths.baseLocation(new org.apache.hadoop.fs.Path(locationOf(table)));
    assertThat(stagedDataFiles(fs, PendingUploads.stagingRoot(base))).as("staged uploads left").isEmpty();
    PendingUploads uploads = PendingUploads.of(fs);
    if (uploads != null) {
      assertThat(uploads.pendingUnder(base)).as("uploads in progress").isEmpty();
    }
  }

  private String locationOf(String table) {
    try {
      return fixture().client().getTable(HiveFixture.DB, table).getSd().getLocation();
    } catch (org.apache.thrift.TException e) {
      throw new IllegalStateException(e);
    }
  }

  static void assertStats(TableContents.Part part) {
    assertThat(part.params()).as("statistics of %s", part.location())
        .containsEntry("numRows", Long.toString(part.ids().size()))
        .containsEntry("numFiles", Long.toString(part.files().size()));
  }

  static List<String> stagedDataFiles(FileSystem fs, org.apache.hadoop.fs.Path root) throws IOException {
    List<String> files = new ArrayList<>();
    try {
      RemoteIterator<LocatedFileStatus> it = fs.listFiles(root, true);
      while (it.hasNext()) {
        String name = it.next().getPath().getName();
        if (name.endsWith(".parquet")) {
          files.add(name);
        }
      }
    } catch (FileNotFoundException e) {
      // nothing staged
    }
    return files;
  }

  static List<String> visibleFiles(FileSystem fs, org.apache.hadoop.fs.Path dir) throws IOException {
    List<String> files = new ArrayList<>();
    try {
      for (FileStatus status : fs.listStatus(dir)) {
        if (status.isFile() && !HivePaths.isHidden(status.getPath().getName())) {
          files.add(status.getPath().getName());
        }
      }
    } catch (FileNotFoundException e) {
      // no directory, no files
    }
    return files;
  }

  static Map<String, List<Long>> idsByPartition(List<Record> rows) {
    Map<String, List<Long>> byPartition = new java.util.HashMap<>();
    for (Record row : rows) {
      byPartition.computeIfAbsent("cat=" + row.getField("cat"), k -> new ArrayList<>()).add((Long) row.getField("id"));
    }
    return byPartition;
  }

  static List<Long> ids(long from, long to) {
    List<Long> ids = new ArrayList<>();
    for (long id = from; id < to; id++) {
      ids.add(id);
    }
    return ids;
  }

  static HiveAggregatedCommitter committer(HiveSink<Record> sink) throws IOException {
    return (HiveAggregatedCommitter) sink.createAggregatedCommitter();
  }
}
