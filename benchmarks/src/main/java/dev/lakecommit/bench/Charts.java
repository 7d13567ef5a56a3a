package dev.lakecommit.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.text.DecimalFormatSymbols;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.labels.StandardCategoryItemLabelGenerator;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * Draws the charts of {@code benchmarks/README.md} (PNG) from JMH's JSON results ({@code -rf json -rff f.json}) and
 * from {@code IngestVsSpark --json}: one chart per entry of {@link #CHARTS} whose benchmark is in the given files.
 * Every value is the median over all measurement iterations of all forks, as in {@link ResultsTable}.
 *
 * <pre>
 * java -cp "$CP" dev.lakecommit.bench.Charts --out benchmarks/charts --subtitle "2 cores, 2026-12-05" results/*.json
 * </pre>
 */
public final class Charts {
  private static final Color[] COLORS = {
    new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x2ca02c), new Color(0xd62728), new Color(0x9467bd),
    new Color(0x8c564b), new Color(0xe377c2), new Color(0x7f7f7f)
  };

  /** What a chart plots of a result. */
  enum Metric {
    /** JMH's primary metric, in its unit. */
    PRIMARY,
    /** The {@code rows} parameter divided by the primary metric, a time per operation. */
    ROWS_PER_SECOND,
    /** A secondary metric (an {@code @AuxCounters} field) by name. */
    SECONDARY
  }

  /** One quantity of a chart: a bar group or a line per series. */
  record Measure(String label, Metric metric, String secondary) {
    static Measure primary(String label) {
      return new Measure(label, Metric.PRIMARY, null);
    }

    static Measure rowsPerSecond(String label) {
      return new Measure(label, Metric.ROWS_PER_SECOND, null);
    }

    static Measure secondary(String label, String name) {
      return new Measure(label, Metric.SECONDARY, name);
    }
  }

  /**
   * A chart: the results of {@code benchmark} whose method matches {@code variants}; a line chart over the
   * parameter {@code x} when it is set, else bars (grouped by measure when there are several, else by the
   * parameters that differ). A series is a variant with the other parameters that differ.
   */
  record Chart(String file, String benchmark, String variants, String title, String yLabel, String x, boolean logX,
      boolean logY, List<Measure> measures) {}

  static final List<Chart> CHARTS = List.of(
      new Chart("staging-writer", "StagingWriterBenchmark", ".*", "Staging writer vs Iceberg's Parquet appender",
          "writes of 100,000 rows per second", null, false, false, List.of(Measure.primary("ops/s"))),
      new Chart("commit-latency", "CommitLatencyBenchmark", ".*", "Commit latency against files per checkpoint",
          "ms per checkpoint commit", "files", true, true, List.of(Measure.primary("ms"))),
      new Chart("hive-partitions", "HivePartitionCommitBenchmark", ".*",
          "Hive: one checkpoint's new partitions, one commit", "ms per checkpoint commit", "partitions", true, true,
          List.of(Measure.primary("ms"))),
      new Chart("watermark-lookup", "WatermarkLookupBenchmark", ".*",
          "Restart lookup of the last committed checkpoint", "ns per lookup", "snapshots", true, true,
          List.of(Measure.primary("ns"))),
      new Chart("flink-sinks", "FlinkSinkBenchmark", ".*", "Flink job throughput: Lakecommit's sink vs Iceberg's",
          "rows per second", null, false, false, List.of(Measure.rowsPerSecond("rows/s"))),
      new Chart("kafka-vs-files", "KafkaIngestBenchmark", "kafka|file", "Ingest throughput: Kafka vs files",
          "rows per second", null, false, false, List.of(Measure.rowsPerSecond("rows/s"))),
      new Chart("kafka-latency", "KafkaIngestBenchmark", "latency",
          "Kafka → Iceberg: produce to visible in the table", "ms", null, false, false,
          List.of(Measure.secondary("p50", "p50Millis"), Measure.secondary("p99", "p99Millis"))),
      new Chart("maintenance-scan", "MaintenanceBenchmark", "scan.*",
          "Full scan against checkpoints committed, with and without maintenance", "ms per full scan",
          "checkpoints", false, true, List.of(Measure.primary("ms"))),
      new Chart("maintenance-write", "MaintenanceBenchmark", "write.*", "Writing the job, with and without maintenance",
          "ms per job", null, false, false, List.of(Measure.primary("ms"))),
      new Chart("pipelined-commits", "PipelinedCommitBenchmark", ".*", "Rows committed per second on a slow catalog",
          "rows per second", null, false, false, List.of(Measure.secondary("rows/s", "rowsPerSecond"))),
      new Chart("ingest-vs-spark", "IngestVsSpark", ".*", "The tool vs a Spark 4.1 + Iceberg job, same input",
          "rows per second", null, false, false, List.of(Measure.rowsPerSecond("per wall-clock second"),
              Measure.secondary("per CPU-second", "rowsPerCpuSecond"))),
      new Chart("restart", "RestartBenchmark", ".*",
          "Kafka job restarted after SIGKILL, 100,000 messages behind: where the seconds go",
          "ms from process start", null, false, false, List.of(Measure.secondary("options read", "cliMillis"),
              Measure.secondary("epoch claimed", "claimedMillis"), Measure.secondary("restored", "restoredMillis"),
              Measure.secondary("checkpoint durable", "checkpointMillis"), Measure.primary("first commit"))),
      new Chart("flink-tables", "FlinkMultiTableBenchmark", ".*",
          "Flink job writing 100 tables: Lakecommit's cut vs Iceberg's DynamicIcebergSink", "rows per second", null,
          false, false, List.of(Measure.rowsPerSecond("rows/s"))),
      new Chart("cut-commit", "CutCommitBenchmark", ".*",
          "One checkpoint over 100 tables: one atomic cut vs 100 one-table commits", "ms per checkpoint", null,
          false, false, List.of(Measure.primary("ms"))),
      new Chart("hive-s3-commit", "HiveS3CommitBenchmark", ".*",
          "Hive on S3: completing staged uploads vs copy-rename", "ms per checkpoint commit", null, false, false,
          List.of(Measure.primary("ms"))));

  /** One result of a JSON file: a benchmark method under one parameter combination (also read by ResultsTable). */
  record Result(String benchmark, String variant, String mode, Map<String, String> params, String unit,
      List<Double> primary, double score, double error, Map<String, List<Double>> secondary) {}

  private Charts() {}

  public static void main(String[] args) throws IOException {
    Path out = Path.of("benchmarks/charts");
    String subtitle = "";
    List<Path> files = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--out" -> out = Path.of(args[++i]);
        case "--subtitle" -> subtitle = args[++i];
        default -> files.add(Path.of(args[i]));
      }
    }
    if (files.isEmpty()) {
      System.err.println("Usage: Charts [--out DIR] [--subtitle TEXT] <jmh-result.json>...");
      System.exit(2);
    }
    List<Result> results = new ArrayList<>();
    for (Path file : files) {
      results.addAll(read(file));
    }
    Files.createDirectories(out);
    for (Chart chart : CHARTS) {
      List<Result> selected = select(results, chart);
      if (selected.isEmpty()) {
        continue;
      }
      Path png = out.resolve(chart.file() + ".png");
      ChartUtils.saveChartAsPNG(png.toFile(), draw(chart, selected, subtitle), 900, 500);
      System.out.println("Charts: " + png + " (" + selected.size() + " results of " + chart.benchmark() + ")");
    }
  }

  static List<Result> read(Path file) throws IOException {
    List<Result> results = new ArrayList<>();
    for (JsonNode node : new ObjectMapper().readTree(file.toFile())) {
      String[] name = node.get("benchmark").asText().split("\\.");
      Map<String, String> params = new LinkedHashMap<>();
      JsonNode jsonParams = node.get("params");
      if (jsonParams != null) {
        for (Iterator<Map.Entry<String, JsonNode>> it = jsonParams.fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> entry = it.next();
          params.put(entry.getKey(), entry.getValue().asText());
        }
      }
      Map<String, List<Double>> secondary = new LinkedHashMap<>();
      JsonNode jsonSecondary = node.get("secondaryMetrics");
      if (jsonSecondary != null) {
        for (Iterator<Map.Entry<String, JsonNode>> it = jsonSecondary.fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> entry = it.next();
          secondary.put(entry.getKey(), samples(entry.getValue()));
        }
      }
      JsonNode primary = node.get("primaryMetric");
      results.add(new Result(name[name.length - 2], name[name.length - 1], node.path("mode").asText(), params,
          primary.get("scoreUnit").asText(), samples(primary), primary.path("score").asDouble(),
          primary.path("scoreError").asDouble(), secondary));
    }
    return results;
  }

  private static List<Double> samples(JsonNode metric) {
    List<Double> samples = new ArrayList<>();
    JsonNode raw = metric.get("rawData");
    if (raw != null) {
      for (JsonNode fork : raw) {
        fork.forEach(value -> samples.add(value.asDouble()));
      }
    }
    if (samples.isEmpty() && metric.has("score")) {
      samples.add(metric.get("score").asDouble());
    }
    return samples;
  }

  static List<Result> select(List<Result> results, Chart chart) {
    Pattern variants = Pattern.compile(chart.variants());
    return results.stream()
        .filter(r -> r.benchmark().equals(chart.benchmark()) && variants.matcher(r.variant()).matches())
        .toList();
  }

  /** The value a measure plots for a result: a median over all its samples. */
  static double value(Result result, Measure measure) {
    return switch (measure.metric()) {
      case PRIMARY -> ResultsTable.median(result.primary());
      case SECONDARY -> {
        List<Double> samples = result.secondary().get(measure.secondary());
        if (samples == null) {
          throw new IllegalArgumentException(result.benchmark() + "." + result.variant() + " has no secondary metric "
              + measure.secondary() + " (it has " + result.secondary().keySet() + ")");
        }
        yield ResultsTable.median(samples);
      }
      case ROWS_PER_SECOND -> {
        String rows = result.params().get("rows");
        if (rows == null) {
          throw new IllegalArgumentException(result.benchmark() + "." + result.variant() + " has no rows parameter");
        }
        yield Double.parseDouble(rows) / (ResultsTable.median(result.primary()) / secondsPer(result.unit()));
      }
    };
  }

  /** How many of the unit's time steps make a second: "ms/op" → 1000. */
  static double secondsPer(String unit) {
    String time = unit.contains("/") ? unit.substring(0, unit.indexOf('/')) : unit;
    return switch (time) {
      case "s" -> 1;
      case "ms" -> 1e3;
      case "us" -> 1e6;
      case "ns" -> 1e9;
      default -> throw new IllegalArgumentException("Not a time per operation: " + unit);
    };
  }

  /** The parameters whose values differ among the results, in their order. */
  static Set<String> varying(List<Result> results) {
    Set<String> names = new LinkedHashSet<>();
    for (Result result : results) {
      for (Map.Entry<String, String> param : result.params().entrySet()) {
        for (Result other : results) {
          if (!param.getValue().equals(other.params().get(param.getKey()))) {
            names.add(param.getKey());
          }
        }
      }
    }
    return names;
  }

  static String series(Result result, Set<String> varying, String x, boolean oneVariant) {
    List<String> parts = new ArrayList<>();
    if (!oneVariant) {
      parts.add(result.variant());
    }
    for (String name : varying) {
      if (!name.equals(x)) {
        parts.add(name + "=" + result.params().get(name));
      }
    }
    return parts.isEmpty() ? result.variant() : String.join(", ", parts);
  }

  static JFreeChart draw(Chart chart, List<Result> results, String subtitle) {
    Set<String> varying = varying(results);
    boolean oneVariant = results.stream().map(Result::variant).distinct().count() == 1;
    JFreeChart drawn = chart.x() != null ? line(chart, results, varying, oneVariant) : bars(chart, results, varying);
    drawn.setBackgroundPaint(Color.WHITE);
    drawn.getTitle().setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
    if (!subtitle.isEmpty()) {
      drawn.addSubtitle(new TextTitle(subtitle, new Font(Font.SANS_SERIF, Font.PLAIN, 12)));
    }
    return drawn;
  }

  private static JFreeChart line(Chart chart, List<Result> results, Set<String> varying, boolean oneVariant) {
    Map<String, XYSeries> series = new LinkedHashMap<>();
    for (Result result : results) {
      for (Measure measure : chart.measures()) {
        String key = series(result, varying, chart.x(), oneVariant)
            + (chart.measures().size() > 1 ? " " + measure.label() : "");
        series.computeIfAbsent(key, XYSeries::new)
            .add(Double.parseDouble(result.params().get(chart.x())), value(result, measure));
      }
    }
    XYSeriesCollection dataset = new XYSeriesCollection();
    series.values().forEach(dataset::addSeries);
    JFreeChart drawn = ChartFactory.createXYLineChart(chart.title(), chart.x(), chart.yLabel(), dataset,
        PlotOrientation.VERTICAL, true, false, false);
    XYPlot plot = drawn.getXYPlot();
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
    plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
    if (chart.logX()) {
      plot.setDomainAxis(logAxis(chart.x()));
    }
    if (chart.logY()) {
      plot.setRangeAxis(logAxis(chart.yLabel()));
    }
    XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
    for (int i = 0; i < dataset.getSeriesCount(); i++) {
      renderer.setSeriesPaint(i, COLORS[i % COLORS.length]);
      renderer.setSeriesStroke(i, new BasicStroke(2f));
    }
    plot.setRenderer(renderer);
    return drawn;
  }

  /** Bar labels with about three significant digits of the largest value: 1,186,368 rather than 1,186,368.155. */
  static DecimalFormat labelFormat(DefaultCategoryDataset dataset) {
    double largest = 0;
    for (int row = 0; row < dataset.getRowCount(); row++) {
      for (int column = 0; column < dataset.getColumnCount(); column++) {
        Number value = dataset.getValue(row, column);
        largest = value == null ? largest : Math.max(largest, Math.abs(value.doubleValue()));
      }
    }
    String pattern = largest >= 100 ? "#,##0" : largest >= 10 ? "#,##0.0" : largest >= 1 ? "#,##0.00" : "0.###";
    return new DecimalFormat(pattern, DecimalFormatSymbols.getInstance(Locale.ROOT));
  }

  private static JFreeChart bars(Chart chart, List<Result> results, Set<String> varying) {
    DefaultCategoryDataset dataset = new DefaultCategoryDataset();
    boolean byMeasure = chart.measures().size() > 1;
    for (Result result : results) {
      for (Measure measure : chart.measures()) {
        // Bars of one measure: a series per variant, grouped by the parameters that differ. Of several: a series
        // per variant and parameters, grouped by measure.
        String row = byMeasure ? series(result, varying, null, false) : result.variant();
        String column = byMeasure ? measure.label() : groupOf(result, varying);
        dataset.addValue(value(result, measure), row, column);
      }
    }
    JFreeChart drawn = ChartFactory.createBarChart(chart.title(), null, chart.yLabel(), dataset,
        PlotOrientation.VERTICAL, true, false, false);
    CategoryPlot plot = drawn.getCategoryPlot();
    plot.setBackgroundPaint(Color.WHITE);
    plot.getDomainAxis().setMaximumCategoryLabelLines(3);
    plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
    if (chart.logY()) {
      plot.setRangeAxis(logAxis(chart.yLabel()));
    }
    BarRenderer renderer = (BarRenderer) plot.getRenderer();
    renderer.setBarPainter(new StandardBarPainter());
    renderer.setShadowVisible(false);
    renderer.setDefaultItemLabelGenerator(new StandardCategoryItemLabelGenerator("{2}", labelFormat(dataset)));
    renderer.setDefaultItemLabelsVisible(true);
    for (int i = 0; i < dataset.getRowCount(); i++) {
      renderer.setSeriesPaint(i, COLORS[i % COLORS.length]);
    }
    if (!chart.logY()) {
      ((NumberAxis) plot.getRangeAxis()).setAutoRangeIncludesZero(true);
    }
    return drawn;
  }

  private static String groupOf(Result result, Set<String> varying) {
    List<String> parts = new ArrayList<>();
    for (String name : varying) {
      parts.add(name + "=" + result.params().get(name));
    }
    return parts.isEmpty() ? "" : String.join(", ", parts);
  }

  private static LogAxis logAxis(String label) {
    LogAxis axis = new LogAxis(label);
    axis.setBase(10);
    axis.setSmallestValue(1e-3);
    // Ticks at powers of ten only (the tick unit is in exponents).
    axis.setTickUnit(new NumberTickUnit(1));
    axis.setMinorTickCount(0);
    axis.setNumberFormatOverride(new DecimalFormat("#,##0.###", DecimalFormatSymbols.getInstance(Locale.ROOT)));
    return axis;
  }
}
