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
 * <p>Run it: {@code java -cp "$CP" org.openjdk.jmh.Main KafkaIngestBenchmark -p rows=1000000}. Goal (issue 16):
 * Kafka's rows/s at least 0.8× the file path's.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 1)
@Measurement(iterations = 3)
public class KafkaIngestBenchmark {
  private static final String SCHEMA = "id long, kind string, region string, amount double, ts long";

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

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    dir = Files.createTempDirectory("lakecommit-kafka-bench");
    file = dir.resolve("rows.jsonl");
    broker = KafkaBroker.childJvm(dir.resolve("kafka"));
    broker.createTopic("rows", 4);
    Properties properties = new Properties();
    properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    properties.put(ProducerConfig.LINGER_MS_CONFIG, "20");
    properties.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(256 * 1024));
    try (BufferedWriter out = Files.newBufferedWriter(file);
        KafkaProducer<String, String> producer =
            new KafkaProducer<>(properties, new StringSerializer(), new StringSerializer())) {
      for (long id = 0; id < rows; id++) {
        String line = "{\"id\": " + id + ", \"kind\": \"k" + (id % 7) + "\", \"region\": \"r" + (id % 13)
            + "\", \"amount\": " + (id % 1000) / 10.0 + ", \"ts\": " + (1_765_000_000_000L + id) + "}";
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
