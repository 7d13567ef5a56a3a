package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.runtime.CrashHarness;
import dev.lakecommit.core.runtime.RestoreBehindPolicy;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.CrashingSink;
import dev.lakecommit.core.testing.TestScale;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.iceberg.Table;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Upserts through the crash matrix of the standalone runtime: after every crash point and random crash schedules,
 * the table holds each key once with its latest value, and each checkpoint was committed once. One writer (the
 * harness routes round robin; key routing over several writers is covered by {@link UpsertSinkTest}).
 */
class UpsertCrashMatrixTest {
  private static final int KEYS = 24;
  private static final long UPDATES = 96;
  /** 96 updates of 24 keys, a checkpoint every 24: 4 checkpoints, each updating every key. */
  private static final CrashHarness.Config CONFIG =
      new CrashHarness.Config(KEYS, 1, 24, 40, false, false, RestoreBehindPolicy.FAIL);

  @TempDir Path dir;
  private final List<AutoCloseable> servers = new ArrayList<>();

  @AfterEach
  void stopServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  static Stream<String> points() {
    return CrashSchedule.ALL_POINTS.stream();
  }

  private record Run(CrashHarness.Outcome outcome, Map<Long, List<String>> rows, List<Long> checkpoints) {}

  private Run run(Path base, CrashSchedule schedule, boolean check) throws IOException {
    CatalogFixture fixture = CatalogFixture.named("hadoop", base, servers);
    IcebergSinkConfig config = UpsertTables.config(fixture).build();
    CrashHarness.Outcome outcome = CrashHarness.run(base.resolve("checkpoints"), CONFIG, schedule,
        crashes -> new CrashingSink<>(IcebergSink.forRecords(config).idempotencyCheck(check), crashes),
        UpsertTables.updates(UPDATES, KEYS),
        () -> IcebergCrashMatrixTest.keys(fixture.newCatalog().loadTable(TestTables.IDENT)));
    Table table = fixture.newCatalog().loadTable(TestTables.IDENT);
    return new Run(outcome, UpsertTables.rows(table), UpsertTables.committedCheckpoints(table, "crash-job"));
  }

  private static void assertExact(Run run, String context) {
    assertThat(run.outcome().failure()).as(context).isNull();
    assertThat(run.outcome().audit().exact()).as(context + ": " + run.outcome().audit()).isTrue();
    assertThat(UpsertTables.single(run.rows())).as(context).isEqualTo(UpsertTables.latest(UPDATES, KEYS));
    assertThat(run.checkpoints()).as(context + ": each checkpoint once, in order").isSorted()
        .doesNotHaveDuplicates().isNotEmpty();
  }

  @ParameterizedTest(name = "crash at {0}")
  @MethodSource("points")
  void everyCrashPointEndsWithEachKeyOnceAtItsLatestValue(String point) throws IOException {
    int occurrence = point.equals(CrashSchedule.WRITE) ? 40 : 2;

    Run run = run(dir, CrashSchedule.at(point, occurrence), true);

    assertThat(run.outcome().crashes()).isEqualTo(1);
    assertExact(run, point + "#" + occurrence);
  }

  @Test
  void randomCrashSchedulesEndWithEachKeyOnceAtItsLatestValue() throws IOException {
    long seed = TestScale.seed();
    Random random = new Random(seed);
    int schedules = TestScale.pick(2, 60);
    for (int i = 0; i < schedules; i++) {
      CrashSchedule schedule = CrashSchedule.random(random, (int) UPDATES, 4);
      Path base = Files.createDirectory(dir.resolve("schedule-" + i));
      assertExact(run(base, schedule, true),
          "seed " + seed + " (-Dlakecommit.seed=" + seed + "), schedule " + i + " " + schedule);
    }
  }

  @Test
  void withoutTheIdempotencyCheckARestoreCommitsACheckpointTwice() throws IOException {
    Run run = run(dir, CrashSchedule.at(CrashSchedule.COMMIT_APPLIED, 2), false);

    assertThat(run.outcome().crashes()).isEqualTo(1);
    // The replayed row delta lands again (its equality deletes then hide the first copy's rows, so the rows
    // themselves survive a replay right after the original): the commit history shows it.
    assertThat(run.checkpoints()).as("checkpoint 2 committed twice").containsSubsequence(2L, 2L);
  }
}
