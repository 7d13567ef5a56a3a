package dev.lakecommit.bench;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.JobListener;
import dev.lakecommit.core.runtime.JobResult;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.iceberg.IcebergSink;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
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
 * Pipelined commits (issue 19 item 1): the standalone runtime writing into an Iceberg table (Hadoop catalog on
 * local disk) at one checkpoint per second, for {@code jobSeconds} of reading, on a fast catalog and on one whose
 * every commit takes {@code commitDelayMillis} longer ({@link DelayedCommitCatalog}: the delay sits in the
 * catalog's table operations), with synchronous commits ({@code maxUncommitted=0}) and pipelined ones. The figure
 * is {@code rowsPerSecond}: rows committed ÷ the job's time from its start (after the restore and epoch claim) to
 * the end of its run, the final commits included; each run checks that the table holds exactly the rows read.
 * Pending appends are coalesced, so that a pipelined committer that fell behind catches up in one commit.
 *
 * <p>Run it: {@code java -cp "$CP" org.openjdk.jmh.Main PipelinedCommitBenchmark -f 1 -wi 1 -i 3 -rf json -rff
 * pipelined.json}. Goal: on the 500 ms catalog, pipelined rows/s at least 0.9× the fast catalog's.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 1)
@Measurement(iterations = 3)
public class PipelinedCommitBenchmark {
  private static final int DISTINCT_ROWS = 10_000;

  /** Added to every commit of the catalog. */
  @Param({"0", "500"})
  public int commitDelayMillis;

  /** The job's maxUncommittedCheckpoints: 0 commits synchronously. */
  @Param({"0", "2"})
  public int maxUncommitted;

  /** How long the source hands out rows. */
  @Param({"20"})
  public int jobSeconds;

  @Param({"1000"})
  public int checkpointMillis;

  @Param({"2"})
  public int writers;

  private Path root;
  private List<Record> rows;
  private int run;

  /** Rows committed per second of the job's run, and its checkpoints. */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.EVENTS)
  public static class Throughput {
    public double rowsPerSecond;
    public double checkpoints;
  }

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    root = Files.createTempDirectory("lakecommit-bench-pipelined-");
    rows = BenchRecords.generate(DISTINCT_ROWS);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    try (Stream<Path> files = Files.walk(root)) {
      for (Path path : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    }
  }

  @Benchmark
  public long job(Throughput throughput) throws Exception {
    run++;
    Path base = Files.createDirectory(root.resolve("run-" + run));
    Map<String, String> catalog = Map.of(
        "catalog-impl", DelayedCommitCatalog.class.getName(),
        DelayedCommitCatalog.COMMIT_DELAY_MS, Integer.toString(commitDelayMillis),
        "warehouse", base.resolve("warehouse").toString(),
        "fs.file.impl", FastLocalFileSystem.class.getName(),
        "fs.file.impl.disable.cache", "true");
    TableIdentifier table = TableIdentifier.of("bench", "pipelined");
    IcebergSinkConfig config = IcebergSinkConfig.builder()
        .catalogName("bench")
        .catalogProperties(catalog)
        .table(table)
        .createTable(BenchRecords.SCHEMA, List.of())
        .tableProperties(Map.of(TableProperties.FORMAT_VERSION, "2"))
        // A backlog of persisted checkpoints (commits slower than checkpoints) is caught up in one commit; with
        // synchronous commits there is never more than one pending, so both variants commit the same way.
        .coalescePendingAppends(true)
        .build();
    long[] started = {0};
    JobResult result;
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config)) {
      result = StandaloneJob.builder(sink, new TimedSource(rows, Duration.ofSeconds(jobSeconds)))
          .jobId(JobId.of("pipelined-" + run))
          .checkpointStore(new CheckpointStore(new LocalBlobStore(base.resolve("checkpoints"))))
          .parallelism(writers)
          .checkpointInterval(Duration.ofMillis(checkpointMillis))
          .maxUncommittedCheckpoints(maxUncommitted)
          .listener(new JobListener() {
            @Override
            public void onStart(int attempt, long restoredCheckpointId, long recordCount) {
              started[0] = System.nanoTime();
            }
          })
          .build()
          .run();
    }
    long nanos = System.nanoTime() - started[0];
    check(catalog, table, result);
    throughput.rowsPerSecond = result.recordCount() * 1e9 / nanos;
    throughput.checkpoints = result.checkpoints();
    return result.recordCount();
  }

  /** The table holds exactly the rows read. */
  private static void check(Map<String, String> catalog, TableIdentifier identifier, JobResult result) {
    Snapshot head = CommitChecks.catalog(catalog).loadTable(identifier).currentSnapshot();
    long total = head == null ? 0 : Long.parseLong(head.summary().get(SnapshotSummary.TOTAL_RECORDS_PROP));
    if (total != result.recordCount() || result.commits() < 1) {
      throw new IllegalStateException("Table " + identifier + " holds " + total + " rows in " + result.commits()
          + " commits; the job read " + result.recordCount() + " rows in " + result.checkpoints() + " checkpoints");
    }
  }

  /** Hands out the rows over and over until its time is up; the position is the count handed out. */
  private record TimedSource(List<Record> rows, Duration duration) implements CheckpointedSource<Record> {
    @Override
    public SourceReader<Record> open(byte[] position) {
      long start = position == null ? 0 : ByteBuffer.wrap(position).getLong();
      long deadline = System.nanoTime() + duration.toNanos();
      return new SourceReader<>() {
        private long next = start;

        @Override
        public Record next() {
          // The clock is read once per 1,000 rows: the source must not be what limits the job.
          if (next % 1000 == 0 && System.nanoTime() >= deadline) {
            return null;
          }
          return rows.get((int) (next++ % rows.size()));
        }

        @Override
        public byte[] position() {
          return ByteBuffer.allocate(8).putLong(next).array();
        }

        @Override
        public void close() {}
      };
    }
  }
}
