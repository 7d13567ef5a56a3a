package dev.lakecommit.iceberg;

import static dev.lakecommit.iceberg.CutFixtures.JOB;
import static dev.lakecommit.iceberg.CutFixtures.POSITION;
import static dev.lakecommit.iceberg.CutFixtures.commit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.testing.SimulatedCrash;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link CutCommitter} on Iceberg's JDBC catalog (SQLite here, PostgreSQL in the IT): a checkpoint over three tables is
 * one cut. At every crash point of the cut — before the database transaction, inside it after k of its swaps, after
 * it before the answer — a reader of all pointers in one query sees every table at the same checkpoint, and the
 * replay leaves each table with each checkpoint's files once; without the idempotency check the same replay
 * duplicates them. A run fenced in one table commits to none; two runs claiming at once end at different epochs.
 */
class AtomicCutTest {

  @TempDir Path dir;
  private final List<AutoCloseable> servers = new ArrayList<>();
  private CatalogFixture fixture;
  private Catalog catalog;
  private TableIdentifier anyTable;

  static Stream<String> catalogs() {
    return Stream.of("jdbc-sqlite");
  }

  @AfterEach
  void closeServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  /** Three new tables in namespace {@code ns} of the fixture's catalog. */
  private List<TableIdentifier> tables(String name, String ns) {
    if (fixture == null) {
      fixture = CatalogFixture.named(name, dir, servers);
      catalog = fixture.newCatalog();
    }
    List<TableIdentifier> tables = CutFixtures.newTables(catalog, ns);
    anyTable = anyTable == null ? tables.get(0) : anyTable;
    return tables;
  }

  private JdbcMultiTableCommit multi() {
    FileIO io = ((HasTableOperations) catalog.loadTable(anyTable)).operations().io();
    return JdbcMultiTableCommit.of(fixture.name(), fixture.properties(), io, 3);
  }

  private CutCommitter cut(JdbcMultiTableCommit multi) {
    return new CutCommitter(fixture.newCatalog(), multi);
  }

  private Map<String, Long> checkpointsAtOnce(String namespace) throws Exception {
    FileIO io = ((HasTableOperations) catalog.loadTable(anyTable)).operations().io();
    return CutFixtures.checkpointsAtOnce(fixture.properties(), "table_namespace = '" + namespace + "'", io);
  }

