package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.ChildJvm;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The kill tests' loop: the real tool in a child JVM, killed with SIGKILL at random moments and started again
 * with the same command until it finishes. Each run's output goes to {@code run-N.log} in the test directory.
 */
final class KillLoop {
  private static final Pattern RESUMED = Pattern.compile("Resuming after checkpoint (\\d+)");

  private final Path dir;
  private final String name;
  private final long seed;
  private final Random random;

  /** What the loop saw: runs started, runs killed while running, and the checkpoints later runs resumed from. */
  record Result(int runs, int killed, Set<String> resumedFrom) {}

  KillLoop(Path dir, String name, long seed) {
    this.dir = dir;
    this.name = name;
    this.seed = seed;
    this.random = new Random(seed);
  }

  /** {@link ChildJvm#java} with 512 MB, then {@code <jvmOptions> -cp <test classpath> Main <args>}. */
  static List<String> command(List<String> jvmOptions, List<String> args) {
    List<String> command = ChildJvm.java("512m");
    command.addAll(jvmOptions);
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
    command.addAll(args);
    return command;
  }

  /** {@code rows} JSON lines {@code {"id": i, "kind": "k<i % 7>", "value": ...}} in {@code events.jsonl}. */
  static Path writeInput(Path dir, int rows) throws IOException {
    Path input = dir.resolve("events.jsonl");
    try (BufferedWriter out = Files.newBufferedWriter(input)) {
      for (int i = 0; i < rows; i++) {
        out.write("{\"id\": " + i + ", \"kind\": \"k" + (i % 7) + "\", \"value\": " + (i * 31 % 1000) + "}\n");
      }
    }
    return input;
  }

  /**
   * Runs {@code command} until it exits 0, killing the first {@code kills} runs: mostly within
   * {@code maxDelayMillis} after the run completed a checkpoint of its own (so every run makes progress, and the
   * kill can land in the commit that follows), one in five during start-up, never two of those in a row (so even 5
   * kills resume from at least two checkpoints). Fails if a run that was not killed exits non-zero, or if the job
   * needs too many restarts.
   */
  Result run(List<String> command, int kills, int maxDelayMillis) throws Exception {
    boolean lastEarly = false;
    int killed = 0;
    int runs = 0;
    int exit = -1;
    while (exit != 0) {
      runs++;
      assertThat(runs).as("seed %s: the job finishes within the allowed restarts", seed).isLessThan(kills * 3 + 10);
      Path log = dir.resolve("run-" + runs + ".log");
      long begin = System.nanoTime();
      Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      if (killed < kills) {
        boolean early = random.nextInt(5) == 0 && !lastEarly;
        lastEarly = early;
        awaitOutput(process, log, early ? "Ingesting " : " complete: ");
        if (!process.waitFor(random.nextInt(early ? 300 : maxDelayMillis), TimeUnit.MILLISECONDS)) {
          // SIGKILL: no shutdown hooks, nothing flushed
          process.destroyForcibly().waitFor();
          killed++;
          System.out.printf("%s: run %d killed after %d ms%n", name, runs, (System.nanoTime() - begin) / 1_000_000);
          continue;
        }
      }
      if (!process.waitFor(10, TimeUnit.MINUTES)) {
        process.destroyForcibly();
      }
      exit = process.exitValue();
      System.out.printf("%s: run %d ended with %d after %d ms%n", name, runs, exit,
          (System.nanoTime() - begin) / 1_000_000);
      assertThat(exit).as("seed %s, run %s: %s", seed, runs, Files.readString(log)).isZero();
    }
    return new Result(runs, killed, resumedFrom(runs));
  }

