package dev.lakecommit.bench.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.spark.launcher.JavaModuleOptions;

/**
 * {@code lakecommit ingest} against the Spark 4.1 + Iceberg job a user would run instead ({@link SparkIngestPeer}), on
 * the same JSON lines ({@link BenchInput}) into the same kind of table (a Hadoop catalog on local disk, the same
 * schema, identity partitioning by two columns, zstd), each a JVM of its own started from the command line: JVM start,
 * reading, writing and committing are all measured. Wall time by this process; user and system CPU of the child and
 * everything it forks by the shell's {@code times}. Rounds alternate which side goes first; every run is checked
 * afterwards (the table's current snapshot holds exactly the input's rows).
 *
 * <pre>
 * mvn -B -T1 -DskipTests -pl ingest,benchmarks/spark-peer -am package dependency:build-classpath \
 *     -Dmdep.outputFile=target/classpath.txt -DincludeScope=runtime
 * java -cp benchmarks/spark-peer/target/classes:$(cat benchmarks/spark-peer/target/classpath.txt) \
 *     dev.lakecommit.bench.spark.IngestVsSpark --rows 1000000 --rounds 3 --work /tmp/ingest-vs-spark
 * </pre>
 *
 * <p>Options: {@code --rows} (1,000,000), {@code --files} input files (8), {@code --rounds} measured rounds (3),
 * {@code --warmup} unmeasured rounds (1), {@code --cores} the tool's {@code --parallelism} and Spark's
 * {@code local[N]} (2), {@code --heap} both JVMs' {@code -Xmx} (2g), {@code --tool-jar}
 * ({@code ingest/target/lakecommit.jar}), {@code --work} (a new temporary directory), {@code --seed},
 * {@code --checkpoint-every-records} the tool's option of that name (the tool's default if not given),
 * {@code --json} a file for the results in JMH's JSON format (for {@code dev.lakecommit.bench.Charts}).
 */
public final class IngestVsSpark {
  static final String TOOL = "lakecommit";
  static final String SPARK = "spark";
  private static final Pattern TIMES = Pattern.compile("(\\d+)m([\\d.]+)s\\s+(\\d+)m([\\d.]+)s");

  /** One measured run of one side. */
  public record Run(String side, int round, double wallSeconds, double userSeconds, double systemSeconds,
      long rows, int dataFiles, int snapshots) {
    double cpuSeconds() {
      return userSeconds + systemSeconds;
    }

    double rowsPerCpuSecond() {
      return rows / cpuSeconds();
    }
  }

  private final Map<String, String> options;
  private final Path work;
  private final long rows;

  IngestVsSpark(Map<String, String> options) throws IOException {
    this.options = options;
    this.rows = Long.parseLong(options.getOrDefault("rows", "1000000"));
    this.work = options.containsKey("work") ? Paths.get(options.get("work")).toAbsolutePath()
        : Files.createTempDirectory("ingest-vs-spark");
  }

  public static void main(String[] args) throws Exception {
    IngestVsSpark comparison = new IngestVsSpark(parse(args));
    List<Run> runs = comparison.run();
    System.out.println(table(runs));
    if (comparison.options.containsKey("json")) {
      Path json = Paths.get(comparison.options.get("json"));
      Files.writeString(json, json(runs, comparison.rows, comparison.options.getOrDefault("cores", "2")));
      System.out.println("IngestVsSpark: results in " + json.toAbsolutePath());
    }
  }

  /**
   * The measured runs in JMH's JSON result format, one result per side (wall seconds per round as the primary
   * metric, CPU seconds and rows per CPU-second as secondary ones), for {@code dev.lakecommit.bench.Charts}.
   */
  static String json(List<Run> runs, long rows, String cores) {
    List<String> results = new ArrayList<>();
    for (String side : List.of(TOOL, SPARK)) {
      List<Run> mine = runs.stream().filter(run -> run.side().equals(side)).toList();
      List<Double> wall = mine.stream().map(Run::wallSeconds).toList();
      List<Double> cpu = mine.stream().map(Run::cpuSeconds).toList();
      List<Double> perCpu = mine.stream().map(Run::rowsPerCpuSecond).toList();
      results.add(String.format(Locale.ROOT, """
            {"benchmark": "dev.lakecommit.bench.spark.IngestVsSpark.%s", "mode": "ss", "forks": 1,
             "params": {"rows": "%d", "cores": "%s"},
             "primaryMetric": {"score": %s, "scoreError": 0, "scoreUnit": "s/op", "rawData": [%s]},
             "secondaryMetrics": {
               "cpuSeconds": {"score": %s, "scoreError": 0, "scoreUnit": "s", "rawData": [%s]},
               "rowsPerCpuSecond": {"score": %s, "scoreError": 0, "scoreUnit": "rows/s", "rawData": [%s]}}}""",
          side, rows, cores, median(wall), numbers(wall), median(cpu), numbers(cpu), median(perCpu),
          numbers(perCpu)));
    }
    return "[\n" + String.join(",\n", results) + "\n]\n";
  }

