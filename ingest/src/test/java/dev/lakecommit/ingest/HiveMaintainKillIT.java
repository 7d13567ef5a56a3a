package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code lakecommit maintain --target hive --compact} in a child JVM, killed with SIGKILL at random moments of its
 * merge round (writing merged files, switching partitions, deleting what an earlier round replaced): after every
 * kill {@code verify} finds every row once, and runs to the end leave only the partitions' current directories.
 */
class HiveMaintainKillIT {
  private static final String TABLE = "load.small_files";

  @TempDir Path dir;

  @Test
  void sigkillDuringMergeRoundsLosesAndDuplicatesNothing() throws Exception {
    long seed = TestScale.seed();
    Random random = new Random(seed);
    int rows = TestScale.pick(20_000, 200_000);
    int kills = TestScale.pick(2, 30);
    Path input = KillLoop.writeInput(dir, rows);
    try (HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby()) {
      List<String> hive = List.of("--target", "hive", "--metastore-uri", hms.uri());
      CliRun ingest = CliRun.of(concat(List.of("ingest", "--input", input.toString(), "--table", TABLE,
          "--partition-by", "kind", "--job-id", "small", "--checkpoint-dir", dir.resolve("checkpoints").toString(),
          "-C", "warehouse=" + dir.resolve("wh").toUri(), "--checkpoint-every-records",
          Integer.toString(rows / 40)), hive));
      assertThat(ingest.exitCode()).as(ingest.toString()).isZero();

      List<String> command = KillLoop.command(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"),
          List.of(concat(List.of("maintain", "--table", TABLE, "--compact", "--keep-checkpoints", "0", "--min-age",
              "0s", "--target-file-size", "200k"), hive)));
      int killed = 0;
      for (int run = 1; killed < kills; run++) {
        assertThat(run).as("seed %s: runs", seed).isLessThan(kills * 3 + 5);
        Path log = dir.resolve("maintain-" + run + ".log");
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        KillLoop.awaitOutput(process, log, "Maintaining Hive table");
        if (!process.waitFor(random.nextInt(1500), TimeUnit.MILLISECONDS)) {
          process.destroyForcibly().waitFor();
          killed++;
        } else {
          assertThat(process.exitValue()).as("seed %s: %s", seed, Files.readString(log)).isZero();
        }
        assertExact(hive, input, rows, seed);
      }
      for (int last = 0; last < 2; last++) {
        CliRun maintain = CliRun.of(concat(List.of("maintain", "--table", TABLE, "--compact", "--keep-checkpoints",
            "0", "--min-age", "0s", "--target-file-size", "200k"), hive));
        assertThat(maintain.exitCode()).as(maintain.toString()).isZero();
      }
      assertExact(hive, input, rows, seed);
      // Only each partition's current directory is left under its .lakecommit-merge/.
      try (var dirs = Files.find(dir.resolve("wh"), 6, (path, attrs) -> attrs.isDirectory()
          && path.getParent().getFileName().toString().equals(".lakecommit-merge"))) {
        assertThat(dirs.count()).as("seed %s", seed).isEqualTo(7);
      }
    }
  }

  private void assertExact(List<String> hive, Path input, int rows, long seed) {
    CliRun verify = CliRun.of(concat(List.of("verify", "--source", input.toString(), "--table", TABLE, "--key", "id",
        "--json"), hive));
    assertThat(verify.exitCode()).as("seed %s: %s", seed, verify).isZero();
    assertThat(verify.out()).contains("\"tableRows\" : " + rows).contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");
  }

  private static String[] concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all.toArray(String[]::new);
  }
}