  private Map<String, Integer> liveFiles(TableIdentifier table) throws Exception {
    return CutFixtures.liveFiles(catalog, table);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aCheckpointIsOneCutOverEveryTableAndItsReplayAddsNothing(String name) throws Exception {
    List<TableIdentifier> tables = tables(name, "cut");
    CutCommitter cut = cut(multi());
    RunEpoch epoch = cut.claim(JOB, "test run", tables);

    assertThat(commit(cut, 1, epoch.epoch(), tables)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(commit(cut, 2, epoch.epoch(), tables)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(commit(cut(multi()), 2, epoch.epoch(), tables)).as("a replay")
        .isInstanceOf(CommitOutcome.AlreadyCommitted.class);

    assertThat(checkpointsAtOnce("cut")).containsOnly(Map.entry("credits", 2L), Map.entry("debits", 2L),
        Map.entry("orders", 2L));
    for (TableIdentifier table : tables) {
      assertThat(liveFiles(table)).as("%s", table).hasSize(2).containsValues(1);
      assertThat(catalog.loadTable(table).currentSnapshot().summary())
          .containsEntry(CommitId.CHECKPOINT_ID_KEY, "2").containsEntry(CutCommitter.CUT_TABLES_KEY, "3");
    }
    CutCommitter.Cut last = cut.lastCut(JOB, tables, List.of(POSITION)).orElseThrow();
    assertThat(last.checkpointId()).isEqualTo(2);
    assertThat(last.properties()).containsEntry(POSITION, "offset-2");
    assertThat(last.snapshots()).containsOnlyKeys(tables);
  }

  /** Where a crash interrupts the cut of checkpoint 2. */
  enum CrashPoint {
    BEFORE_TRANSACTION, AFTER_FIRST_SWAP, AFTER_SECOND_SWAP, AFTER_COMMIT_BEFORE_ANSWER
  }

  private static JdbcMultiTableCommit.SwapHook crashAt(CrashPoint point) {
    return new JdbcMultiTableCommit.SwapHook() {
      @Override
      public void beforeSwap(int attempt) {
        if (point == CrashPoint.BEFORE_TRANSACTION) {
          throw new SimulatedCrash("cut-before-transaction", 2);
        }
      }

      @Override
      public void swapped(TableIdentifier table, int swapped) {
        if ((point == CrashPoint.AFTER_FIRST_SWAP && swapped == 1)
            || (point == CrashPoint.AFTER_SECOND_SWAP && swapped == 2)) {
          throw new SimulatedCrash("cut-after-swap-" + swapped, 2);
        }
      }

      @Override
      public void committed(int attempt) {
        if (point == CrashPoint.AFTER_COMMIT_BEFORE_ANSWER) {
          throw new SimulatedCrash("cut-after-commit", 2);
        }
      }
    };
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void everyCrashPointOfTheCutRecoversToEachCheckpointOnceAndNeverShowsTwoCheckpoints(String name)
      throws Exception {
    for (CrashPoint point : CrashPoint.values()) {
      String ns = "cut_" + point.name().toLowerCase(java.util.Locale.ROOT);
      List<TableIdentifier> tables = tables(name, ns);
      CutCommitter first = cut(multi());
      long epoch = first.claim(JOB, "run 1", tables).epoch();
      commit(first, 1, epoch, tables);

      CutCommitter dying = cut(multi().hook(crashAt(point)));
      assertThatThrownBy(() -> commit(dying, 2, epoch, tables)).isInstanceOf(SimulatedCrash.class);
      Set<Long> seen = new HashSet<>(checkpointsAtOnce(ns).values());
      assertThat(seen).as("%s: one checkpoint in all tables", point).hasSize(1);
      assertThat(seen).as("%s", point)
          .containsExactly(point == CrashPoint.AFTER_COMMIT_BEFORE_ANSWER ? 2L : 1L);

      // the restarted run claims again and replays the checkpoint
      CutCommitter restarted = cut(multi());
      long next = restarted.claim(JOB, "run 2", tables).epoch();
      assertThat(next).isEqualTo(epoch + 1);
      CommitOutcome replay = commit(restarted, 2, next, tables);
      assertThat(replay).as("%s", point).isInstanceOf(point == CrashPoint.AFTER_COMMIT_BEFORE_ANSWER
          ? CommitOutcome.AlreadyCommitted.class : CommitOutcome.Committed.class);
      assertThat(new HashSet<>(checkpointsAtOnce(ns).values())).as("%s", point).containsExactly(2L);
      for (TableIdentifier table : tables) {
        assertThat(liveFiles(table)).as("%s %s: each checkpoint's file once", point, table).hasSize(2)
            .containsOnly(Map.entry("/data/" + table + "/transfers-1.parquet", 1),
                Map.entry("/data/" + table + "/transfers-2.parquet", 1));
      }
    }
  }

  /** The test-only switch: without the check, the replay after a cut that committed adds its files again. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void withoutTheIdempotencyCheckTheReplayOfACommittedCutDuplicates(String name) throws Exception {
    List<TableIdentifier> tables = tables(name, "cut");
    CutCommitter dying = cut(multi().hook(crashAt(CrashPoint.AFTER_COMMIT_BEFORE_ANSWER)));
    assertThatThrownBy(() -> commit(dying, 1, 0, tables)).isInstanceOf(SimulatedCrash.class);

    assertThat(commit(cut(multi()).idempotencyCheck(false), 1, 0, tables))
        .isInstanceOf(CommitOutcome.Committed.class);
    for (TableIdentifier table : tables) {
      assertThat(liveFiles(table)).as("%s", table)
          .containsEntry("/data/" + table + "/transfers-1.parquet", 2);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aRunFencedInOneTableCommitsToNone(String name) throws Exception {
    List<TableIdentifier> tables = tables(name, "cut");
    CutCommitter old = cut(multi());
    long oldEpoch = old.claim(JOB, "old run", tables).epoch();
    commit(old, 1, oldEpoch, tables);
    // a newer run has claimed the job in one of the tables
    RunEpoch newer = cut(multi()).claim(JOB, "newer run", List.of(tables.get(1)));
    assertThat(newer.epoch()).isEqualTo(oldEpoch + 1);
    Map<String, Long> before = checkpointsAtOnce("cut");

    CommitOutcome refused = commit(old, 2, oldEpoch, tables);

    assertThat(refused).isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(((CommitOutcome.Fatal) refused).cause()).isInstanceOf(FencedException.class)
        .hasMessageContaining("newer run");
    assertThat(checkpointsAtOnce("cut")).isEqualTo(before);
    for (TableIdentifier table : tables) {
      assertThat(liveFiles(table)).as("%s", table).hasSize(1);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void twoRunsClaimingAtOnceEndAtDifferentEpochsInEveryTable(String name) throws Exception {
    List<TableIdentifier> tables = tables(name, "cut");
    CutCommitter other = cut(multi());
    AtomicInteger raced = new AtomicInteger();
    CutCommitter racing = cut(multi().hook(new JdbcMultiTableCommit.SwapHook() {
      @Override
      public void beforeSwap(int attempt) {
        if (raced.getAndIncrement() == 0) {
          // the other run claims after this one read the epochs and before it swaps
          other.claim(JOB, "other run", tables);
        }
      }
    }));

    RunEpoch claimed = racing.claim(JOB, "racing run", tables);

    assertThat(raced).as("the race was met: a second attempt").hasValueGreaterThanOrEqualTo(2);
    assertThat(claimed.epoch()).isEqualTo(2);
    for (TableIdentifier table : tables) {
      assertThat(catalog.loadTable(table).properties().get(RunEpoch.key(JOB))).startsWith("2 racing run");
    }
    assertThat(commit(other, 1, 1, tables)).as("the run that lost the epoch")
        .isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(commit(racing, 1, 2, tables)).isInstanceOf(CommitOutcome.Committed.class);
  }

  /**
   * Another committer lands the same checkpoint after this one checked a table and before it writes its metadata:
   * the swap finds the pointer moved, and the change made again on the new metadata finds the checkpoint there.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aRacingCutLandingBetweenTheCheckAndTheSwapIsFoundNotAddedAgain(String name) throws Exception {
    List<TableIdentifier> tables = tables(name, "cut");
    long epoch = cut(multi()).claim(JOB, "run", tables).epoch();
    AtomicInteger raced = new AtomicInteger();
    CutCommitter racing = cut(multi().hook(new JdbcMultiTableCommit.SwapHook() {
      @Override
      public void changed(TableIdentifier table, int attempt) {
        if (table.equals(tables.get(0)) && raced.getAndIncrement() == 0) {
          assertThat(commit(cut(multi()), 1, epoch, tables)).isInstanceOf(CommitOutcome.Committed.class);
        }
      }
    }));

    CommitOutcome outcome = commit(racing, 1, epoch, tables);

    assertThat(raced).as("the race was met").hasValueGreaterThanOrEqualTo(1);
    assertThat(outcome).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    for (TableIdentifier table : tables) {
      assertThat(liveFiles(table)).as("%s", table).containsOnly(Map.entry(CutFixtures.path(table, 1), 1));
    }
  }
}
