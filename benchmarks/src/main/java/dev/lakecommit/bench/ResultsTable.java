package dev.lakecommit.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Turns JMH JSON results ({@code -rf json -rff file.json}) into the README's Markdown tables: per benchmark class
 * and parameter combination, each variant's median over all measurement iterations, JMH's score ± error (99.9 %),
 * and the ratio of its median to the median of the class's baseline measured in the same run.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.lakecommit.bench.ResultsTable result.json [more.json ...]
 * </pre>
 */
public final class ResultsTable {
  /**
   * The baseline variants of each benchmark class: ratios are variant ÷ baseline (medians), against the baseline
   * of the same JMH mode (a class may time a scan per operation and a whole job per shot).
   */
  static final Map<String, List<String>> BASELINES =
      Map.of(
          "StagingWriterBenchmark", List.of("bareAppender"),
          "CommitLatencyBenchmark", List.of("bareAppend"),
          "WatermarkLookupBenchmark", List.of("ancestryWalk"),
          "HivePartitionCommitBenchmark", List.of("addPartitionEach"),
          "FlinkSinkBenchmark", List.of("iceberg"),
          "KafkaIngestBenchmark", List.of("file"),
          "MaintenanceBenchmark", List.of("scanOneCommit", "writeUnmaintained"),
          "IngestVsSpark", List.of("spark"),
          "RestartBenchmark", List.of("withoutArchive"));

  private ResultsTable() {}

  /** One measured variant under one parameter combination. */
  record Row(String run, String benchmark, String variant, String mode, String params, double median, double score,
      double error, String unit) {}

  public static void main(String[] args) throws IOException {
    if (args.length == 0) {
      System.err.println("Usage: ResultsTable <jmh-result.json>...");
      System.exit(2);
    }
    List<Row> rows = new ArrayList<>();
    for (String file : args) {
      rows.addAll(read(Path.of(file)));
    }
    System.out.print(render(rows));
  }

  static List<Row> read(Path file) throws IOException {
    List<Row> rows = new ArrayList<>();
    for (Charts.Result result : Charts.read(file)) {
      List<String> params = new ArrayList<>();
      result.params().forEach((name, value) -> params.add(name + "=" + value));
      rows.add(new Row(file.getFileName().toString(), result.benchmark(), result.variant(), result.mode(),
          String.join(", ", params), median(result.primary()), result.score(), result.error(), result.unit()));
    }
    return rows;
  }

  static String render(List<Row> rows) {
    Map<String, Map<String, List<Row>>> byClassAndParams = new LinkedHashMap<>();
    for (Row row : rows) {
      // Ratios only within one run (one JSON file): variants of different runs are not comparable.
      byClassAndParams.computeIfAbsent(row.benchmark() + "` in `" + row.run(), k -> new LinkedHashMap<>())
          .computeIfAbsent(row.params(), k -> new ArrayList<>()).add(row);
    }
    StringBuilder out = new StringBuilder();
    byClassAndParams.forEach((benchmark, groups) -> {
      List<String> baselines = BASELINES.getOrDefault(benchmark.substring(0, benchmark.indexOf('`')), List.of());
      out.append("\n`").append(benchmark).append("` (ratio = median ÷ median of ")
          .append(baselines.isEmpty() ? "–" : "`" + String.join("` or `", baselines) + "` (same mode)")
          .append(", same params, same run)\n\n");
      out.append("| params | variant | median | score ± error (99.9 %) | unit | ratio |\n");
      out.append("|---|---|---|---|---|---|\n");
      groups.forEach((params, group) -> {
        for (Row row : group) {
          Row base = group.stream()
              .filter(r -> baselines.contains(r.variant()) && r.mode().equals(row.mode()))
              .findFirst().orElse(null);
          String ratio = base == null || base.median() == 0 ? "–" : format(row.median() / base.median()) + "×";
          out.append(String.format(Locale.ROOT, "| %s | %s | %s | %s ± %s | %s | %s |%n", params, row.variant(),
              format(row.median()), format(row.score()), format(row.error()), row.unit(), ratio));
        }
      });
      if (groups.size() > 1) {
        out.append(growth(new ArrayList<>(groups.values())));
      }
    });
    return out.toString();
  }

  /** Flatness: each variant's median under the last parameter combination ÷ under the first. */
  private static String growth(List<List<Row>> groups) {
    List<Row> first = groups.get(0);
    List<Row> last = groups.get(groups.size() - 1);
    StringBuilder out = new StringBuilder("\nGrowth from `" + first.get(0).params() + "` to `"
        + last.get(0).params() + "` (median ÷ median):");
    for (Row from : first) {
      last.stream().filter(r -> r.variant().equals(from.variant())).findFirst().ifPresent(to ->
          out.append(" `").append(from.variant()).append("` ").append(format(to.median() / from.median()))
              .append("×;"));
    }
    return out.append("\n").toString();
  }



  static double median(List<Double> samples) {
    double[] sorted = samples.stream().mapToDouble(Double::doubleValue).toArray();
    Arrays.sort(sorted);
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int mid = sorted.length / 2;
    return sorted.length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  }

  private static String format(double value) {
    if (Double.isNaN(value)) {
      return "NaN";
    }
    double abs = Math.abs(value);
    if (abs >= 100) {
      return String.format(Locale.ROOT, "%,.0f", value);
    }
    if (abs >= 1) {
      return String.format(Locale.ROOT, "%.2f", value);
    }
    return String.format(Locale.ROOT, "%.3g", value);
  }
}
