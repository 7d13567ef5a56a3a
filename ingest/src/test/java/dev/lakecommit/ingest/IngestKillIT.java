package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
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
    Random random = new Random(seed);
    int rows = TestScale.pick(200_000, 1_000_000);
    int kills = TestScale.pick(10, 100);
    Path input = writeInput(rows);
    List<String> command = command(input);

    int killed = 0;
    int runs = 0;
    int exit = -1;
    while (exit != 0) {
      runs++;
      assertThat(runs).as("seed %s: the job finishes within the allowed restarts", seed).isLessThan(kills * 3 + 10);
      Path log = dir.resolve("run-" + runs + ".log");
      Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      if (killed < kills) {
        // Kill without warning (SIGKILL: no shutdown hooks, nothing flushed) at a random moment: mostly after
        // this run completed a checkpoint of its own (so every run makes progress), sometimes during start-up.
        boolean early = random.nextInt(5) == 0;
        awaitOutput(process, log, early ? "Ingesting " : " complete: ");
        if (!process.waitFor(random.nextInt(early ? 300 : 500), TimeUnit.MILLISECONDS)) {
          process.destroyForcibly().waitFor();
          killed++;
          continue;
        }
      }
      if (!process.waitFor(10, TimeUnit.MINUTES)) {
        process.destroyForcibly();
      }
      exit = process.exitValue();
      assertThat(exit).as("seed %s, run %s: %s", seed, runs, Files.readString(dir.resolve("run-" + runs + ".log")))
          .isIn(0);
    }

    // The kills hit jobs at different stages: later runs resumed from different checkpoints.
    java.util.Set<String> resumedFrom = new java.util.TreeSet<>();
    for (int run = 1; run <= runs; run++) {
      java.util.regex.Matcher m = java.util.regex.Pattern.compile("Resuming after checkpoint (\\d+)")
          .matcher(Files.readString(dir.resolve("run-" + run + ".log")));
      if (m.find()) {
        resumedFrom.add(m.group(1));
      }
    }
    assertThat(resumedFrom).as("checkpoints resumed from (seed %s)", seed).hasSizeGreaterThanOrEqualTo(2);

    CliRun verify = CliRun.of("verify", "--source", input.toString(), "--table", "load.events",
        "--warehouse", dir.resolve("wh").toString(), "--key", "id", "--json");
    assertThat(killed).as("kills that hit a running process (seed %s)", seed).isGreaterThanOrEqualTo(kills);
    assertThat(verify.exitCode()).as("seed %s: %s", seed, verify).isZero();
    assertThat(verify.out()).contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
  }

  /** Waits until the child printed {@code marker} (it is then past start-up) or ended. */
  private static void awaitOutput(Process process, Path log, String marker) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (!Files.readString(log).contains(marker) && process.isAlive()) {
      assertThat(System.nanoTime()).as("the child started reading within 2 minutes").isLessThan(deadline);
      process.waitFor(20, TimeUnit.MILLISECONDS);
    }
  }

  private List<String> command(Path input) {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    return List.of(java, "-Xmx512m", "-cp", System.getProperty("java.class.path"), Main.class.getName(),
        "ingest", "--input", input.toString(), "--table", "load.events",
        "--warehouse", dir.resolve("wh").toString(), "--job-id", "kill-test",
        "--parallelism", "2", "--checkpoint-every-records", "5000");
  }

  private Path writeInput(int rows) throws IOException {
    Path input = dir.resolve("events.jsonl");
    try (BufferedWriter out = Files.newBufferedWriter(input)) {
      for (int i = 0; i < rows; i++) {
        out.write("{\"id\": " + i + ", \"kind\": \"k" + (i % 7) + "\", \"value\": " + (i * 31 % 1000) + "}\n");
      }
    }
    return input;
  }
}
