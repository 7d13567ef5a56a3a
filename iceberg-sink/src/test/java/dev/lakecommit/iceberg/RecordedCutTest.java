package dev.lakecommit.iceberg;

import static dev.lakecommit.iceberg.CutFixtures.JOB;
import static dev.lakecommit.iceberg.CutFixtures.POSITION;
import static dev.lakecommit.iceberg.CutFixtures.commit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.runtime.CutRecords;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.core.testing.SimulatedCrash;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link CutCommitter} where the catalog commits one table at a time (Hadoop, JDBC and Iceberg's REST server here,
 * Hive in the IT): each
 * checkpoint's tables commit one by one and then a cut record names every table's snapshot. At every crash point —
 * after one or two of three tables, after all of them before the record — a reader of the tables as the newest
 * record names them sees one checkpoint in all of them, and the replay leaves each checkpoint's file once in each
 * table and publishes the record; without the idempotency check the same replay duplicates. A run fenced in one
 * table publishes no record, and the newer run's replay completes the cut.
 */
class RecordedCutTest {

  @TempDir Path dir;
  private final List<AutoCloseable> servers = new ArrayList<>();
  private CatalogFixture fixture;
  private Catalog catalog;

  static Stream<String> catalogs() {
    return Stream.of("hadoop", "jdbc-sqlite", "rest");
  }

  @AfterEach
  void closeServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  private List<TableIdentifier> tables(String name, String ns) {
    if (fixture == null) {
      fixture = CatalogFixture.named(name, dir, servers);
      catalog = fixture.newCatalog();
    }
    return CutFixtures.newTables(catalog, ns);
  }

  private CutRecords records(String ns) throws Exception {
    return new CutRecords(new LocalBlobStore(dir.resolve("cuts-" + ns)));
  }

  private CutCommitter cut(String ns) throws Exception {
    Catalog own = fixture.newCatalog();
    return new CutCommitter(own, new TableByTableCommit(own, 3), records(ns));
  }

  private CutCommitter cut(String ns, TableByTableCommit.TableHook hook) throws Exception {
    Catalog own = fixture.newCatalog();
    return new CutCommitter(own, new TableByTableCommit(own, 3).hook(hook), records(ns));
  }

  /**
   * What a reader sees reading each table as the newest cut record names it: the checkpoint of each table's named
   * snapshot (empty if there is no record yet).
   */
  private Map<TableIdentifier, Long> asOfTheLastCut(String ns, List<TableIdentifier> tables) throws Exception {
    Map<TableIdentifier, Long> checkpoints = new HashMap<>();
    CutCommitter.Cut last = cut(ns).lastCut(JOB, tables, List.of(POSITION)).orElse(null);
    if (last == null) {
      return checkpoints;
    }
    assertThat(last.properties()).containsEntry(POSITION, "offset-" + last.checkpointId());
    last.snapshots().forEach((table, snapshot) -> checkpoints.put(table,
        Long.parseLong(catalog.loadTable(table).snapshot(snapshot).summary().get(CommitId.CHECKPOINT_ID_KEY))));
    return checkpoints;
  }

