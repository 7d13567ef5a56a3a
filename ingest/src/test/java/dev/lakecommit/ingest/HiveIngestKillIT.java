package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
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
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real tool with {@code --target hive} in a child JVM, writing through the test's in-process metastore,
 * killed with SIGKILL at random moments (during start-up, while writing, while committing: moving files, adding
 * partitions, recording the watermark) and started again with the same command until it finishes; then
 * {@code verify} must find 0 duplicates and 0 losses, the partitions' row counts must add up, and no staged file
 * may be left.
 */
class HiveIngestKillIT {
  private static final String TABLE = "load.hive_events";
  private static final String JOB = "hive-kill";

  @TempDir Path dir;

  @Test
  void sigkillAtRandomMomentsLosesAndDuplicatesNothing() throws Exception {
    long seed = TestScale.seed();
    Random random = new Random(seed);
    int rows = TestScale.pick(50_000, 1_000_000);
    int kills = TestScale.pick(5, 100);
    int checkpointEvery = TestScale.pick(5_000, 10_000);
    System.out.printf("HiveIngestKillIT: seed %d, %,d rows, %d kills%n", seed, rows, kills);
    Path input = writeInput(rows);

    try (HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby()) {
      List<String> command = command(input, hms.uri(), checkpointEvery);
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
          // Mostly after this run completed a checkpoint of its own (so every run makes progress, and the kill
          // can land in the commit that follows), sometimes during start-up.
          boolean early = random.nextInt(5) == 0;
          awaitOutput(process, log, early ? "Ingesting " : " complete: ");
          if (!process.waitFor(random.nextInt(early ? 300 : 600), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly().waitFor();
            killed++;
            System.out.printf("HiveIngestKillIT: run %d killed after %d ms%n", runs,
                (System.nanoTime() - begin) / 1_000_000);
            continue;
          }
        }
        if (!process.waitFor(10, TimeUnit.MINUTES)) {
          process.destroyForcibly();
        }
        exit = process.exitValue();
        System.out.printf("HiveIngestKillIT: run %d ended with %d after %d ms%n", runs, exit,
            (System.nanoTime() - begin) / 1_000_000);
        assertThat(exit).as("seed %s, run %s: %s", seed, runs, Files.readString(log)).isZero();
      }
      assertThat(killed).as("kills that hit a running process (seed %s)", seed).isGreaterThanOrEqualTo(kills);
      assertThat(resumedFrom(runs)).as("checkpoints resumed from (seed %s)", seed).hasSizeGreaterThanOrEqualTo(2);

      List<String> hive = List.of("--target", "hive", "--metastore-uri", hms.uri());
      CliRun verify = CliRun.of(concat(List.of("verify", "--source", input.toString(), "--table", TABLE,
          "--key", "id", "--json"), hive));
      assertThat(verify.exitCode()).as("seed %s: %s", seed, verify).isZero();
      assertThat(verify.out()).contains("\"sourceRows\" : " + rows).contains("\"tableRows\" : " + rows)
          .contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");

      // The statistics the sink keeps in the metastore add up to the rows, as exactly as the rows themselves.
      HiveMetaStoreClient client = hms.newClient();
      try {
        List<Partition> partitions = client.listPartitions("load", "hive_events", (short) -1);
        assertThat(partitions.stream().mapToLong(p -> Long.parseLong(p.getParameters().get("numRows"))).sum())
            .as("numRows of all partitions (seed %s)", seed).isEqualTo(rows);
      } finally {
        client.close();
      }

      // Every crashed attempt's staged files are gone: the commits and restarts removed them.
      CliRun cleanup = CliRun.of(concat(List.of("cleanup", "--table", TABLE, "--job-id", JOB,
          "--checkpoint-dir", dir.resolve("checkpoints").toString()), hive));
      assertThat(cleanup.out()).as("seed %s: %s", seed, cleanup).contains("0 orphan staged file(s) of job " + JOB);
    }
  }

  private Set<String> resumedFrom(int runs) throws IOException {
    Set<String> checkpoints = new TreeSet<>();
    for (int run = 1; run <= runs; run++) {
      Matcher m = Pattern.compile("Resuming after checkpoint (\\d+)")
          .matcher(Files.readString(dir.resolve("run-" + run + ".log")));
      if (m.find()) {
        checkpoints.add(m.group(1));
      }
    }
    return checkpoints;
  }

  /** Waits until the child printed {@code marker} or ended. */
  private static void awaitOutput(Process process, Path log, String marker) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (!Files.readString(log).contains(marker) && process.isAlive()) {
      assertThat(System.nanoTime()).as("the child got going within 2 minutes").isLessThan(deadline);
      process.waitFor(20, TimeUnit.MILLISECONDS);
    }
  }

  private List<String> command(Path input, String metastoreUri, int checkpointEvery) {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    // A short-lived child: the C1 compiler and the serial collector start it faster on a busy machine.
    return List.of(java, "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
        "-cp", System.getProperty("java.class.path"), Main.class.getName(),
        "ingest", "--target", "hive", "--metastore-uri", metastoreUri, "--input", input.toString(),
        "--table", TABLE, "--partition-by", "kind", "--job-id", JOB,
        "--checkpoint-dir", dir.resolve("checkpoints").toString(),
        "-C", "warehouse=" + dir.resolve("wh").toUri(),
        "--parallelism", "2", "--checkpoint-every-records", Integer.toString(checkpointEvery));
  }

  private static String[] concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all.toArray(String[]::new);
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
