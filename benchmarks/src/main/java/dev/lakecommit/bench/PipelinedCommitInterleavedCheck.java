package dev.lakecommit.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * A cross-check of {@link PipelinedCommitBenchmark} for a noisy machine: its four variants (fast or delayed
 * catalog, synchronous or pipelined commits) <b>interleaved</b> in one JVM, in a new random order every round, so
 * that load changes hit all alike; JMH runs one variant's iterations after the other's. Prints the median rows/s of
 * each and the ratios against the fast catalog, synchronous and pipelined.
 *
 * <pre>
 * java -cp "$CP" dev.lakecommit.bench.PipelinedCommitInterleavedCheck 5 20   # measured rounds, seconds per job
 * </pre>
 */
public final class PipelinedCommitInterleavedCheck {
  private PipelinedCommitInterleavedCheck() {}

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 20;
    int delay = args.length > 2 ? Integer.parseInt(args[2]) : 500;
    Map<String, int[]> variants = new LinkedHashMap<>();
    variants.put("fast, sync", new int[] {0, 0});
    variants.put("fast, pipelined K=2", new int[] {0, 2});
    variants.put(delay + " ms, sync", new int[] {delay, 0});
    variants.put(delay + " ms, pipelined K=2", new int[] {delay, 2});
    Map<String, List<Double>> rowsPerSecond = new LinkedHashMap<>();
    variants.keySet().forEach(name -> rowsPerSecond.put(name, new ArrayList<>()));
    PipelinedCommitBenchmark bench = new PipelinedCommitBenchmark();
    bench.jobSeconds = seconds;
    bench.checkpointMillis = 1000;
    bench.writers = 2;
    bench.setUp();
    Random order = new Random(BenchRecords.SEED);
    try {
      for (int round = 0; round <= rounds; round++) {
        List<String> names = new ArrayList<>(variants.keySet());
        Collections.shuffle(names, order);
        for (String name : names) {
          bench.commitDelayMillis = variants.get(name)[0];
          bench.maxUncommitted = variants.get(name)[1];
          PipelinedCommitBenchmark.Throughput throughput = new PipelinedCommitBenchmark.Throughput();
          bench.job(throughput);
          // Round 0 warms up the JVM for every variant; it is not counted.
          if (round > 0) {
            rowsPerSecond.get(name).add(throughput.rowsPerSecond);
          }
          System.out.printf(Locale.ROOT, "round %d %-24s %,10.0f rows/s, %.0f checkpoints%n", round, name,
              throughput.rowsPerSecond, throughput.checkpoints);
        }
      }
    } finally {
      bench.tearDown();
    }
    List<String> names = new ArrayList<>(variants.keySet());
    double fastSync = median(rowsPerSecond.get(names.get(0)));
    double fastPipelined = median(rowsPerSecond.get(names.get(1)));
    System.out.printf(Locale.ROOT, "%n%-24s %14s %16s %21s%n", "variant", "median rows/s", "÷ fast, sync",
        "÷ fast, pipelined");
    for (String name : names) {
      double median = median(rowsPerSecond.get(name));
      System.out.printf(Locale.ROOT, "%-24s %,14.0f %15.2fx %20.2fx   (all: %s)%n", name, median,
          median / fastSync, median / fastPipelined, rowsPerSecond.get(name).stream()
              .map(v -> String.format(Locale.ROOT, "%,.0f", v)).toList());
    }
  }

  private static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }
}