  private Map<String, Integer> liveFiles(TableIdentifier table) throws Exception {
    return CutFixtures.liveFiles(catalog, table);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void eachCheckpointIsPublishedAsARecordNamingEveryTablesSnapshot(String name) throws Exception {
    List<TableIdentifier> tables = tables(name, "cut");
    CutCommitter cut = cut("cut");
    assertThat(cut.mode()).contains("each cut is a record published last at");
    long epoch = cut.claim(JOB, "test run", tables).epoch();

    assertThat(commit(cut, 1, epoch, tables)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(commit(cut, 2, epoch, tables)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(commit(cut("cut"), 2, epoch, tables)).as("a replay")
        .isInstanceOf(CommitOutcome.AlreadyCommitted.class);

    CutCommitter.Cut last = cut.lastCut(JOB, tables, List.of(POSITION)).orElseThrow();
    assertThat(last.checkpointId()).isEqualTo(2);
    for (TableIdentifier table : tables) {
      assertThat(last.snapshots().get(table)).isEqualTo(catalog.loadTable(table).currentSnapshot().snapshotId());
      assertThat(liveFiles(table)).as("%s", table).hasSize(2).containsValues(1);
    }
    assertThat(asOfTheLastCut("cut", tables)).containsOnlyKeys(tables).containsValues(2L);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void everyCrashPointLeavesTheLastCutWholeAndTheReplayCompletesIt(String name) throws Exception {
    for (String point : List.of("after-table-1", "after-table-2", "before-record")) {
      String ns = "cut_" + point.replace('-', '_');
      List<TableIdentifier> tables = tables(name, ns);
      long epoch = cut(ns).claim(JOB, "run 1", tables).epoch();
      commit(cut(ns), 1, epoch, tables);

      CutCommitter dying = cut(ns, (table, committed) -> {
        if (point.equals("after-table-" + committed)) {
          throw new SimulatedCrash("cut-" + point, 2);
        }
      }).beforeRecord(() -> {
        if (point.equals("before-record")) {
          throw new SimulatedCrash("cut-" + point, 2);
        }
      });
      assertThatThrownBy(() -> commit(dying, 2, epoch, tables)).isInstanceOf(SimulatedCrash.class);
      Map<TableIdentifier, Long> seen = asOfTheLastCut(ns, tables);
      assertThat(seen).as("%s: the last cut is checkpoint 1 in every table", point).containsOnlyKeys(tables);
      assertThat(new HashSet<>(seen.values())).as(point).containsExactly(1L);

      CutCommitter restarted = cut(ns);
      long next = restarted.claim(JOB, "run 2", tables).epoch();
      CommitOutcome replay = commit(restarted, 2, next, tables);
      assertThat(replay).as(point).isInstanceOf(point.equals("before-record")
          ? CommitOutcome.AlreadyCommitted.class : CommitOutcome.Committed.class);
      assertThat(new HashSet<>(asOfTheLastCut(ns, tables).values())).as(point).containsExactly(2L);
      for (TableIdentifier table : tables) {
        assertThat(liveFiles(table)).as("%s %s: each checkpoint's file once", point, table)
            .containsOnly(Map.entry("/data/" + table + "/transfers-1.parquet", 1),
                Map.entry("/data/" + table + "/transfers-2.parquet", 1));
      }
    }
  }

  /** The test-only switch: without the check, the replay of a cut whose tables all committed adds the files again. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void withoutTheIdempotencyCheckTheReplayDuplicates(String name) throws Exception {
    List<TableIdentifier> tables = tables(name, "cut");
    CutCommitter dying = cut("cut").beforeRecord(() -> {
      throw new SimulatedCrash("cut-before-record", 1);
    });
    assertThatThrownBy(() -> commit(dying, 1, 0, tables)).isInstanceOf(SimulatedCrash.class);

    commit(cut("cut").idempotencyCheck(false), 1, 0, tables);

    for (TableIdentifier table : tables) {
      assertThat(liveFiles(table)).as("%s", table).containsEntry("/data/" + table + "/transfers-1.parquet", 2);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aRunFencedInOneTablePublishesNoCutAndTheNewerRunCompletesIt(String name) throws Exception {
    List<TableIdentifier> tables = tables(name, "cut");
    CutCommitter old = cut("cut");
    long oldEpoch = old.claim(JOB, "old run", tables).epoch();
    commit(old, 1, oldEpoch, tables);
    long newer = cut("cut").claim(JOB, "newer run", List.of(tables.get(2))).epoch();

    CommitOutcome refused = commit(old, 2, oldEpoch, tables);

    assertThat(refused).isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(((CommitOutcome.Fatal) refused).cause()).isInstanceOf(FencedException.class)
        .hasMessageContaining("newer run");
    Set<Long> seen = new HashSet<>(asOfTheLastCut("cut", tables).values());
    assertThat(seen).as("no record of the fenced run's cut").containsExactly(1L);
    for (TableIdentifier table : tables) {
      assertThat(liveFiles(table)).as("%s: nothing of the fenced run's cut, in any table", table).hasSize(1);
    }

    CutCommitter taking = cut("cut");
    long claimed = taking.claim(JOB, "newer run, restarted", tables).epoch();
    assertThat(claimed).isGreaterThan(newer);
    assertThat(commit(taking, 2, claimed, tables)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(new HashSet<>(asOfTheLastCut("cut", tables).values())).containsExactly(2L);
    for (TableIdentifier table : tables) {
      assertThat(liveFiles(table)).as("%s", table).hasSize(2).containsValues(1);
    }
  }

  @org.junit.jupiter.api.Test
  void eachCatalogGetsTheCutItAllows() throws Exception {
    CutRecords records = records("modes");
    Map<String, String> sqlite = CatalogFixture.sqlite(dir).properties();
    assertThat(CutCommitter.forCatalog(CatalogFixture.sqlite(dir).newCatalog(), sqlite, records, true).mode())
        .isEqualTo("one atomic commit per cut (JDBC catalog jdbc-sqlite)");
    RestCatalogServer server = RestCatalogServer.start(java.nio.file.Files.createDirectories(dir.resolve("rest")),
        RestCatalogServer.MultiTable.ATOMIC);
    servers.add(server);
    CatalogFixture rest = CatalogFixture.rest(server);
    Map<String, String> declared = new java.util.HashMap<>(rest.properties());
    declared.put(CutCommitter.REST_ATOMIC_KEY, "true");
    assertThat(CutCommitter.forCatalog(rest.newCatalog(), declared, records, true).mode())
        .isEqualTo("one atomic commit per cut (REST catalog rest)");
    assertThat(CutCommitter.forCatalog(rest.newCatalog(), rest.properties(), records, false).mode())
        .as("a REST server not declared atomic").startsWith("tables commit one by one");
    assertThatThrownBy(() -> CutCommitter.forCatalog(rest.newCatalog(), rest.properties(), records, true))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(CutCommitter.REST_ATOMIC_KEY);

    CatalogFixture hadoop = CatalogFixture.hadoop(dir);
    assertThatThrownBy(() -> CutCommitter.forCatalog(hadoop.newCatalog(), hadoop.properties(), records, true))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Catalog hadoop (type hadoop)")
        .hasMessageContaining("only JDBC catalogs, and REST catalogs whose server");
    assertThat(CutCommitter.forCatalog(hadoop.newCatalog(), hadoop.properties(), records, false).mode())
        .startsWith("tables commit one by one; each cut is a record published last at ")
        .endsWith("cuts-modes");
  }
}
