package dev.lakecommit.bench;

import dev.lakecommit.core.testing.KafkaBroker;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
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
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * A Kafka job restarted after SIGKILL with a backlog: process start → the first commit of a checkpoint the new run
 * took, as an orchestrator restarts it — {@code bin/lakecommit ingest --input kafka://…} in a fresh JVM (JVM start
 * included), with the tool's class archive ({@code withArchive}, the default) and without it ({@code
 * withoutArchive}, {@code LAKECOMMIT_CDS=off}, the baseline).
 *
 * <p>One job per trial on one topic: its first run commits a checkpoint and is killed; then every iteration adds
 * {@code backlog} messages while the job is down, starts it, waits for its first commit of a new checkpoint (the
 * measured time) and kills it with SIGKILL again, mid-backlog — so each restart also finds what the killed run left:
 * a pending checkpoint to commit, staged files to sweep. The phases, as milliseconds from process start to the line
 * the tool prints when each ends: {@code cliMillis} (JVM start, options, schema: "Ingesting …"), {@code
 * claimedMillis} (catalog and table opened, the run's epoch claimed: "Job … runs as …"), {@code restoredMillis}
 * (checkpoint restored, the killed run's pending commits committed, its staged files swept: "Resuming after …"),
 * {@code checkpointMillis} (the consumer started, the first interval read, the checkpoint made durable: when
 * its commit began, by the duration the commit's line gives) and the primary metric (that checkpoint committed:
 * "Committed checkpoint N … in M ms").
 *
 * <p>Run it (from the repository root, with the tool built): {@code java -cp "$CP" org.openjdk.jmh.Main
 * RestartBenchmark -p backlog=100000}; {@code -p build=current,/path/to/other/checkout} also runs another build's
 * {@code bin/lakecommit} (built there) in the same run. Goal: the first commit within 3 s of process start at
 * {@code --checkpoint-interval 1s} on a quiet 2-core machine.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(1)
@Warmup(iterations = 1)
@Measurement(iterations = 7)
public class RestartBenchmark {
  private static final Pattern INGESTING = Pattern.compile("^Ingesting ");
  private static final Pattern CLAIMED = Pattern.compile("Job \\S+ runs as ");
  private static final Pattern RESUMING = Pattern.compile("Resuming after checkpoint (\\d+)");
  private static final Pattern COMMITTED = Pattern.compile("Committed checkpoint (\\d+) of job .* in (\\d+) ms");

  @Param({"100000"})
  public int backlog;

  @Param({"1s"})
  public String checkpointInterval;

  /** Which build runs: {@code current} (the checkout this runs in), or another checkout's directory. */
  @Param({"current"})
  public String build;

  private Path dir;
  private Path tool;
  private KafkaBroker broker;
  private KafkaProducer<String, String> producer;
  private long produced;
  private Run running;

  /** When each phase of the measured restart ended, in milliseconds from process start. */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.EVENTS)
  public static class Phases {
    public double cliMillis;
    public double claimedMillis;
    public double restoredMillis;
    public double checkpointMillis;
  }

  @Setup(Level.Trial)
  public void setUp(BenchmarkParams params) throws Exception {
    tool = build.equals("current") ? launcher() : Path.of(build, "bin", "lakecommit").toAbsolutePath();
    dir = Files.createTempDirectory("lakecommit-restart-bench");
    broker = KafkaBroker.childJvm(dir.resolve("kafka"));
    broker.createTopic("rows", 4);
    producer = BenchKafka.bulkProducer(broker);
    // The job's first run (which also archives the tool's classes if the build has no archive yet): one commit.
    boolean archive = params.getBenchmark().endsWith(".withArchive");
    produce(1_000);
    Run first = Run.start(command(), archive);
    try {
      first.await(COMMITTED, 0);
    } finally {
      first.kill();
    }
    Path archived = tool.getParent().resolveSibling("ingest/target/lakecommit.jsa");
    if (archive && !Files.isRegularFile(archived)) {
      throw new IllegalStateException("bin/lakecommit made no class archive (" + archived + "): withArchive would"
          + " measure a start without it");
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException, InterruptedException {
    if (running != null) {
      running.kill();
    }
    producer.close();
    broker.close();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path path : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    }
  }

  /** While the job is down: the backlog its next run finds. */
  @Setup(Level.Iteration)
  public void produceBacklog() {
    produce(backlog);
  }

  /** SIGKILL as soon as the measured run committed: it is still reading the backlog. */
  @TearDown(Level.Iteration)
  public void kill() throws InterruptedException {
    running.kill();
    running = null;
  }

  @Benchmark
  public long withArchive(Phases phases) throws Exception {
    return restart(true, phases);
  }

  @Benchmark
  public long withoutArchive(Phases phases) throws Exception {
    return restart(false, phases);
  }

  private long restart(boolean archive, Phases phases) throws Exception {
    Run run = Run.start(command(), archive);
    running = run;
    int resumed = run.await(RESUMING, -1);
    long restored = Long.parseLong(run.line(resumed, RESUMING).group(1));
    int committed = run.await(COMMITTED, restored);
    phases.cliMillis = run.millis(run.await(INGESTING, -1));
    phases.claimedMillis = run.millis(run.await(CLAIMED, -1));
    phases.restoredMillis = run.millis(resumed);
    Matcher commit = run.line(committed, COMMITTED);
    phases.checkpointMillis = run.millis(committed) - Long.parseLong(commit.group(2));
    return Long.parseLong(commit.group(1));
  }

  private List<String> command() {
    return List.of(tool.toString(), "ingest", "--input", "kafka://" + broker.bootstrapServers() + "/rows", "--table",
        "bench.restart", "--warehouse", dir.resolve("warehouse").toString(), "--schema", BenchKafka.SCHEMA,
        "--format", "json", "--job-id", "restart", "--checkpoint-interval", checkpointInterval);
  }

  private void produce(int count) {
    for (int i = 0; i < count; i++) {
      long id = produced++;
      producer.send(new ProducerRecord<>("rows", Long.toString(id), BenchKafka.line(id)));
    }
    producer.flush();
  }

  /** {@code bin/lakecommit} of the checkout this runs in (the working directory or one of its parents). */
  private static Path launcher() {
    for (Path at = Path.of("").toAbsolutePath(); at != null; at = at.getParent()) {
      Path candidate = at.resolve("bin/lakecommit");
      if (Files.isExecutable(candidate)) {
        return candidate;
      }
    }
    throw new IllegalStateException("RestartBenchmark runs bin/lakecommit: start it from the repository (not found"
        + " above " + Path.of("").toAbsolutePath() + ")");
  }

  /** One run of the tool and the lines it printed, each with the time it arrived. */
  private static final class Run {
    private final Process process;
    private final long started;
    private final List<String> lines = new ArrayList<>();
    private final List<Long> arrived = new ArrayList<>();
    private boolean ended;

    private Run(Process process, long started) {
      this.process = process;
      this.started = started;
    }

    static Run start(List<String> command, boolean archive) throws IOException {
      ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
      builder.environment().put("LAKECOMMIT_CDS", archive ? "on" : "off");
      long started = System.nanoTime();
      Run run = new Run(builder.start(), started);
      Thread reader = new Thread(run::read, "restart-benchmark-output");
      reader.setDaemon(true);
      reader.start();
      return run;
    }

    private void read() {
      try (BufferedReader in = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line = in.readLine(); line != null; line = in.readLine()) {
          long now = System.nanoTime();
          synchronized (this) {
            lines.add(line);
            arrived.add(now);
            notifyAll();
          }
        }
      } catch (IOException e) {
        // the process was killed: its output ends here
      } finally {
        synchronized (this) {
          ended = true;
          notifyAll();
        }
      }
    }

    /**
     * The index of the first line matching {@code pattern} whose first group, a number, is above {@code floor} (any
     * line matching when {@code floor} is negative); waits up to 2 minutes for it.
     */
    synchronized int await(Pattern pattern, long floor) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
      for (int seen = 0; ; ) {
        for (; seen < lines.size(); seen++) {
          Matcher matcher = pattern.matcher(lines.get(seen));
          if (matcher.find() && (floor < 0 || Long.parseLong(matcher.group(1)) > floor)) {
            return seen;
          }
        }
        long left = deadline - System.nanoTime();
        if (ended || left <= 0) {
          throw new IllegalStateException("The tool did not print /" + pattern + "/" + (floor < 0 ? "" : " above "
              + floor) + " (" + (ended ? "it ended" : "in 2 minutes") + "):\n" + String.join("\n", lines));
        }
        TimeUnit.NANOSECONDS.timedWait(this, left);
      }
    }

    synchronized Matcher line(int index, Pattern pattern) {
      Matcher matcher = pattern.matcher(lines.get(index));
      if (!matcher.find()) {
        throw new IllegalArgumentException(lines.get(index));
      }
      return matcher;
    }

    /** When the line arrived, in milliseconds from process start. */
    synchronized double millis(int index) {
      return (arrived.get(index) - started) / 1e6;
    }

    void kill() throws InterruptedException {
      process.destroyForcibly();
      if (!process.waitFor(1, TimeUnit.MINUTES)) {
        throw new IllegalStateException("The tool did not die from SIGKILL within a minute");
      }
    }
  }
}
