package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.testing.TestScale;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.iceberg.Table;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Two committer processes race on the same checkpoint of a table in a JDBC (PostgreSQL) or Hive catalog: a
 * zombie and its replacement. Exactly one snapshot lands, and a conflict is observed in every race.
 */
class TwoProcessRaceIT {
  @TempDir Path dir;
  private final List<AutoCloseable> servers = new ArrayList<>();

  static Stream<String> catalogs() {
    return CatalogFixture.SERVER_NAMES.stream();
  }

  @AfterEach
  void stopServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void twoProcessesCommittingOneCheckpointMakeOneSnapshot(String name) throws Exception {
    int races = TestScale.pick(2, 30);
    for (int race = 0; race < races; race++) {
      Path base = Files.createDirectory(dir.resolve("race-" + race));
      CatalogFixture fixture = CatalogFixture.named(name, base, servers);
      Table table = TestTables.create(fixture.newCatalog());
      Path barrier = Files.createDirectory(base.resolve("barrier"));
      Process child = startChild(fixture, base, barrier);

      CommitCounters counters = new CommitCounters();
      TableCommitter committer = new TableCommitter(fixture.newCatalog(), TestTables.IDENT, CommitMode.APPEND, null,
          null, counters).attemptHook(attempt -> {
            if (attempt == 1) {
              RaceCommitterMain.awaitFile(barrier.resolve("child-ready"));
              try {
                Files.createFile(barrier.resolve("go"));
              } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
            }
          });
      CommitOutcome mine = committer.commit(TestTables.changes(1, List.of(TestTables.dataFile(table, 0, 40))));

      assertThat(child.waitFor(2, TimeUnit.MINUTES)).isTrue();
      String output = new String(child.getInputStream().readAllBytes());
      assertThat(child.exitValue()).as(output).isZero();
      String theirs = output.lines().filter(l -> l.startsWith("OUTCOME ")).findFirst().orElseThrow();
      long theirConflicts = Long.parseLong(theirs.substring(theirs.lastIndexOf(' ') + 1));
      List<String> outcomes = List.of(mine.getClass().getSimpleName(), theirs.split(" ")[1]);

      assertThat(outcomes).as("race %s", race).containsExactlyInAnyOrder("Committed", "AlreadyCommitted");
      assertThat(counters.conflicts() + theirConflicts).as("race %s: a conflict was observed", race).isPositive();
      assertThat(TestTables.committedCheckpoints(table)).containsExactly(1L);
      assertThat(TestTables.keyCounts(table)).hasSize(40).allSatisfy((k, n) -> assertThat(n).isOne());
    }
  }

  private Process startChild(CatalogFixture fixture, Path base, Path barrier) throws Exception {
    return RaceCommitterMain.startJava(RaceCommitterMain.class, RaceCommitterMain.writeCatalog(fixture, base)
        .toString(), "1", "0", "40", barrier.toString());
  }
}