  /**
   * Like {@link #run}, but every round starts two copies of {@code command} at once (the second as the first
   * starts up), as a user who starts the same job twice: the first {@code kills} SIGKILLs land on one or both
   * copies after one of them completed a checkpoint; a copy that is not killed must end with 0, or with 3 saying a
   * newer copy fenced it (or that the job is running twice). Ends after a round in which a copy exited 0.
   */
  Result runRacing(List<String> command, int kills, int maxDelayMillis) throws Exception {
    int killed = 0;
    int runs = 0;
    boolean finished = false;
    while (!finished) {
      assertThat(runs).as("seed %s: the job finishes within the allowed restarts", seed).isLessThan(kills * 6 + 20);
      List<Process> copies = new ArrayList<>();
      List<Path> logs = new ArrayList<>();
      for (int copy = 0; copy < 2; copy++) {
        runs++;
        Path log = dir.resolve("run-" + runs + ".log");
        logs.add(log);
        copies.add(new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start());
        if (copy == 0) {
          awaitOutput(copies.get(0), log, "Ingesting ");
        }
      }
      boolean[] hit = new boolean[2];
      if (killed < kills) {
        // the newer copy usually fences the older one at once: watch and kill the copies still running
        int watched = copies.get(1).isAlive() ? 1 : 0;
        awaitOutput(copies.get(watched), logs.get(watched), " complete: ");
        copies.get(watched).waitFor(random.nextInt(maxDelayMillis), TimeUnit.MILLISECONDS);
        List<Integer> alive = new ArrayList<>();
        for (int copy = 0; copy < 2; copy++) {
          if (copies.get(copy).isAlive()) {
            alive.add(copy);
          }
        }
        // one of the running copies, or all of them
        List<Integer> victims = alive.size() < 2 || random.nextBoolean() ? alive.subList(0, Math.min(1, alive.size()))
            : alive;
        if (alive.size() == 2 && victims.size() == 1 && random.nextBoolean()) {
          victims = alive.subList(1, 2);
        }
        for (int copy : victims) {
          copies.get(copy).destroyForcibly().waitFor();
          hit[copy] = true;
          killed++;
        }
      }
      for (int copy = 0; copy < 2; copy++) {
        Process process = copies.get(copy);
        if (!process.waitFor(10, TimeUnit.MINUTES)) {
          process.destroyForcibly().waitFor();
        }
        if (hit[copy]) {
          continue;
        }
        String out = Files.readString(logs.get(copy));
        if (process.exitValue() == 0) {
          finished = true;
        } else {
          assertThat(process.exitValue()).as("seed %s, %s: %s", seed, logs.get(copy), out).isEqualTo(3);
          assertThat(out).as("seed %s, %s", seed, logs.get(copy)).containsAnyOf("fenced", "running twice");
        }
      }
      System.out.printf("%s: round of runs %d-%d, killed %s%n", name, runs - 1, runs,
          hit[0] && hit[1] ? "both" : hit[0] ? "the first" : hit[1] ? "the second" : "none");
    }
    return new Result(runs, killed, resumedFrom(runs));
  }

  private Set<String> resumedFrom(int runs) throws IOException {
    Set<String> checkpoints = new TreeSet<>();
    for (int run = 1; run <= runs; run++) {
      Matcher m = RESUMED.matcher(Files.readString(dir.resolve("run-" + run + ".log")));
      if (m.find()) {
        checkpoints.add(m.group(1));
      }
    }
    return checkpoints;
  }

  /** Waits until the child printed {@code marker} (it is then past start-up) or ended. */
  static void awaitOutput(Process process, Path log, String marker) throws Exception {
    awaitOutput(process, log, marker, 1);
  }

  /** Waits until the child printed {@code marker} {@code times} times, or ended. A bounded poll, not a sleep. */
  static void awaitOutput(Process process, Path log, String marker, int times) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (count(Files.readString(log), marker) < times && process.isAlive()) {
      assertThat(System.nanoTime()).as("the child got going within 2 minutes").isLessThan(deadline);
      process.waitFor(20, TimeUnit.MILLISECONDS);
    }
  }

  private static int count(String text, String marker) {
    int n = 0;
    for (int at = text.indexOf(marker); at >= 0; at = text.indexOf(marker, at + marker.length())) {
      n++;
    }
    return n;
  }
}
