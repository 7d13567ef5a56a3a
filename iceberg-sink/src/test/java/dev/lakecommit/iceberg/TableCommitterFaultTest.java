package dev.lakecommit.iceberg;

import static dev.lakecommit.iceberg.TestTables.IDENT;
import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.testing.TestScale;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Races, lost acknowledgements and concurrent table changes, over real catalogs. */
class TableCommitterFaultTest {
  private static final ExecutorService POOL = Executors.newFixedThreadPool(2);

  @TempDir Path dir;

  static Stream<String> catalogs() {
    return CatalogFixture.NAMES.stream();
  }

  @AfterAll
  static void stopPool() {
    POOL.shutdownNow();
  }

  private final List<AutoCloseable> servers = new ArrayList<>();

  @org.junit.jupiter.api.AfterEach
  void stopServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  CatalogFixture fixture(String name, Path base) {
    return CatalogFixture.named(name, base, servers);
  }

  /** Outcomes of two committers with their own catalogs, released together into the catalog's first attempt. */
  private List<CommitOutcome> race(CatalogFixture fixture, CheckpointChanges changes, boolean check,
      CommitCounters counters) throws Exception {
    CyclicBarrier bothAtTheCatalog = new CyclicBarrier(2);
    List<Future<CommitOutcome>> futures = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      TableCommitter committer = new TableCommitter(fixture.newCatalog(), IDENT, CommitMode.APPEND, null, null,
          counters)
          .idempotencyCheck(check)
          .attemptHook(attempt -> {
            if (attempt == 1) {
              await(bothAtTheCatalog);
            }
          });
      futures.add(POOL.submit(() -> committer.commit(changes)));
    }
    List<CommitOutcome> outcomes = new ArrayList<>();
    for (Future<CommitOutcome> future : futures) {
      outcomes.add(future.get(60, TimeUnit.SECONDS));
    }
    return outcomes;
  }

  private static void await(CyclicBarrier barrier) {
    try {
      barrier.await(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("racing committer did not arrive", e);
    }
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void racingCommittersOfOneCheckpointMakeExactlyOneSnapshot(String name) throws Exception {
    int races = TestScale.pick(6, 200);
    for (int race = 0; race < races; race++) {
      Path base = Files.createDirectory(dir.resolve("race-" + race));
      CatalogFixture fixture = fixture(name, base);
      Table table = TestTables.create(fixture.newCatalog());
      CheckpointChanges changes = TestTables.changes(1, List.of(TestTables.dataFile(table, 0, 25)));
      CommitCounters counters = new CommitCounters();

      List<CommitOutcome> outcomes = race(fixture, changes, true, counters);

      assertThat(outcomes).as("race %s", race)
          .haveExactly(1, new org.assertj.core.api.Condition<>(o -> o instanceof CommitOutcome.Committed, "committed"))
          .haveExactly(1, new org.assertj.core.api.Condition<>(
              o -> o instanceof CommitOutcome.AlreadyCommitted, "already committed"));
      assertThat(counters.conflicts()).as("race %s: the catalog refused the loser's stale commit", race)
          .isPositive();
      assertThat(TestTables.committedCheckpoints(table)).as("race %s", race).containsExactly(1L);
      assertThat(TestTables.keyCounts(table)).hasSize(25).allSatisfy((k, n) -> assertThat(n).isOne());
    }
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void withoutTheCheckRacingCommittersDuplicateRows(String name) throws Exception {
    CatalogFixture fixture = fixture(name, dir);
    Table table = TestTables.create(fixture.newCatalog());
    CheckpointChanges changes = TestTables.changes(1, List.of(TestTables.dataFile(table, 0, 25)));
    CommitCounters counters = new CommitCounters();

    List<CommitOutcome> outcomes = race(fixture, changes, false, counters);

    assertThat(outcomes).allMatch(o -> o instanceof CommitOutcome.Committed);
    assertThat(counters.conflicts()).isPositive();
    assertThat(TestTables.committedCheckpoints(table)).containsExactly(1L, 1L);
    assertThat(TestTables.keyCounts(table)).allSatisfy((k, n) -> assertThat(n).isEqualTo(2));
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void aCommitWhoseAckWasLostIsSettledAsCommittedAndNeverRepeated(String name) {
    CatalogFixture fixture = fixture(name, dir);
    Table table = TestTables.create(fixture.newCatalog());
    CheckpointChanges changes = TestTables.changes(1, List.of(TestTables.dataFile(table, 0, 30)));
    CommitCounters counters = new CommitCounters();
    Catalog faulty = new FaultyCatalog(fixture.newCatalog(), FaultyCatalog.Fault.ACK_LOST, 1);

    CommitOutcome first = new TableCommitter(faulty, IDENT, CommitMode.APPEND, null, null, counters)
        .commit(changes);
    CommitOutcome afterRestore = new TableCommitter(fixture.newCatalog(), IDENT, CommitMode.APPEND, null, null,
        counters).commit(changes);

    assertThat(first).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(((CommitOutcome.Committed) first).targetVersion()).startsWith("settled by reading back");
    assertThat(afterRestore).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(TestTables.committedCheckpoints(table)).containsExactly(1L);
    assertThat(TestTables.keyCounts(table)).hasSize(30).allSatisfy((k, n) -> assertThat(n).isOne());
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void aCommitThatNeverReachedTheCatalogIsRetriedAndCommittedOnce(String name) {
    CatalogFixture fixture = fixture(name, dir);
    Table table = TestTables.create(fixture.newCatalog());
    CheckpointChanges changes = TestTables.changes(1, List.of(TestTables.dataFile(table, 0, 30)));
    TableCommitter committer = new TableCommitter(
        new FaultyCatalog(fixture.newCatalog(), FaultyCatalog.Fault.NOT_APPLIED, 1), IDENT, CommitMode.APPEND,
        null, null, new CommitCounters());

    CommitOutcome first = committer.commit(changes);
    CommitOutcome retry = committer.commit(changes);

    assertThat(first).isInstanceOf(CommitOutcome.Retryable.class);
    assertThat(retry).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(TestTables.committedCheckpoints(table)).containsExactly(1L);
    assertThat(TestTables.keyCounts(table)).hasSize(30);
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void anUnreadableTableAfterALostAckIsUnknownNotGuessed(String name) {
    CatalogFixture fixture = fixture(name, dir);
    Table table = TestTables.create(fixture.newCatalog());
    CheckpointChanges changes = TestTables.changes(1, List.of(TestTables.dataFile(table, 0, 30)));
    FaultyCatalog faulty =
        new FaultyCatalog(fixture.newCatalog(), FaultyCatalog.Fault.LOAD_FAILS_AFTER_ACK_LOST, 1);
    TableCommitter committer =
        new TableCommitter(faulty, IDENT, CommitMode.APPEND, null, null, new CommitCounters());

    CommitOutcome first = committer.commit(changes);
    assertThat(first).isInstanceOf(CommitOutcome.Unknown.class);
    assertThat(first.stagedFilesDeletable()).isFalse();

    faulty.healLoads();
    assertThat(committer.commit(changes)).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(TestTables.committedCheckpoints(table)).containsExactly(1L);
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void aConcurrentCompactionAndForeignAppendBetweenAttemptsLoseNothing(String name) {
    CatalogFixture fixture = fixture(name, dir);
    Table table = TestTables.create(fixture.newCatalog());
    DataFile a = TestTables.dataFile(table, 0, 10);
    DataFile b = TestTables.dataFile(table, 10, 20);
    table.newFastAppend().appendFile(a).appendFile(b).commit();
    CommitCounters counters = new CommitCounters();
    TableCommitter committer = new TableCommitter(fixture.newCatalog(), IDENT, CommitMode.APPEND, null, null,
        counters).attemptHook(attempt -> {
          if (attempt == 1) {
            Table other = fixture.newCatalog().loadTable(IDENT);
            other.newFastAppend().appendFile(TestTables.dataFile(other, 100, 105)).commit();
            other.newRewrite()
                .rewriteFiles(java.util.Set.of(a, b), java.util.Set.of(TestTables.dataFile(other, 0, 20)))
                .commit();
          }
        });

    CommitOutcome outcome = committer.commit(
        TestTables.changes(1, List.of(TestTables.dataFile(table, 200, 230))));

    assertThat(outcome).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(counters.conflicts()).isPositive();
    assertThat(TestTables.keyCounts(table)).hasSize(20 + 5 + 30).allSatisfy((k, n) -> assertThat(n).isOne());
  }
}
