package dev.lakecommit.iceberg;

import static dev.lakecommit.iceberg.TestTables.IDENT;
import static dev.lakecommit.iceberg.TestTables.JOB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.expressions.Expressions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** One snapshot per checkpoint, identity in the table, replays skipped: over real catalogs. */
class TableCommitterTest {
  @TempDir static Path root;
  @TempDir Path dir;

  static Stream<String> catalogs() {
    return CatalogFixture.NAMES.stream();
  }

  private final List<AutoCloseable> servers = new java.util.ArrayList<>();

  @org.junit.jupiter.api.AfterEach
  void stopServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  private final java.util.Map<String, CatalogFixture> fixtures = new java.util.HashMap<>();

  /** The same catalog (same storage) for every call in a test. */
  CatalogFixture fixture(String name) {
    return fixtures.computeIfAbsent(name, n -> CatalogFixture.named(n, dir, servers));
  }

  private TableCommitter committer(Catalog catalog, CommitCounters counters) {
    return new TableCommitter(catalog, IDENT, CommitMode.APPEND, null, null, counters);
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void commitsOneSnapshotPerCheckpointWithItsIdentityAndWatermark(String name) {
    Catalog catalog = fixture(name).newCatalog();
    Table table = TestTables.create(catalog);
    CommitCounters counters = new CommitCounters();
    TableCommitter committer = committer(catalog, counters);

    for (long checkpoint = 1; checkpoint <= 3; checkpoint++) {
      long base = (checkpoint - 1) * 100;
      List<DataFile> files = List.of(TestTables.dataFile(table, base, base + 60),
          TestTables.dataFile(table, base + 60, base + 100));
      assertThat(committer.commit(TestTables.changes(checkpoint, files)))
          .isInstanceOf(CommitOutcome.Committed.class);
    }

    table.refresh();
    assertThat(TestTables.committedCheckpoints(table)).containsExactly(1L, 2L, 3L);
    Snapshot head = table.currentSnapshot();
    assertThat(head.summary()).containsEntry(CommitId.JOB_ID_KEY, "job-1")
        .containsEntry(CommitId.CHECKPOINT_ID_KEY, "3")
        .containsEntry(TableCommitter.WRITERS_KEY, "2")
        .containsEntry("added-records", "100");
    assertThat(table.properties()).containsEntry("lakecommit.committed.job-1", "3");
    assertThat(committer.lastCommitted(JOB)).hasValue(3);
    Map<Long, Integer> keys = TestTables.keyCounts(table);
    assertThat(keys).hasSize(300).allSatisfy((key, count) -> assertThat(count).isOne());
    assertThat(counters.commits()).isEqualTo(3);
    assertThat(counters.files()).isEqualTo(6);
    assertThat(counters.records()).isEqualTo(300);
  }

  /**
   * Commit properties ({@link SupportsCommitProperties}) land in the transaction of the commit that carries them and
   * of no other: not with a replay found committed, not with a commit refused as fenced.
   */
  @ParameterizedTest
  @MethodSource("catalogs")
  void commitPropertiesLandOnlyWithTheCommitThatCarriesThem(String name) throws Exception {
    Catalog catalog = fixture(name).newCatalog();
    Table table = TestTables.create(catalog);
    TableCommitter committer = committer(catalog, new CommitCounters());
    committer.commitProperties(Map.of("adapter.key", "one"));
    assertThat(committer.commit(TestTables.changes(1, List.of(TestTables.dataFile(table, 0, 10)))))
        .isInstanceOf(CommitOutcome.Committed.class);
    table.refresh();
    assertThat(table.properties()).containsEntry("adapter.key", "one")
        .containsEntry("lakecommit.committed.job-1", "1");
    assertThat(table.currentSnapshot().summary()).containsEntry(CommitId.CHECKPOINT_ID_KEY, "1");

    committer.commitProperties(Map.of("adapter.key", "two"));
    assertThat(committer.commit(TestTables.changes(1, List.of(TestTables.dataFile(table, 10, 20)))))
        .isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    try (dev.lakecommit.core.CommitTarget target = new IcebergTarget(catalog, IDENT, null, null)) {
      long epoch = target.claimEpoch(JOB, "first").epoch();
      target.claimEpoch(JOB, "second");
      committer.fence(epoch);
    }
    assertThat(committer.commit(TestTables.changes(2, List.of(TestTables.dataFile(table, 10, 20)))))
        .isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(committer.currentProperties()).containsEntry("adapter.key", "one")
        .containsEntry("lakecommit.committed.job-1", "1");
    assertThat(org.assertj.core.api.Assertions.catchThrowable(
        () -> committer.commitProperties(Map.of("lakecommit.committed.job-1", "9"))))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lakecommit.committed.job-1");
  }

  /**
   * A second run claims the job while the first run's commit is between its epoch check and its catalog attempt:
   * the attempt must not land. A catalog that swaps whole metadata refuses it as stale; a REST catalog applies
   * changes on the server with requirements only for what they touch, so the claim must touch what every commit
   * asserts (the branch's snapshot).
   */
  @ParameterizedTest
  @MethodSource("catalogs")
  void aClaimThatLandsDuringACommitAttemptFencesTheAttempt(String name) throws Exception {
    Catalog catalog = fixture(name).newCatalog();
    Table table = TestTables.create(catalog);
    Catalog other = fixture(name).newCatalog();
    try (dev.lakecommit.core.CommitTarget first = new IcebergTarget(catalog, IDENT, null, null);
        dev.lakecommit.core.CommitTarget second = new IcebergTarget(other, IDENT, null, null)) {
      TableCommitter committer = committer(catalog, new CommitCounters());
      committer.fence(first.claimEpoch(JOB, "first").epoch());
      committer.attemptHook(attempt -> {
        if (attempt == 1) {
          try {
            second.claimEpoch(JOB, "second");
          } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        }
      });

      CommitOutcome outcome = committer.commit(TestTables.changes(1, List.of(TestTables.dataFile(table, 0, 10))));

      assertThat(outcome).isInstanceOf(CommitOutcome.Fatal.class);
      assertThat(((CommitOutcome.Fatal) outcome).cause()).hasMessageContaining("fenced");
      assertThat(TestTables.keyCounts(other.loadTable(IDENT))).isEmpty();
      assertThat(TestTables.committedCheckpoints(other.loadTable(IDENT))).isEmpty();
    }
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void aReplayedCheckpointIsSkippedAndAddsNothing(String name) {
    Catalog catalog = fixture(name).newCatalog();
    Table table = TestTables.create(catalog);
    CommitCounters counters = new CommitCounters();
    CheckpointChanges one = TestTables.changes(1, List.of(TestTables.dataFile(table, 0, 10)));
    committer(catalog, counters).commit(one);

    CommitOutcome replay = committer(fixture(name).newCatalog(), counters).commit(one);
    CommitOutcome older = committer(catalog, counters)
        .commit(TestTables.changes(1, List.of(TestTables.dataFile(table, 10, 20))));

    assertThat(replay).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(((CommitOutcome.AlreadyCommitted) replay).reason()).contains("lakecommit.committed.job-1=1");
    assertThat(older).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(TestTables.committedCheckpoints(table)).containsExactly(1L);
    assertThat(TestTables.keyCounts(table)).hasSize(10);
    assertThat(counters.skipped()).isEqualTo(2);
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void aCommitterKeepingItsTableSeesOtherCommitsReplaysAndADroppedTable(String name) {
    Catalog catalog = fixture(name).newCatalog();
    Table table = TestTables.create(catalog);
    TableCommitter committer = committer(catalog, new CommitCounters());
    assertThat(committer.commit(TestTables.changes(1, List.of(TestTables.dataFile(table, 0, 10)))))
        .isInstanceOf(CommitOutcome.Committed.class);
    // Between two commits of this committer: a foreign append and another committer of the same job, through
    // other catalog instances, so that nothing but the table itself tells this committer.
    Table other = fixture(name).newCatalog().loadTable(IDENT);
    other.newFastAppend().appendFile(TestTables.dataFile(other, 1000, 1001)).commit();
    assertThat(committer(fixture(name).newCatalog(), new CommitCounters())
        .commit(TestTables.changes(2, List.of(TestTables.dataFile(table, 10, 20)))))
        .isInstanceOf(CommitOutcome.Committed.class);

    assertThat(committer.commit(TestTables.changes(2, List.of(TestTables.dataFile(table, 10, 20)))))
        .as("checkpoint 2 was committed by the other committer").isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(committer.commit(TestTables.changes(3, List.of(TestTables.dataFile(table, 20, 30)))))
        .isInstanceOf(CommitOutcome.Committed.class);
    table.refresh();
    assertThat(TestTables.committedCheckpoints(table)).containsExactly(1L, 2L, 3L);
    assertThat(TestTables.keyCounts(table)).hasSize(31).allSatisfy((key, count) -> assertThat(count).isOne());
    assertThat(table.currentSnapshot().parentId()).as("committed on top of the others' snapshots")
        .isNotNull();

    fixture(name).newCatalog().dropTable(IDENT, false);
    CommitOutcome dropped = committer.commit(TestTables.changes(4, List.of(TestTables.dataFile(table, 30, 40))));
    assertThat(dropped).isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(((CommitOutcome.Fatal) dropped).cause()).hasMessageContaining(IDENT.toString());
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void theWatermarkOutlivesExpiredSnapshots(String name) {
    Catalog catalog = fixture(name).newCatalog();
    Table table = TestTables.create(catalog);
    TableCommitter committer = committer(catalog, new CommitCounters());
    for (long checkpoint = 1; checkpoint <= 4; checkpoint++) {
      committer.commit(TestTables.changes(checkpoint,
          List.of(TestTables.dataFile(table, checkpoint * 10, checkpoint * 10 + 10))));
    }
    // A foreign writer appends, then every older snapshot (all of the job's) is expired.
    table.refresh();
    table.newFastAppend().appendFile(TestTables.dataFile(table, 1000, 1001)).commit();
    table.expireSnapshots().expireOlderThan(Long.MAX_VALUE).retainLast(1).commit();
    table.refresh();
    assertThat(table.snapshots()).hasSize(1);
    assertThat(TestTables.committedCheckpoints(table)).isEmpty();

    CommitOutcome replay = committer(fixture(name).newCatalog(), new CommitCounters())
        .commit(TestTables.changes(3, List.of(TestTables.dataFile(table, 30, 40))));

    assertThat(replay).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(TestTables.keyCounts(table)).hasSize(41);
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void commitsToABranchWithoutTouchingMain(String name) {
    Catalog catalog = fixture(name).newCatalog();
    Table table = TestTables.create(catalog);
    table.newFastAppend().appendFile(TestTables.dataFile(table, 0, 5)).commit();
    table.manageSnapshots().createBranch("audit").commit();
    TableCommitter committer =
        new TableCommitter(catalog, IDENT, CommitMode.APPEND, null, "audit", new CommitCounters());

    committer.commit(TestTables.changes(1, List.of(TestTables.dataFile(table, 5, 15))));
    CommitOutcome replay = committer.commit(TestTables.changes(1, List.of(TestTables.dataFile(table, 5, 15))));

    table.refresh();
    assertThat(replay).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(table.snapshot("audit").summary()).containsEntry(CommitId.CHECKPOINT_ID_KEY, "1");
    assertThat(table.snapshot(SnapshotRef.MAIN_BRANCH).summary()).doesNotContainKey(CommitId.CHECKPOINT_ID_KEY);
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void overwritesThePartitionsOrRowsOfACheckpoint(String name) {
    Catalog catalog = fixture(name).newCatalog();
    Table table = TestTables.create(catalog);
    table.newFastAppend().appendFile(TestTables.dataFile(table, 0, 50)).commit();

    TableCommitter byFilter = new TableCommitter(catalog, IDENT, CommitMode.OVERWRITE_BY_FILTER,
        Expressions.alwaysTrue(), null, new CommitCounters());
    assertThat(byFilter.commit(TestTables.changes(1, List.of(TestTables.dataFile(table, 100, 120)))))
        .isInstanceOf(CommitOutcome.Committed.class);
    assertThat(byFilter.commit(TestTables.changes(1, List.of(TestTables.dataFile(table, 100, 120)))))
        .isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(TestTables.keyCounts(table).keySet()).hasSize(20).allMatch(k -> k >= 100);

    TableCommitter partitions = new TableCommitter(catalog, IDENT, CommitMode.OVERWRITE_PARTITIONS, null, null,
        new CommitCounters());
    assertThat(partitions.commit(TestTables.changes(2, List.of(TestTables.dataFile(table, 200, 205)))))
        .isInstanceOf(CommitOutcome.Committed.class);
    assertThat(TestTables.keyCounts(table).keySet()).hasSize(5).allMatch(k -> k >= 200);
  }
}
