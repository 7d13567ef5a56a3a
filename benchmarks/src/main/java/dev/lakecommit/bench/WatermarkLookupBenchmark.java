package dev.lakecommit.bench;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.Transaction;
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
import org.openjdk.jmh.annotations.Warmup;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Restart lookup of a job's last committed checkpoint on loaded table metadata: Lakecommit's watermark (the
 * {@code lakecommit.committed.<job-id>} table property, O(1)) against walking snapshot ancestry from the head for
 * the newest snapshot whose summary carries the job id (how Iceberg's Flink committer finds it).
 *
 * <p>The table (format v2, kept in memory by {@link MemoryTableOperations}) is prepared once per trial with
 * {@code snapshots} real Iceberg commits (fast appends in transactions): the job under test committed the oldest
 * snapshot, with one data file, and another job every later one, without files (each commit sets its job's
 * summary keys and watermark in one transaction), so the walk has to visit every snapshot — the case a shared
 * table, or compaction after the job's last commit, produces. The other job's commits carry no files so that
 * preparing 10,000 snapshots takes seconds, not hours (each commit would otherwise rewrite a manifest list as
 * long as the history, and the in-memory catalog re-serialises the whole metadata); the lookups read only
 * snapshot summaries and parent ids, which are the same either way. Loading the metadata is excluded: it is the
 * same for both and linear in the snapshots either way (the metadata file lists them all).
 *
 * <p>Goal: the watermark lookup is flat in the number of snapshots; the README reports its time at 10,000
 * snapshots divided by its time at 10.
 *
 * <p>Run it (from the repository root):
 *
 * <pre>
 * mvn -q -T1 -pl benchmarks -am package -DskipTests
 * java -jar benchmarks/target/benchmarks.jar WatermarkLookupBenchmark -f 2 -wi 3 -i 5 -w 1s -r 1s
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@State(Scope.Benchmark)
public class WatermarkLookupBenchmark {
  private static final JobId JOB = JobId.of("restarting-job");
  private static final JobId OTHER_JOB = JobId.of("other-job");
  private static final ExecutorService DIRECT = BenchFiles.directExecutor();
  private static final Logger LOG = LoggerFactory.getLogger(WatermarkLookupBenchmark.class);
  private static final String WATERMARK_KEY = CommitId.watermarkKey(JOB);

  @Param({"10", "1000", "10000"})
  public int snapshots;

  private TableMetadata metadata;

  @Setup(Level.Trial)
  public void setUp() {
    long start = System.nanoTime();
    MemoryTableOperations ops =
        MemoryTableOperations.create(BenchRecords.SCHEMA, Map.of(TableProperties.FORMAT_VERSION, "2"));
    Table table = new BaseTable(ops, "bench.events");
    commit(table, JOB, 1, true);
    for (int i = 2; i <= snapshots; i++) {
      commit(table, OTHER_JOB, i, false);
    }
    metadata = ops.refresh();
    if (metadata.snapshots().size() != snapshots || ancestryWalk() != 1 || watermarkProperty() != 1) {
      throw new IllegalStateException("Table not prepared as expected: " + metadata.snapshots().size()
          + " snapshots");
    }
    LOG.info("Prepared {} snapshots in {} ms", snapshots, (System.nanoTime() - start) / 1_000_000);
  }

  @Benchmark
  public long watermarkProperty() {
    String value = metadata.properties().get(WATERMARK_KEY);
    return value == null ? -1 : Long.parseLong(value);
  }

  @Benchmark
  public long ancestryWalk() {
    Snapshot snapshot = metadata.currentSnapshot();
    while (snapshot != null) {
      Map<String, String> summary = snapshot.summary();
      if (summary != null && JOB.value().equals(summary.get(CommitId.JOB_ID_KEY))) {
        return Long.parseLong(summary.get(CommitId.CHECKPOINT_ID_KEY));
      }
      Long parent = snapshot.parentId();
      snapshot = parent == null ? null : metadata.snapshot(parent);
    }
    return -1;
  }

  /** One real commit: the job's summary keys and watermark in one transaction; a data file if asked. */
  private static void commit(Table table, JobId job, long checkpoint, boolean withFile) {
    Transaction txn = table.newTransaction();
    // The manifest-list step on the committing thread: Iceberg's worker pool is polled every 10 ms, which would
    // make preparing 10,000 snapshots take minutes.
    AppendFiles append = txn.newFastAppend().scanManifestsWith(DIRECT);
    if (withFile) {
      append.appendFile(
          DataFiles.builder(PartitionSpec.unpartitioned())
              .withPath(table.location() + "/data/" + job.value() + "-" + checkpoint + ".parquet")
              .withFormat(FileFormat.PARQUET)
              .withFileSizeInBytes(1024)
              .withRecordCount(10)
              .build());
    }
    append
        .set(CommitId.JOB_ID_KEY, job.value())
        .set(CommitId.CHECKPOINT_ID_KEY, String.valueOf(checkpoint))
        .commit();
    txn.updateProperties().set(CommitId.watermarkKey(job), String.valueOf(checkpoint)).commit();
    txn.commitTransaction();
  }
}
