package dev.lakecommit.bench;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.iceberg.IcebergCommittable;
import dev.lakecommit.iceberg.IcebergMaintenance;
import dev.lakecommit.iceberg.IcebergSink;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.iceberg.MaintenanceOptions;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What maintenance buys (#18): a table after {@code checkpoints} checkpoint commits of {@code writers} writers,
 * each writing 2 partitions (so 2 small files) per checkpoint, through Lakecommit's real writers and aggregated
 * committer, into a Hadoop catalog on local disk. Three tables with the same rows, prepared once per trial:
 *
 * <ul>
 *   <li>{@code unmaintained}: nothing but the commits;
 *   <li>{@code maintained}: a maintenance round ({@link IcebergMaintenance#round}, under the table's lease) after
 *       every {@code maintainEvery} commits, on a thread of its own as the tool's {@code --maintain-every} and the
 *       Flink stage run it — the manifest rewrite, compaction of all but the newest checkpoint's files, expiry
 *       beyond the newest {@code maintainEvery} snapshots. {@code checkpoints} is a multiple of {@code
 *       maintainEvery}, so the table is scanned right after a round (best case: just before one, it also holds up
 *       to {@code maintainEvery} checkpoints of small files);
 *   <li>{@code oneCommit}: the same rows from one checkpoint of the same writers.
 * </ul>
 *
 * <p>Measured: a full scan of each table (planning plus reading every row with Iceberg's generic reader; {@code
 * scan*}, average time; each scan trial prepares only its table), and the writers' job itself — all checkpoints written and committed onto a fresh table —
 * without and with the maintenance rounds ({@code write*}, one job per iteration). The metadata bytes of each table
 * (everything under its {@code metadata/}: metadata.json files, manifest lists, manifests) are logged at the end of
 * the trial setup ({@code MAINTENANCE-TABLE} lines on stdout), next to the live data files and snapshots. Goals (the issue's): read time maintained ≤ 1.2 ×
 * one commit; metadata bytes flat in the checkpoint count; write time with maintenance ≤ 1 / 0.9 × without.
 *
 * <p>Run it (from the repository root; the acceptance size is {@code checkpoints=1000}):
 *
 * <pre>
 * mvn -q -T1 -pl benchmarks -am package dependency:build-classpath -Dmdep.outputFile=target/classpath.txt -DskipTests
 * CP=benchmarks/target/classes:$(cat benchmarks/target/classpath.txt)
 * java -cp "$CP" org.openjdk.jmh.Main MaintenanceBenchmark -p checkpoints=1000 -f 1 -wi 1 -i 3 -to 30m -rf json -rff maintenance.json
 * </pre>
 */
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 1)
@Measurement(iterations = 3)
@State(Scope.Benchmark)
public class MaintenanceBenchmark {
  private static final Logger LOG = LoggerFactory.getLogger(MaintenanceBenchmark.class);
  private static final JobId JOB = JobId.of("bench-maintenance");
  private static final int PARTITIONS = 2;

  @Param({"1000"})
  public int checkpoints;

  @Param({"4"})
  public int writers;

  @Param({"50"})
  public int maintainEvery;

  /** Rows each writer writes into each of its 2 partitions per checkpoint: the size of one small file. */
  @Param({"10"})
  public int rowsPerFile;

  private Path root;
  private Map<String, String> catalogProperties;
  private Catalog catalog;
  private List<Record> records;
  private ExecutorService writerThreads;
  private Table unmaintained;
  private Table maintained;
  private Table oneCommit;
  private int tableNumber;

  /** Prepares only the table the trial's benchmark scans (a write benchmark writes its own). */
  @Setup(Level.Trial)
  public void setUp(BenchmarkParams params) throws Exception {
    root = Files.createTempDirectory("lakecommit-bench-maintenance-");
    catalogProperties = Map.of(
        "type", "hadoop",
        "warehouse", root.resolve("warehouse").toString(),
        "fs.file.impl", FastLocalFileSystem.class.getName(),
        "fs.file.impl.disable.cache", "true");
    catalog = CommitChecks.catalog(catalogProperties);
    records = BenchRecords.generate(checkpoints * writers * PARTITIONS * rowsPerFile);
    writerThreads = Executors.newFixedThreadPool(writers, BenchFiles.daemonThreads("bench-writer"));
    String benchmark = params.getBenchmark();
    if (benchmark.endsWith(".scanUnmaintained")) {
      unmaintained = report("unmaintained", write("unmaintained", checkpoints, false));
    } else if (benchmark.endsWith(".scanMaintained")) {
      maintained = report("maintained", write("maintained", checkpoints, true));
    } else if (benchmark.endsWith(".scanOneCommit")) {
      oneCommit = report("oneCommit", write("onecommit", 1, false));
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    writerThreads.shutdownNow();
    BenchFiles.deleteRecursively(root);
  }

  @Benchmark
  @BenchmarkMode(Mode.AverageTime)
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  public long scanUnmaintained() {
    return scan(unmaintained);
  }

  @Benchmark
  @BenchmarkMode(Mode.AverageTime)
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  public long scanMaintained() {
    return scan(maintained);
  }

  @Benchmark
  @BenchmarkMode(Mode.AverageTime)
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  public long scanOneCommit() {
    return scan(oneCommit);
  }

  @Benchmark
  @BenchmarkMode(Mode.SingleShotTime)
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  public Table writeUnmaintained() throws Exception {
    return write("w" + tableNumber++, checkpoints, false);
  }

  @Benchmark
  @BenchmarkMode(Mode.SingleShotTime)
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  public Table writeMaintained() throws Exception {
    return write("w" + tableNumber++, checkpoints, true);
  }

  /** Every row of the table, read; fails unless it is every row written. */
  private long scan(Table table) {
    long rows = 0;
    try (CloseableIterable<Record> all = IcebergGenerics.read(table).build()) {
      for (Record ignored : all) {
        rows++;
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (rows != records.size()) {
      throw new IllegalStateException("Table " + table.name() + " has " + rows + " rows, expected "
          + records.size());
    }
    return rows;
  }

  /**
   * The job: {@code commits} checkpoints of all rows, each writer writing its share of the checkpoint's rows on
   * its own thread and the committer committing once per checkpoint; with {@code maintain}, a round after every
   * {@code maintainEvery} commits on a thread of its own (a due round is skipped while one runs). Waits for a
   * running round at the end, and runs the round due at the last commit if it was skipped, outside what a reader
   * would see but inside the measured time.
   */
  private Table write(String name, int commits, boolean maintain) throws Exception {
    TableIdentifier identifier = TableIdentifier.of("bench", name);
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config(identifier))) {
      SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committer = sink.createAggregatedCommitter();
      List<SinkWriter<Record, StagingManifest, StagingWriterState>> sinkWriters = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        sinkWriters.add(sink.createWriter(new WriterContext(JOB, w, writers, 0, 0)));
      }
      Rounds rounds = maintain ? new Rounds(sink.maintenance(), maintainEvery) : null;
      int perCheckpoint = records.size() / commits;
      int perWriter = perCheckpoint / writers;
      for (int checkpoint = 1; checkpoint <= commits; checkpoint++) {
        int base = (checkpoint - 1) * perCheckpoint;
        long id = checkpoint;
        List<Future<Optional<StagingManifest>>> prepared = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
          SinkWriter<Record, StagingManifest, StagingWriterState> writer = sinkWriters.get(w);
          List<Record> share = records.subList(base + w * perWriter, base + (w + 1) * perWriter);
          prepared.add(writerThreads.submit(() -> {
            for (Record record : share) {
              writer.write(record);
            }
            return writer.prepareCommit(id);
          }));
        }
        List<StagingManifest> manifests = new ArrayList<>();
        for (Future<Optional<StagingManifest>> manifest : prepared) {
          manifest.get().ifPresent(manifests::add);
        }
        CommitOutcome outcome = committer.commit(committer.combine(new CommitId(JOB, id), manifests));
        if (!(outcome instanceof CommitOutcome.Committed)) {
          throw new IllegalStateException("Checkpoint " + id + " of " + identifier + " did not commit: " + outcome);
        }
        if (rounds != null) {
          rounds.committed();
        }
      }
      if (rounds != null) {
        rounds.close();
      }
      for (SinkWriter<Record, StagingManifest, StagingWriterState> writer : sinkWriters) {
        writer.close();
      }
      committer.close();
    }
    return catalog.loadTable(identifier);
  }

  private IcebergSinkConfig config(TableIdentifier identifier) {
    return IcebergSinkConfig.builder()
        .catalogName("bench")
        .catalogProperties(catalogProperties)
        .table(identifier)
        .createTable(BenchRecords.SCHEMA, List.of("bucket(" + PARTITIONS + ", event_id)"))
        .tableProperties(Map.of(TableProperties.FORMAT_VERSION, "2"))
        .build();
  }

  /** Logs what the table holds (the figures the README's maintenance table reports) and returns it. */
  private Table report(String variant, Table table) throws IOException {
    long snapshots = 0;
    for (var ignored : table.snapshots()) {
      snapshots++;
    }
    long files = 0;
    long smallest = Long.MAX_VALUE;
    long largest = 0;
    try (var tasks = table.newScan().planFiles()) {
      for (var task : tasks) {
        files++;
        smallest = Math.min(smallest, task.file().fileSizeInBytes());
        largest = Math.max(largest, task.file().fileSizeInBytes());
      }
    }
    List<org.apache.iceberg.ManifestFile> current = table.currentSnapshot().allManifests(table.io());
    int manifests = current.size();
    long deletedEntries = 0;
    for (org.apache.iceberg.ManifestFile manifest : current) {
      deletedEntries += manifest.deletedFilesCount() == null ? 0 : manifest.deletedFilesCount();
    }
    Path metadata = Path.of(java.net.URI.create(table.location().startsWith("file:") ? table.location()
        : "file://" + table.location())).resolve("metadata");
    long bytes;
    long count;
    try (Stream<Path> all = Files.walk(metadata)) {
      List<Path> regular = all.filter(Files::isRegularFile).filter(p -> !p.getFileName().toString().startsWith("."))
          .toList();
      count = regular.size();
      bytes = 0;
      for (Path file : regular) {
        bytes += Files.size(file);
      }
    }
    // stdout, so that JMH's output holds it whatever the log level.
    System.out.printf("%nMAINTENANCE-TABLE %s checkpoints=%d writers=%d maintainEvery=%d rowsPerFile=%d: %d "
        + "metadata bytes in %d files, %d live data files (%d to %d bytes) in %d manifests (%d deleted entries), "
        + "%d snapshots, %d rows%n",
        variant, checkpoints, writers, maintainEvery, rowsPerFile, bytes, count, files, smallest, largest, manifests,
        deletedEntries, snapshots, records.size());
    return table;
  }

  /** Maintenance rounds after every N commits on a thread of their own, as the tool and the Flink stage run them. */
  private static final class Rounds {
    private final IcebergMaintenance maintenance;
    private final int every;
    private final MaintenanceOptions options;
    private final ExecutorService thread = Executors.newSingleThreadExecutor(
        BenchFiles.daemonThreads("bench-maintenance"));
    private final AtomicBoolean running = new AtomicBoolean();
    private final AtomicInteger failed = new AtomicInteger();
    private final AtomicInteger ran = new AtomicInteger();
    private final AtomicInteger skippedHeld = new AtomicInteger();
    private final AtomicInteger leaseLost = new AtomicInteger();
    private int commits;
    private boolean lastSkipped;

    Rounds(IcebergMaintenance maintenance, int every) {
      this.maintenance = maintenance;
      this.every = every;
      this.options = MaintenanceOptions.builder().keepCheckpoints(1).expire(every, Duration.ZERO).build();
    }

    void committed() {
      if (++commits % every == 0) {
        lastSkipped = !running.compareAndSet(false, true);
        if (!lastSkipped) {
          thread.execute(this::round);
        }
      }
    }

    private void round() {
      try {
        var result = maintenance.round(options, "MaintenanceBenchmark");
        if (!result.ran()) {
          skippedHeld.incrementAndGet();
        } else if (result.leaseLost()) {
          leaseLost.incrementAndGet();
        } else {
          ran.incrementAndGet();
        }
      } catch (Exception e) {
        failed.incrementAndGet();
        LOG.warn("Maintenance round failed: {}", e.toString());
      } finally {
        running.set(false);
      }
    }

    /**
     * Waits for the running round; if the round due at the last commit was skipped because the one before still
     * ran (rounds outlast {@code maintainEvery} commits on a loaded machine), runs it then, so that the table is
     * always scanned right after a round, as the class comment says.
     */
    void close() throws InterruptedException {
      if (lastSkipped) {
        thread.execute(() -> {
          running.set(true);
          round();
        });
      }
      thread.shutdown();
      boolean ended = thread.awaitTermination(10, TimeUnit.MINUTES);
      // stdout, so that JMH's output holds it: rounds skipped because a lease was held show a lease not released
      System.out.printf("%nMAINTENANCE-ROUNDS ran %d, skipped while a lease was held %d, stopped by a lost lease %d,"
          + " failed %d%n", ran.get(), skippedHeld.get(), leaseLost.get(), failed.get());
      if (!ended || failed.get() > 0) {
        throw new IllegalStateException(failed.get() + " maintenance round(s) failed, or one never ended");
      }
    }
  }
}
