package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
    // 20 checkpoints by default (200 long): each killed run completes one, then goes on for up to 600 ms, which
    // the pace bounds to 6,000 rows (3,000 long): the input outlasts the kills however fast the tool is (seen
    // unpaced: the job ended after 4 of 5 kills).
    int rows = TestScale.pick(100_000, 1_000_000);
    int kills = TestScale.pick(5, 100);
    int checkpointEvery = 5_000;
    int pace = TestScale.pick(10_000, 5_000);
    System.out.printf("HiveIngestKillIT: seed %d, %,d rows, %d kills%n", seed, rows, kills);
    Path input = KillLoop.writeInput(dir, rows);

    try (HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby()) {
      // A short-lived child: the C1 compiler and the serial collector start it faster on a busy machine.
      List<String> command = KillLoop.command(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), List.of(
          "ingest", "--target", "hive", "--metastore-uri", hms.uri(), "--input", input.toString(),
          "--table", TABLE, "--partition-by", "kind", "--job-id", JOB,
          "--checkpoint-dir", dir.resolve("checkpoints").toString(),
          "-C", "warehouse=" + dir.resolve("wh").toUri(),
          "--parallelism", "2", "--checkpoint-every-records", Integer.toString(checkpointEvery),
          "--max-records-per-second", Integer.toString(pace)));
      KillLoop.Result result = new KillLoop(dir, "HiveIngestKillIT", seed).run(command, kills, 600);
      assertThat(result.killed()).as("kills that hit a running process (seed %s)", seed)
          .isGreaterThanOrEqualTo(kills);
      assertThat(result.resumedFrom()).as("checkpoints resumed from (seed %s)", seed)
          .hasSizeGreaterThanOrEqualTo(2);

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

  private static String[] concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all.toArray(String[]::new);
  }
}
