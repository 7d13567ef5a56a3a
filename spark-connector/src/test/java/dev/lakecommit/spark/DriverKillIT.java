package dev.lakecommit.spark;

import static dev.lakecommit.spark.SparkTestSupport.icebergIds;
import static dev.lakecommit.spark.SparkTestSupport.range;
import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Spark driver killed with SIGKILL mid-stream and restarted on the same checkpoint location, again and again:
 * the table ends with every input row exactly once, and no staged file outside the table is left behind.
 */
class DriverKillIT {
  @TempDir
  Path dir;

  @Test
  void aDriverKilledMidStreamAndRestartedWritesEveryRowOnce() throws Exception {
    int kills = TestScale.pick(1, 10);
    int files = kills + TestScale.pick(3, 6);
    int rowsPerFile = 200;
    long seed = TestScale.seed();
    Random random = new Random(seed);
    Path input = dir.resolve("input");
    Path checkpoint = dir.resolve("checkpoint");
    Path warehouse = dir.resolve("wh");
    String table = "db.killed";
    Map<String, String> catalog = StreamingTestSupport.catalog(warehouse);
    StreamingTestSupport.writeInput(input, files, rowsPerFile);

    int killed = 0;
    long snapshots = 0;
    for (int run = 0; run < kills; run++) {
      Path log = dir.resolve("driver-" + run + ".log");
      Process driver = start(input, checkpoint, warehouse, table, log);
      long reached = awaitMoreSnapshots(catalog, table, snapshots, driver, log);
      if (!driver.isAlive()) {
        break; // consumed everything before it could be killed
      }
      // Land the kill anywhere in the next micro-batch: staging, committing, or recording the batch.
      Thread.sleep(random.nextInt(1_500));
      driver.destroyForcibly(); // SIGKILL
      assertThat(driver.waitFor(1, TimeUnit.MINUTES)).isTrue();
      killed++;
      snapshots = reached;
    }
    Path log = dir.resolve("driver-final.log");
    Process driver = start(input, checkpoint, warehouse, table, log);
    assertThat(driver.waitFor(5, TimeUnit.MINUTES)).as("final run finished, seed %s", seed).isTrue();
    assertThat(driver.exitValue()).as("final run exit code; log:%n%s", Files.readString(log)).isZero();
    assertThat(Files.readString(log)).contains("DONE");

    System.out.printf("DriverKillIT: %d SIGKILLs of %d planned, %d files of %d rows, seed %d%n", killed, kills,
        files, rowsPerFile, seed);
    assertThat(killed).as("SIGKILLs, seed %s", seed).isGreaterThanOrEqualTo(1);
    Table loaded = SparkTestSupport.load(catalog, table);
    List<Long> ids = icebergIds(loaded);
    assertThat(ids).as("0 duplicates, 0 losses (seed %s)", seed).hasSize(files * rowsPerFile)
        .containsExactlyInAnyOrderElementsOf(range(0, (long) files * rowsPerFile));
    assertThat(stagedOutsideTable(loaded)).as("staged files no snapshot references").isEmpty();
  }

  private Process start(Path input, Path checkpoint, Path warehouse, String table, Path log) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    // The JVM flags Spark needs on Java 17, as this test JVM got them.
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (arg.startsWith("--add-opens") || arg.startsWith("-XX:+IgnoreUnrecognizedVMOptions")
          || arg.startsWith("-Djdk.reflect") || arg.startsWith("-Dio.netty")) {
        command.add(arg);
      }
    }
    command.add("-Xmx768m");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(StreamingDriverMain.class.getName());
    command.add(input.toString());
    command.add(checkpoint.toString());
    command.add(warehouse.toString());
    command.add(table);
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
    builder.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    return builder.start();
  }

  /** Polls (bounded) until the table has more than {@code known} snapshots or the driver exits. */
  private static long awaitMoreSnapshots(Map<String, String> catalog, String table, long known, Process driver,
      Path log) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(8).toNanos();
    while (System.nanoTime() < deadline) {
      long count = snapshotCount(catalog, table);
      if (count > known) {
        return count;
      }
      if (!driver.isAlive()) {
        assertThat(driver.exitValue()).as("driver exit code; log:%n%s", Files.readString(log)).isZero();
        return count;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("No new snapshot within 8 minutes; driver log:\n"
        + Files.readString(log, StandardCharsets.UTF_8) + "\nDriver threads:\n" + threadDump(driver));
  }

  /** The driver's threads, to tell a slow driver from a stuck one. */
  private static String threadDump(Process driver) {
    try {
      Process jstack = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "jstack").toString(),
          Long.toString(driver.pid())).redirectErrorStream(true).start();
      String dump = new String(jstack.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      jstack.waitFor(1, TimeUnit.MINUTES);
      return dump;
    } catch (IOException e) {
      return "(no thread dump: " + e + ")";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "(interrupted)";
    }
  }

  private static long snapshotCount(Map<String, String> catalog, String table) {
    try {
      long n = 0;
      for (Object ignored : SparkTestSupport.load(catalog, table).snapshots()) {
        n++;
      }
      return n;
    } catch (NoSuchTableException e) {
      return 0;
    }
  }

  private static List<String> stagedOutsideTable(Table table) throws IOException {
    Set<String> committed = new HashSet<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(t -> committed.add(Path.of(java.net.URI.create(t.file().location())).toString()));
    }
    Path staging = Path.of(java.net.URI.create(table.location())).resolve("data/lakecommit");
    try (Stream<Path> walk = Files.walk(staging)) {
      return walk.map(Path::toString).filter(p -> p.endsWith(".parquet")).filter(p -> !committed.contains(p))
          .collect(Collectors.toList());
    }
  }
}
