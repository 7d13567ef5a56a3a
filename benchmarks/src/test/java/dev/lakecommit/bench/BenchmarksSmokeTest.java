package dev.lakecommit.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.BenchmarkList;
import org.openjdk.jmh.runner.BenchmarkListEntry;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * Keeps the suite from rotting: runs every benchmark of the module in-process (no fork), one short warm-up and
 * one short measurement iteration, at tiny sizes, over the other {@code @Param} combinations, and checks that
 * each produced a positive score. Not a measurement.
 */
class BenchmarksSmokeTest {
  /** Tiny sizes for the {@code @Param}s that scale a benchmark; a benchmark without such a param ignores them. */
  private static final String[][] TINY_PARAMS = {
    // Also the Flink end-to-end benchmark: 1,000 rows per job, two jobs per sink (about 15-25 s in all,
    // most of it starting the MiniCluster).
    {"rows", "1000"},
    // ... at parallelism 2 only (4 runs the same code), partitioned and not.
    {"parallelism", "2"},
    {"snapshots", "10"},
    {"files", "100"},
    {"partitions", "10"},
    // Two writers: both the writer and the commit benchmarks then run their multi-writer code paths, once each.
    {"writers", "2"},
    // MaintenanceBenchmark: 20 checkpoints with a round after every 5 (a few seconds per table).
    {"checkpoints", "20"},
    {"maintainEvery", "5"},
    // KafkaIngestBenchmark.latency: 500 messages at 1,000/s into the tool in a child JVM (about 10 s per run).
    {"liveRows", "500"},
    {"rate", "1000"},
    // RestartBenchmark: 1,000 messages behind at each restart of the tool (a child JVM, about 4 s per restart).
    {"backlog", "1000"},
    // PipelinedCommitBenchmark: 1 s of reading at 4 checkpoints per second, per variant.
    {"jobSeconds", "1"},
    {"checkpointMillis", "250"},
    // CutCommitBenchmark and FlinkMultiTableBenchmark: 4 tables (their code paths do not change with the count).
    {"tables", "4"},
    // One value where the others run the same code with other settings: the bucketed table (the unpartitioned one
    // only drops the partition spec), zstd (snappy is a codec name), a commit that takes time (0 ms skips a sleep).
    {"partitioning", "bucket"},
    {"codec", "zstd"},
    {"commitDelayMillis", "500"},
  };

  private static final String NOT_IN_ONE_JVM = "dev\\.lakecommit\\.bench\\.HiveS3CommitBenchmark\\..*";

  @Test
  void everyBenchmarkRunsAndScores() throws Exception {
    // Not a measurement: a benchmark run elsewhere on the machine (JMH's /tmp/jmh.lock) must not fail the build.
    System.setProperty("jmh.ignoreLock", "true");
    OptionsBuilder builder = new OptionsBuilder();
    builder.include("dev\\.lakecommit\\.bench\\..*")
        // Not in one JVM with the others: it starts a metastore of its own while HivePartitionCommitBenchmark's
        // still runs (Hive 2.3 allows one per JVM), and its default size stages 1.6 GB. JMH runs it forked.
        .exclude(NOT_IN_ONE_JVM)
        .forks(0)
        .warmupIterations(1)
        .warmupTime(TimeValue.milliseconds(100))
        .measurementIterations(1)
        .measurementTime(TimeValue.milliseconds(100))
        // The first iteration of a benchmark also runs its trial setup (staging files, starting the metastore).
        .timeout(TimeValue.minutes(5))
        .shouldFailOnError(true)
        .verbosity(VerboseMode.NORMAL);
    for (String[] param : TINY_PARAMS) {
      builder.param(param[0], param[1]);
    }
    Options options = builder.build();

    long start = System.nanoTime();
    List<RunResult> results = List.copyOf(new Runner(options).run());
    long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);

    Set<String> expected = declaredBenchmarks();
    expected.removeIf(name -> name.matches(NOT_IN_ONE_JVM));
    Set<String> ran =
        results.stream().map(r -> r.getParams().getBenchmark()).collect(Collectors.toCollection(TreeSet::new));
    assertThat(expected).as("benchmarks declared in META-INF/BenchmarkList").isNotEmpty();
    assertThat(ran).as("benchmarks that produced results").isEqualTo(expected);
    for (RunResult result : results) {
      assertThat(result.getPrimaryResult().getScore())
          .as("score of %s %s", result.getParams().getBenchmark(), result.getParams().id())
          .isPositive();
    }
    // Printed, not asserted: a wall-time bound fails on a busy machine (the sizes above keep this a smoke run).
    System.out.printf("BenchmarksSmokeTest: %d benchmark runs in %d s%n", results.size(), seconds);
  }

  private static Set<String> declaredBenchmarks() throws Exception {
    try (InputStream in = BenchmarksSmokeTest.class.getResourceAsStream(BenchmarkList.BENCHMARK_LIST)) {
      assertThat(in).as("generated benchmark list (is the JMH annotation processor running?)").isNotNull();
      return BenchmarkList.readBenchmarkList(in).stream()
          .map(BenchmarkListEntry::getUsername)
          .collect(Collectors.toCollection(TreeSet::new));
    }
  }
}
