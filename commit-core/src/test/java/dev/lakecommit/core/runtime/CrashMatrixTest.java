package dev.lakecommit.core.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.TestScale;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The crash-point matrix: the job dies at each point of the protocol, restarts from what was persisted, and the
 * table ends with exactly the source rows. And the same matrix fails when exactly-once is switched off. Each runs
 * with synchronous commits (0 uncommitted checkpoints) and pipelined ones: the matrix with up to 2 checkpoints
 * waiting for their commits, the switched-off runs with 1 (which keeps which crash points replay a commit the same
 * as synchronous commits: a checkpoint starts only after the previous one's commit completed).
 */
class CrashMatrixTest {
  @TempDir Path dir;

  static Stream<Arguments> crashPoints() {
    List<Arguments> cases = new ArrayList<>();
    for (int uncommitted : new int[] {0, 2}) {
      for (String point : CrashSchedule.ALL_POINTS) {
        int[] occurrences = point.equals(CrashSchedule.WRITE) ? new int[] {1, 250, 599} : new int[] {1, 4, 11};
        for (int occurrence : occurrences) {
          cases.add(Arguments.of(point, occurrence, uncommitted));
        }
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "crash at {0} #{1}, {2} uncommitted")
  @MethodSource("crashPoints")
  void crashAtEveryPointLosesAndDuplicatesNothing(String point, int occurrence, int uncommitted) throws Exception {
    CrashHarness.Outcome outcome = CrashHarness.run(
        dir, CrashHarness.Config.small().withMaxUncommitted(uncommitted), CrashSchedule.at(point, occurrence));

    assertThat(outcome.crashes()).as("the crash point was reached").isEqualTo(1);
    assertThat(outcome.failure()).isNull();
    assertThat(outcome.audit().exact()).as(outcome.audit().toString()).isTrue();
    assertThat(outcome.completed()).singleElement().satisfies(result ->
        assertThat(result.recordCount()).isEqualTo(600));
  }

  @ParameterizedTest(name = "{0} uncommitted")
  @ValueSource(ints = {0, 2})
  void randomCrashSchedulesLoseAndDuplicateNothing(int uncommitted) throws Exception {
    long seed = TestScale.seed();
    // Pipelined: half as many in the default build (each costs the same), all of them in the long profile.
    int schedules = TestScale.pick(uncommitted == 0 ? 60 : 30, 600);
    Random random = new Random(seed);
    CrashHarness.Config config = CrashHarness.Config.small().withMaxUncommitted(uncommitted);
    int crashes = 0;
    for (int i = 0; i < schedules; i++) {
      CrashSchedule schedule =
          CrashSchedule.random(random, config.writesPerLife(), config.checkpointsPerLife());
      Path run = Files.createDirectory(dir.resolve("schedule-" + i));
      CrashHarness.Outcome outcome = CrashHarness.run(run, config, schedule);
      String context = "seed " + seed + " (-Dlakecommit.seed=" + seed + "), schedule " + i + " " + schedule;
      assertThat(outcome.failure()).as(context).isNull();
      assertThat(outcome.audit().exact()).as(context + ": " + outcome.audit()).isTrue();
      crashes += outcome.crashes();
    }
    assertThat(crashes).as("crashes actually happened (seed %s)", seed).isGreaterThanOrEqualTo(schedules);
  }

  @ParameterizedTest(name = "no idempotency check, crash at {0}, {1} uncommitted")
  @MethodSource("replayPoints")
  void withoutTheIdempotencyCheckAReplayDuplicatesRows(String point, int uncommitted) throws Exception {
    CrashHarness.Outcome outcome = CrashHarness.run(dir,
        CrashHarness.Config.small().withSkipIdempotencyCheck().withMaxUncommitted(uncommitted),
        CrashSchedule.at(point, 2));

    assertThat(outcome.crashes()).isEqualTo(1);
    assertThat(outcome.audit().duplicateKeys()).as(outcome.audit().toString()).isPositive();
  }

  static Stream<Arguments> replayPoints() {
    return Stream.of(0, 1).flatMap(uncommitted -> Stream.of(
        CrashSchedule.PREPARED, CrashSchedule.COMMIT_APPLIED, CrashSchedule.COMPLETE)
        .map(point -> Arguments.of(point, uncommitted)));
  }

  @ParameterizedTest(name = "{0} uncommitted")
  @ValueSource(ints = {0, 1})
  void theSwitchedOffMatrixReportsViolations(int uncommitted) throws Exception {
    List<String> violated = new ArrayList<>();
    for (String point : CrashSchedule.ALL_POINTS) {
      Path run = Files.createDirectory(dir.resolve(point));
      CrashHarness.Outcome outcome = CrashHarness.run(run,
          CrashHarness.Config.small().withSkipIdempotencyCheck().withMaxUncommitted(uncommitted),
          CrashSchedule.at(point, 3));
      assertThat(outcome.crashes()).as(point).isEqualTo(1);
      if (!outcome.exact()) {
        violated.add(point);
      }
    }
    // Every restore from a checkpoint re-commits what it held as pending: without the check, that doubles rows.
    // A crash in the first checkpoint (write #3, prepare #3) restores nothing, and a crash right after persisting
    // re-commits a checkpoint that was never committed.
    assertThat(violated).containsExactly(
        CrashSchedule.PREPARED, CrashSchedule.COMMIT_APPLIED, CrashSchedule.COMPLETE);
  }

  @ParameterizedTest(name = "{0} uncommitted")
  @ValueSource(ints = {0, 1})
  void committingBeforePersistingDuplicatesRows(int uncommitted) throws Exception {
    CrashHarness.Outcome outcome = CrashHarness.run(
        dir,
        CrashHarness.Config.small().withCommitBeforePersist(RestoreBehindPolicy.CONTINUE)
            .withMaxUncommitted(uncommitted),
        CrashSchedule.at(CrashSchedule.COMMIT_APPLIED, 3));

    assertThat(outcome.crashes()).isEqualTo(1);
    assertThat(outcome.audit().duplicateKeys()).as(outcome.audit().toString()).isPositive();
  }

  @ParameterizedTest(name = "{0} uncommitted")
  @ValueSource(ints = {0, 1})
  void committingBeforePersistingIsCaughtOnRestoreByDefault(int uncommitted) throws Exception {
    CrashHarness.Outcome outcome = CrashHarness.run(
        dir,
        CrashHarness.Config.small().withCommitBeforePersist(RestoreBehindPolicy.FAIL).withMaxUncommitted(uncommitted),
        CrashSchedule.at(CrashSchedule.COMMIT_APPLIED, 3));

    assertThat(outcome.failure())
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining("already holds checkpoint 3 of job crash-job")
        .hasMessageContaining("(2)");
  }
}
