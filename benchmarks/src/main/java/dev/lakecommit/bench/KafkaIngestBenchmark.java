package dev.lakecommit.bench;

import dev.lakecommit.core.testing.KafkaBroker;
import dev.lakecommit.ingest.cli.LakecommitCommand;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Kafka → Iceberg with the tool ({@code lakecommit ingest --input kafka://… --until end}) against the file ingest of
 * the same rows ({@code --input rows.jsonl}): the same JSON lines, schema, writers, checkpoint size and table (a fresh
 * unpartitioned table in the embedded catalog per run). The broker runs as a child JVM, so the process CPU time
 * counted ({@code cpuNanosPerRow}) is the tool's own in both variants.
 *
 * <p>{@code latency}: end-to-end latency, produce → visible in the table, at a fixed checkpoint interval. The tool
 * runs unbounded in its own JVM (as users run it); once it committed a warm-up batch, {@code liveRows} messages are
 * produced at {@code rate} per second, each stamped with its produce time; then SIGTERM. Afterwards the table's own
 * history says when each became visible ({@link VisibleAt}: the first commit whose source position is past the
 * record's offset); {@code p50Millis} and {@code p99Millis} are the quantiles of (commit time − produce time), and
 * each run prints them in a {@code LATENCY} line (JMH sums {@code EVENTS} counters over the iterations).
 *
 * <p>Run it: {@code java -cp "$CP" org.openjdk.jmh.Main KafkaIngestBenchmark -p rows=1000000}; the latency alone:
 * {@code java -cp "$CP" org.openjdk.jmh.Main 'KafkaIngestBenchmark.latency' -p rows=1000 -p liveRows=50000
 * -p rate=5000 -i 3}.
 * Goal (issue 16): Kafka's rows/s at least 0.8× the file path's.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 1)
@Measurement(iterations = 3)
public class KafkaIngestBenchmark {
  private static final String SCHEMA = BenchKafka.SCHEMA;

  @Param({"500000"})
  public int rows;

  @Param({"2"})
  public int writers;

  private Path dir;
  private Path file;
  private KafkaBroker broker;
  private int run;

  /** Process CPU per row of the measured run (the broker is another process). */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.EVENTS)
  public static class Cpu {
    public double cpuNanosPerRow;
  }

  /** The unbounded run of {@code latency}: how many messages, how fast, at which checkpoint interval. */
  @State(Scope.Benchmark)
  public static class Live {
    @Param({"50000"})
    public int liveRows;

    @Param({"5000"})
    public int rate;

    @Param({"1s"})
    public String checkpointInterval;
  }

  /** Produce → visible quantiles of the measured run, in milliseconds. */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.EVENTS)
  public static class Latency {
    public double p50Millis;
    public double p99Millis;
  }

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    dir = Files.createTempDirectory("lakecommit-kafka-bench");
    file = dir.resolve("rows.jsonl");
    broker = KafkaBroker.childJvm(dir.resolve("kafka"));
    broker.createTopic("rows", 4);
    try (BufferedWriter out = Files.newBufferedWriter(file);
        KafkaProducer<String, String> producer = BenchKafka.bulkProducer(broker)) {
      for (long id = 0; id < rows; id++) {
        String line = BenchKafka.line(id);
        out.write(line);
        out.write('\n');
        producer.send(new ProducerRecord<>("rows", Long.toString(id), line));
      }
      producer.flush();
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    broker.close();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path path : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    }
  }

  @Benchmark
  public long kafka(Cpu cpu) {
    return ingest("kafka://" + broker.bootstrapServers() + "/rows", cpu, "--until", "end");
  }

  @Benchmark
  public long file(Cpu cpu) {
    return ingest(file.toString(), cpu);
  }

  @Benchmark
  @Warmup(iterations = 0) // each run is a fresh tool process: nothing in this JVM to warm up
  public long latency(Live live, Latency latency) throws Exception {
    run++;
    String topic = "live-" + run;
    String job = "live-job-" + run;
    broker.createTopic(topic, 4);
    Path warehouse = dir.resolve("wh-" + run);
    Path log = dir.resolve("live-" + run + ".log");
    List<String> command = new java.util.ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx1g", "-cp",
        System.getProperty("java.class.path"), dev.lakecommit.ingest.Main.class.getName(), "ingest", "--input",
        "kafka://" + broker.bootstrapServers() + "/" + topic, "--table", "bench.live" + run, "--warehouse",
        warehouse.toString(), "--schema", SCHEMA, "--parallelism", Integer.toString(writers), "--format", "json",
        "--job-id", job, "--checkpoint-interval", live.checkpointInterval));
    Process tool = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    int warmUp = 100;
    int[] partitions = new int[live.liveRows];
    long[] offsets = new long[live.liveRows];
    long[] sent = new long[live.liveRows];
    try (KafkaProducer<String, String> producer = producer()) {
      for (int id = 0; id < warmUp; id++) {
        producer.send(new ProducerRecord<>(topic, Long.toString(id), BenchKafka.line(id)));
      }
      producer.flush();
      awaitOutput(tool, log, String.format("complete: %,d rows", warmUp));
      long start = System.nanoTime();
      for (int i = 0; i < live.liveRows; i++) {
        // a fixed rate: message i goes out at start + i / rate (pacing, not synchronisation)
        long due = start + (long) (i * 1e9 / live.rate);
        long wait = due - System.nanoTime();
        if (wait > 0) {
          java.util.concurrent.locks.LockSupport.parkNanos(wait);
        }
        int index = i;
        long now = System.currentTimeMillis();
        sent[i] = now;
        producer.send(new ProducerRecord<>(topic, null, now, Long.toString(warmUp + i), BenchKafka.line(warmUp + i)),
            (metadata, error) -> {
              if (error == null) {
                partitions[index] = metadata.partition();
                offsets[index] = metadata.offset();
              } else {
                offsets[index] = -1;
              }
            });
      }
      producer.flush();
      awaitOutput(tool, log, String.format("complete: %,d rows", warmUp + live.liveRows));
      tool.destroy(); // SIGTERM: the tool commits what it has and exits 0
      if (!tool.waitFor(2, TimeUnit.MINUTES) || tool.exitValue() != 0) {
        throw new IllegalStateException("the tool did not exit 0 after SIGTERM:\n" + Files.readString(log));
      }
    } finally {
      tool.destroyForcibly();
    }
    // the tool's embedded catalog (TableOptions): SQLite beside the warehouse
    java.util.Map<String, String> catalogProperties = java.util.Map.of("type", "jdbc", "uri",
        "jdbc:sqlite:" + warehouse.resolve("catalog.db"), "warehouse", warehouse.toUri().toString(),
        "jdbc.schema-version", "V1");
    org.apache.iceberg.catalog.Catalog catalog = org.apache.iceberg.CatalogUtil.buildIcebergCatalog("lakecommit",
        catalogProperties, new org.apache.hadoop.conf.Configuration());
    VisibleAt visible;
    try {
      visible = new VisibleAt(catalog.loadTable(org.apache.iceberg.catalog.TableIdentifier.of("bench",
          "live" + run)), job);
    } finally {
      if (catalog instanceof java.io.Closeable closeable) {
        closeable.close();
      }
    }
    long[] millis = new long[live.liveRows];
    for (int i = 0; i < live.liveRows; i++) {
      if (offsets[i] < 0) {
        throw new IllegalStateException("message " + (warmUp + i) + " was not produced");
      }
      millis[i] = visible.millis(topic, partitions[i], offsets[i]) - sent[i];
    }
    latency.p50Millis = VisibleAt.quantile(millis, 0.5);
    latency.p99Millis = VisibleAt.quantile(millis, 0.99);
    System.out.printf("LATENCY %,d messages at %,d/s, checkpoint interval %s, %d commits: p50 %,d ms, p99 %,d ms,"
        + " max %,d ms%n", live.liveRows, live.rate, live.checkpointInterval, visible.commits(),
        (long) latency.p50Millis, (long) latency.p99Millis, VisibleAt.quantile(millis, 1.0));
    return live.liveRows;
  }

  private KafkaProducer<String, String> producer() {
    Properties properties = new Properties();
    properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    properties.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    return new KafkaProducer<>(properties, new StringSerializer(), new StringSerializer());
  }

  /** Waits until the child printed {@code marker}; fails with its output if it ended or took over 2 minutes. */
  private static void awaitOutput(Process process, Path log, String marker) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (!Files.readString(log).contains(marker)) {
      if (!process.isAlive() || System.nanoTime() > deadline) {
        throw new IllegalStateException("the tool did not print '" + marker + "':\n" + Files.readString(log));
      }
      process.waitFor(20, TimeUnit.MILLISECONDS);
    }
  }

  private long ingest(String input, Cpu cpu, String... extra) {
    run++;
    List<String> args = new java.util.ArrayList<>(List.of("ingest", "--input", input, "--table", "bench.t" + run,
        "--warehouse", dir.resolve("wh-" + run).toString(), "--schema", SCHEMA, "--parallelism",
        Integer.toString(writers), "--checkpoint-every-records", "100000", "--format", "json"));
    args.addAll(List.of(extra));
    StringWriter out = new StringWriter();
    picocli.CommandLine line = LakecommitCommand.commandLine();
    line.setOut(new PrintWriter(out, true));
    line.setErr(new PrintWriter(out, true));
    long cpuStart = processCpuNanos();
    int code = line.execute(args.toArray(String[]::new));
    long cpuNanos = processCpuNanos() - cpuStart;
    if (code != 0 || !out.toString().contains(String.format("Committed %,d rows", rows))) {
      throw new IllegalStateException("ingest of " + input + " did not commit " + rows + " rows: exit " + code + "\n"
          + out);
    }
    cpu.cpuNanosPerRow = (double) cpuNanos / rows;
    return rows;
  }

  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }
}