  private static String numbers(List<Double> values) {
    List<String> texts = new ArrayList<>();
    for (double value : values) {
      texts.add(String.format(Locale.ROOT, "%.3f", value));
    }
    return "[" + String.join(", ", texts) + "]";
  }

  static Map<String, String> parse(String[] args) {
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i += 2) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --option value pairs, got " + Arrays.toString(args));
      }
      options.put(args[i].substring(2), args[i + 1]);
    }
    return options;
  }

  /** Writes the input, runs the warm-up and measured rounds, and returns the measured runs. */
  List<Run> run() throws IOException, InterruptedException {
    int files = Integer.parseInt(options.getOrDefault("files", "8"));
    int rounds = Integer.parseInt(options.getOrDefault("rounds", "3"));
    int warmup = Integer.parseInt(options.getOrDefault("warmup", "1"));
    Path toolJar = Paths.get(options.getOrDefault("tool-jar",
        System.getProperty("lakecommit.tool.jar", "ingest/target/lakecommit.jar"))).toAbsolutePath();
    if (!Files.isRegularFile(toolJar)) {
      throw new IllegalArgumentException("--tool-jar: no file " + toolJar.toAbsolutePath()
          + " (build it with mvn -pl ingest -am package -DskipTests)");
    }
    Path input = work.resolve("input");
    long start = System.nanoTime();
    BenchInput.write(input, rows, files, Long.parseLong(options.getOrDefault("seed", "20261202")));
    System.out.printf(Locale.ROOT, "IngestVsSpark: %,d rows in %d files (%,d bytes) written in %.1f s under %s%n",
        rows, files, size(input), (System.nanoTime() - start) / 1e9, work);
    List<Run> runs = new ArrayList<>();
    for (int round = 1 - warmup; round <= rounds; round++) {
      List<String> order = round % 2 == 0 ? List.of(SPARK, TOOL) : List.of(TOOL, SPARK);
      for (String side : order) {
        Run run = runOnce(side, round, input, toolJar);
        System.out.printf(Locale.ROOT, "IngestVsSpark: %s %s: wall %.1f s, user %.1f s, system %.1f s, "
                + "%,d rows, %d data files, %d snapshots%n", round < 1 ? "warm-up" : "round " + round, side,
            run.wallSeconds(), run.userSeconds(), run.systemSeconds(), run.rows(), run.dataFiles(), run.snapshots());
        if (round >= 1) {
          runs.add(run);
        }
      }
    }
    return runs;
  }

  private Run runOnce(String side, int round, Path input, Path toolJar) throws IOException, InterruptedException {
    String heap = "-Xmx" + options.getOrDefault("heap", "2g");
    String cores = options.getOrDefault("cores", "2");
    Path warehouse = work.resolve(side + "-" + round);
    List<String> command = new ArrayList<>(List.of(java()));
    command.add(heap);
    if (side.equals(TOOL)) {
      command.addAll(List.of("-jar", toolJar.toString(), "ingest", "--input", input.toString(), "--format", "json",
          "--schema", BenchInput.TOOL_SCHEMA, "--table", BenchInput.NAMESPACE + "." + BenchInput.TABLE,
          "-C", "type=hadoop", "-C", "warehouse=" + warehouse.toUri(),
          "--partition-by", BenchInput.PARTITION_BY.replace(" ", ""), "--parallelism", cores,
          "--codec", BenchInput.CODEC, "--checkpoint-dir", warehouse.resolve("checkpoints").toString()));
      if (options.containsKey("checkpoint-every-records")) {
        command.addAll(List.of("--checkpoint-every-records", options.get("checkpoint-every-records")));
      }
    } else {
      command.addAll(Arrays.asList(JavaModuleOptions.defaultModuleOptionArray()));
      command.addAll(List.of("-cp", classPath(), SparkIngestPeer.class.getName(), input.toString(),
          warehouse.toUri().toString(), cores));
    }
    Path log = work.resolve(side + "-" + round + ".log");
    Path times = work.resolve(side + "-" + round + ".times");
    List<String> wrapped = new ArrayList<>(List.of("bash", "-c",
        "\"$@\"; rc=$?; times > \"$LAKECOMMIT_TIMES\"; exit $rc", "bash"));
    wrapped.addAll(command);
    ProcessBuilder builder = new ProcessBuilder(wrapped).directory(work.toFile()).redirectErrorStream(true)
        .redirectOutput(log.toFile());
    builder.environment().put("LAKECOMMIT_TIMES", times.toString());
    long start = System.nanoTime();
    Process process = builder.start();
    int exit = process.waitFor();
    double wall = (System.nanoTime() - start) / 1e9;
    if (exit != 0) {
      throw new IllegalStateException(side + " exited " + exit + "; the end of " + log + ":\n" + tail(log));
    }
    Matcher cpu = TIMES.matcher(Files.readString(times));
    if (!cpu.find() || !cpu.find()) {
      throw new IllegalStateException("no children's times in " + times + ": " + Files.readString(times));
    }
    double user = Long.parseLong(cpu.group(1)) * 60 + Double.parseDouble(cpu.group(2));
    double system = Long.parseLong(cpu.group(3)) * 60 + Double.parseDouble(cpu.group(4));
    Table table = new HadoopTables(new Configuration())
        .load(warehouse.resolve(BenchInput.NAMESPACE).resolve(BenchInput.TABLE).toUri().toString());
    Snapshot current = table.currentSnapshot();
    if (current == null) {
      throw new IllegalStateException(side + " round " + round + ": the table has no snapshot (" + warehouse + ")");
    }
    long tableRows = Long.parseLong(current.summary().get("total-records"));
    if (tableRows != rows) {
      throw new IllegalStateException(side + " round " + round + ": the table holds " + tableRows + " rows, not "
          + rows + " (" + warehouse + ")");
    }
    int snapshots = 0;
    for (Snapshot ignored : table.snapshots()) {
      snapshots++;
    }
    return new Run(side, round, wall, user, system, tableRows,
        Integer.parseInt(current.summary().get("total-data-files")), snapshots);
  }

  /** The runs and, per round, the tool's figures as ratios of Spark's in the same round, with their medians. */
  static String table(List<Run> runs) {
    StringBuilder out = new StringBuilder();
    out.append("| round | side | wall s | user s | system s | CPU s | rows per CPU-s | data files | snapshots |\n")
        .append("|---|---|---|---|---|---|---|---|---|\n");
    for (Run run : runs) {
      out.append(String.format(Locale.ROOT, "| %d | %s | %.1f | %.1f | %.1f | %.1f | %,.0f | %d | %d |%n",
          run.round(), run.side(), run.wallSeconds(), run.userSeconds(), run.systemSeconds(), run.cpuSeconds(),
          run.rowsPerCpuSecond(), run.dataFiles(), run.snapshots()));
    }
    List<Double> efficiency = new ArrayList<>();
    List<Double> wall = new ArrayList<>();
    for (Run tool : runs) {
      if (tool.side().equals(TOOL)) {
        for (Run spark : runs) {
          if (spark.side().equals(SPARK) && spark.round() == tool.round()) {
            efficiency.add(tool.rowsPerCpuSecond() / spark.rowsPerCpuSecond());
            wall.add(tool.wallSeconds() / spark.wallSeconds());
          }
        }
      }
    }
    out.append(String.format(Locale.ROOT, "%nlakecommit ÷ spark, per round: rows per CPU-second %s (median %.2f×, "
        + "goal ≥ 1.5×); wall time %s (median %.2f×, goal ≤ 0.7×)%n", ratios(efficiency), median(efficiency),
        ratios(wall), median(wall)));
    return out.toString();
  }

  static double median(List<Double> values) {
    if (values.isEmpty()) {
      return Double.NaN;
    }
    List<Double> sorted = new ArrayList<>(values);
    sorted.sort(null);
    int middle = sorted.size() / 2;
    return sorted.size() % 2 == 1 ? sorted.get(middle) : (sorted.get(middle - 1) + sorted.get(middle)) / 2;
  }

  private static String ratios(List<Double> values) {
    List<String> texts = new ArrayList<>();
    for (double value : values) {
      texts.add(String.format(Locale.ROOT, "%.2f×", value));
    }
    return String.join(", ", texts);
  }

  private static String java() {
    return Paths.get(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** This JVM's class path: Spark, Iceberg's runtime bundle and this module (a test run's, under failsafe). */
  private static String classPath() {
    String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> absolute = new ArrayList<>();
    for (String entry : classPath.split(java.io.File.pathSeparator)) {
      if (!entry.isEmpty()) {
        absolute.add(Paths.get(entry).toAbsolutePath().toString());
      }
    }
    return String.join(java.io.File.pathSeparator, absolute);
  }

  private static long size(Path dir) throws IOException {
    try (var files = Files.list(dir)) {
      return files.mapToLong(file -> file.toFile().length()).sum();
    }
  }

  private static String tail(Path log) throws IOException {
    List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
  }
}
