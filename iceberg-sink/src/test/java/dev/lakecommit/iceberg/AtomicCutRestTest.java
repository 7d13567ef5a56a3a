package dev.lakecommit.iceberg;

import static dev.lakecommit.iceberg.CutFixtures.JOB;
import static dev.lakecommit.iceberg.CutFixtures.commit;
import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.testing.SimulatedCrash;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link CutCommitter} on a REST catalog through its multi-table commit, against Iceberg's REST server whose
 * multi-table commit swaps every table's pointer in one database transaction of its JDBC backend, and against one
 * that does not offer the endpoint. A server that fails inside the commit (before its transaction, after k of its
 * swaps, after it committed) answers 500: the client settles by reading every table back, and a replay leaves
 * each checkpoint once in each table, while a reader of the backend's pointers in one query never sees two
 * checkpoints.
 */
class AtomicCutRestTest {

  @TempDir Path dir;
  private RestCatalogServer server;
  private Catalog catalog;
  private final java.util.List<java.io.Closeable> clients = new java.util.ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (java.io.Closeable client : clients) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
  }

  private List<TableIdentifier> start(RestCatalogServer.MultiTable kind, String ns) throws Exception {
    server = RestCatalogServer.start(dir, kind);
    catalog = client();
    return CutFixtures.newTables(catalog, ns);
  }

  private Catalog client() {
    Catalog client = CatalogUtil.buildIcebergCatalog("rest", Map.of("type", "rest", "uri", server.uri()),
        new org.apache.hadoop.conf.Configuration());
    clients.add((java.io.Closeable) client);
    return client;
  }

  private CutCommitter cut() {
    Catalog client = client();
    return new CutCommitter(client, RestMultiTableCommit.of(client, 3));
  }

  /** Each table's checkpoint of the job, from the backend's pointers read in one query. */
  private Map<String, Long> checkpointsAtOnce() throws Exception {
    FileIO io = ((HasTableOperations) catalog.loadTable(TableIdentifier.of("cut", "credits"))).operations().io();
    return CutFixtures.checkpointsAtOnce(server.backendProperties(), null, io);
  }

  private Map<String, Integer> liveFiles(TableIdentifier table) throws Exception {
    return CutFixtures.liveFiles(catalog, table);
  }

  @Test
  void aCheckpointIsOneCutThroughTheMultiTableCommitAndItsReplayAddsNothing() throws Exception {
    List<TableIdentifier> tables = start(RestCatalogServer.MultiTable.ATOMIC, "cut");
    CutCommitter cut = cut();
    long epoch = cut.claim(JOB, "test run", tables).epoch();

    assertThat(commit(cut, 1, epoch, tables)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(commit(cut, 2, epoch, tables)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(commit(cut(), 2, epoch, tables)).as("a replay").isInstanceOf(CommitOutcome.AlreadyCommitted.class);

    assertThat(new HashSet<>(checkpointsAtOnce().values())).containsExactly(2L);
    for (TableIdentifier table : tables) {
      assertThat(liveFiles(table)).as("%s", table).hasSize(2).containsValues(1);
      assertThat(catalog.loadTable(table).snapshots()).as("%s: the claim's mark and two checkpoints", table)
          .hasSize(3);
    }
    assertThat(cut.lastCut(JOB, tables, List.of()).orElseThrow().checkpointId()).isEqualTo(2);
  }

  @Test
  void aServerFailingInsideTheCommitIsSettledByReadingBackAndTheReplayLandsOnce() throws Exception {
    List<TableIdentifier> tables = start(RestCatalogServer.MultiTable.ATOMIC, "cut");
    long epoch = cut().claim(JOB, "run", tables).epoch();
    long checkpoint = 0;
    for (String point : List.of("before-transaction", "after-swap-1", "after-swap-2", "after-commit")) {
      checkpoint++;
      server.backendHook(new JdbcMultiTableCommit.SwapHook() {
        @Override
        public void beforeSwap(int attempt) {
          crashIf(point.equals("before-transaction"), point);
        }

        @Override
        public void swapped(TableIdentifier table, int swapped) {
          crashIf(point.equals("after-swap-" + swapped), point);
        }

        @Override
        public void committed(int attempt) {
          crashIf(point.equals("after-commit"), point);
        }
      });
      CommitOutcome outcome = commit(cut(), checkpoint, epoch, tables);
      server.backendHook(JdbcMultiTableCommit.SwapHook.NONE);

      Set<Long> seen = new HashSet<>(checkpointsAtOnce().values());
      assertThat(seen).as("%s: one checkpoint in all tables", point).hasSize(1);
      if (point.equals("after-commit")) {
        assertThat(outcome).as(point).isInstanceOf(CommitOutcome.Committed.class);
        assertThat(seen).containsExactly(checkpoint);
      } else {
        assertThat(outcome).as(point).isInstanceOf(CommitOutcome.Retryable.class);
        assertThat(seen).containsExactly(checkpoint - 1);
      }
      CommitOutcome replay = commit(cut(), checkpoint, epoch, tables);
      assertThat(replay).as(point).isInstanceOf(point.equals("after-commit")
          ? CommitOutcome.AlreadyCommitted.class : CommitOutcome.Committed.class);
      assertThat(new HashSet<>(checkpointsAtOnce().values())).as(point).containsExactly(checkpoint);
      for (TableIdentifier table : tables) {
        assertThat(liveFiles(table)).as("%s %s: each checkpoint's file once", point, table)
            .hasSize((int) checkpoint).containsValues(1);
      }
    }
  }

  private static void crashIf(boolean now, String point) {
    if (now) {
      throw new SimulatedCrash("rest-server-" + point, 1);
    }
  }

  @Test
  void aRunFencedInOneTableCommitsToNone() throws Exception {
    List<TableIdentifier> tables = start(RestCatalogServer.MultiTable.ATOMIC, "cut");
    CutCommitter old = cut();
    long oldEpoch = old.claim(JOB, "old run", tables).epoch();
    commit(old, 1, oldEpoch, tables);
    cut().claim(JOB, "newer run", List.of(tables.get(2)));

    CommitOutcome refused = commit(old, 2, oldEpoch, tables);

    assertThat(refused).isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(((CommitOutcome.Fatal) refused).cause()).isInstanceOf(FencedException.class)
        .hasMessageContaining("newer run");
    assertThat(new HashSet<>(checkpointsAtOnce().values())).containsExactly(1L);
  }

  @Test
  void aServerWithoutTheMultiTableCommitIsRefusedWithNothingVisible() throws Exception {
    List<TableIdentifier> tables = start(RestCatalogServer.MultiTable.ABSENT, "cut");

    CommitOutcome refused = commit(cut(), 1, 0, tables);

    assertThat(refused).isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(((CommitOutcome.Fatal) refused).cause()).hasMessageContaining("does not commit several tables at once")
        .hasMessageContaining("REST catalog rest");
    assertThat(new HashSet<>(checkpointsAtOnce().values())).containsExactly(0L);
    for (TableIdentifier table : tables) {
      assertThat(liveFiles(table)).as("%s", table).isEmpty();
    }
  }
}
