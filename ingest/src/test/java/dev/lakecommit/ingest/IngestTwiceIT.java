package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * The same {@code lakecommit ingest} command started two or three times at once, as real child JVMs, the way a
 * user starts a second copy by mistake (DESIGN.md rules 10-11): every copy ends well, or stops saying that a newer
 * copy fenced it; a final run and {@code verify} find every row once, and every file the table references exists
 * (verify reads them all).
 */
class IngestTwiceIT {
  private static final List<String> FAST_START = List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");

  @TempDir Path dir;

  /**
   * On the embedded default catalog, and on a Hadoop catalog on the local file system, where every epoch claim and
   * commit is a rename that only the commit lock across processes keeps from replacing another process's.
   */
  @ParameterizedTest(name = "hadoop catalog: {0}")
  @ValueSource(booleans = {false, true})
  void copiesOfOneCommandStartedTogetherNeverLoseOrDuplicateARow(boolean hadoop) throws Exception {
    long seed = TestScale.seed();
    Random random = new Random(seed);
    // 2 trials (more, up to 4, until a copy was fenced), 100 or 500 with -Plong
    int trials = TestScale.pick(2, hadoop ? 100 : 500);
    int rows = 6_000;
    Path input = KillLoop.writeInput(dir, rows);
    int fenced = 0;
    int refused = 0;
    int trial = 0;
    for (; trial < trials || (fenced == 0 && trial < Math.max(trials, 4)); trial++) {
      Path warehouse = dir.resolve("wh-" + trial);
      List<String> catalog = hadoop
          ? List.of("--table", "load.events", "-C", "type=hadoop", "-C", "warehouse=" + warehouse.toUri())
          : List.of("--table", "load.events", "--warehouse", warehouse.toString());
      List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString(), "--parallelism", "2",
          "--checkpoint-every-records", "300",
          // every copy runs for at least 10 s, so the next copies start while it runs, however fast the tool is
          // (at 4 s, a copy whose JVM took long to start sometimes found the previous one done: nothing fenced)
          "--max-records-per-second", "600"));
      args.addAll(catalog);
      if (hadoop) { // the embedded catalog keeps the tool's state in its warehouse; others need a place for it
        args.addAll(List.of("--checkpoint-dir", dir.resolve("checkpoints-" + trial).toString()));
      }
      List<String> command = KillLoop.command(FAST_START, args);
      int copies = 2 + random.nextInt(2);
      List<Process> processes = new ArrayList<>();
      List<Path> logs = new ArrayList<>();
      for (int copy = 0; copy < copies; copy++) {
        if (copy > 0) {
          // the next copy starts as the previous one starts up, or after it completed 1-3 checkpoints
          int checkpoints = random.nextInt(4);
          KillLoop.awaitOutput(processes.get(copy - 1), logs.get(copy - 1),
              checkpoints == 0 ? "Ingesting " : " complete: ", Math.max(1, checkpoints));
        }
        Path log = dir.resolve("trial-" + trial + "-copy-" + copy + ".log");
        logs.add(log);
        processes.add(new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start());
      }
      String context = "seed " + seed + " (-Dlakecommit.seed=" + seed + "), trial " + trial;
      for (int copy = 0; copy < copies; copy++) {
        Process process = processes.get(copy);
        if (!process.waitFor(5, TimeUnit.MINUTES)) {
          process.destroyForcibly().waitFor();
        }
        String out = Files.readString(logs.get(copy));
        if (process.exitValue() != 0) {
          assertThat(process.exitValue()).as(context + ", copy " + copy + ": " + out).isEqualTo(3);
          assertThat(out).as(context + ", copy " + copy).containsAnyOf("fenced", "running twice");
          fenced += out.contains("fenced") ? 1 : 0;
          refused += out.contains("running twice") ? 1 : 0;
        }
      }
      CliRun last = CliRun.of(args.toArray(String[]::new));
      assertThat(last.exitCode()).as(context + ": " + last).isZero();
      List<String> verifyArgs = new ArrayList<>(List.of("verify", "--source", input.toString(), "--key", "id",
          "--json"));
      verifyArgs.addAll(catalog);
      CliRun verify = CliRun.of(verifyArgs.toArray(String[]::new));
      assertThat(verify.exitCode()).as(context + ": " + verify).isZero();
      assertThat(verify.out()).contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
    }
    System.out.printf("IngestTwiceIT (hadoop catalog: %s): %d trials, %d copies fenced, %d refused at start (seed %d)%n",
        hadoop, trial, fenced, refused, seed);
    assertThat(fenced).as("copies fenced by a newer copy (seed %s)", seed).isPositive();
  }
}
