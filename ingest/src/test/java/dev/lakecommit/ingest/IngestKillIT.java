package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real tool in a child JVM, killed with SIGKILL at random moments and started again with the same command,
 * until it finishes; then {@code verify} must find 0 duplicates and 0 losses.
 */
class IngestKillIT {
  @TempDir Path dir;

  @Test
  void sigkillAtRandomMomentsLosesAndDuplicatesNothing() throws Exception {
    long seed = TestScale.seed();
    int rows = TestScale.pick(200_000, 1_000_000);
    int kills = TestScale.pick(6, 100);
    Path input = KillLoop.writeInput(dir, rows);
    List<String> command = KillLoop.command(List.of(), List.of(
        "ingest", "--input", input.toString(), "--table", "load.events",
        "--warehouse", dir.resolve("wh").toString(), "--job-id", "kill-test",
        "--parallelism", "2", "--checkpoint-every-records", "5000",
        // 7 partitions in turn through 3 open files: the writers hold records and write them grouped, so the kills
        // also land while records are held
        "--partition-by", "kind", "--max-open-files", "3",
        // a run lasts at least 5 s (25 s at the long size): the kills land in runs, however fast the tool is
        "--max-records-per-second", "40000"));

    KillLoop.Result result = new KillLoop(dir, "IngestKillIT", seed).run(command, kills, 500);

    assertThat(result.killed()).as("kills that hit a running process (seed %s)", seed).isGreaterThanOrEqualTo(kills);
    String logs = "";
    for (int run = 1; run <= result.runs(); run++) {
      logs += java.nio.file.Files.readString(dir.resolve("run-" + run + ".log"));
    }
    assertThat(logs).as("the writers held records").contains("writes them grouped by partition");
    // The kills hit jobs at different stages: later runs resumed from different checkpoints.
    assertThat(result.resumedFrom()).as("checkpoints resumed from (seed %s)", seed).hasSizeGreaterThanOrEqualTo(2);
    CliRun verify = CliRun.of("verify", "--source", input.toString(), "--table", "load.events",
        "--warehouse", dir.resolve("wh").toString(), "--key", "id", "--json");
    assertThat(verify.exitCode()).as("seed %s: %s", seed, verify).isZero();
    assertThat(verify.out()).contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
  }

  /**
   * The same loop with two copies of the command racing in every round (DESIGN.md rules 10-11): SIGKILLs land on
   * one or both, a surviving copy ends well or stops as fenced, and the table is exact at the end.
   */
  @Test
  void twoCopiesRacingUnderSigkillLoseAndDuplicateNothing() throws Exception {
    long seed = TestScale.seed();
    // A round (two copies starting, then a kill) ingests up to ~200,000 rows: enough rows for
    // more rounds than kills, or the job ends before the last kill (seen: 200,000 rows, 2 of 3 kills).
    int rows = 1_000_000;
    int kills = TestScale.pick(3, 100);
    Path input = KillLoop.writeInput(dir, rows);
    List<String> command = KillLoop.command(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), List.of(
        "ingest", "--input", input.toString(), "--table", "load.events",
        "--warehouse", dir.resolve("wh").toString(), "--job-id", "race-kill-test",
        "--parallelism", "2", "--checkpoint-every-records", "5000",
        // a run lasts at least 5 s (25 s at the long size): the kills land in runs, however fast the tool is
        "--max-records-per-second", "40000"));

    KillLoop.Result result = new KillLoop(dir, "IngestKillIT racing", seed).runRacing(command, kills, 500);

    assertThat(result.killed()).as("kills (seed %s)", seed).isGreaterThanOrEqualTo(kills);
    CliRun verify = CliRun.of("verify", "--source", input.toString(), "--table", "load.events",
        "--warehouse", dir.resolve("wh").toString(), "--key", "id", "--json");
    assertThat(verify.exitCode()).as("seed %s: %s", seed, verify).isZero();
    assertThat(verify.out()).contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
  }
}
