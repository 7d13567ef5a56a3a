package dev.lakecommit.bench;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.inmemory.InMemoryCatalog;
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
 * Restart lookup of a job's last committed checkpoint on loaded table metadata: Lakecommit's watermark (the
 * {@code lakecommit.committed.<job-id>} table property, O(1)) against walking snapshot ancestry from the head for
 * the newest snapshot whose summary carries the job id (how Iceberg's Flink committer finds it).
 *
 * <p>The table (Iceberg's {@code InMemoryCatalog}, format v2) is prepared once per trial with {@code snapshots}
 * real commits, one fake data file each: the job under test committed the oldest snapshot and another job every
 * later one (each commit sets its job's summary keys and watermark in one transaction), so the walk has to visit
 * every snapshot — the case a shared table, or compaction after the job's last commit, produces. Loading the
 * metadata is excluded: it is the same for both and linear in the snapshots either way (the metadata file lists
 * them all).
 *
 * <p>Run it (from the repository root):
 *
 * <pre>
 * mvn -q -T1 -pl benchmarks -am package -DskipTests
 * java -jar benchmarks/target/benchmarks.jar WatermarkLookupBenchmark -f 1 -wi 3 -i 5 -w 1s -r 1s
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
  private static final String WATERMARK_KEY = CommitId.watermarkKey(JOB);

  @Param({"10", "1000"})
  public int snapshots;

  private InMemoryCatalog catalog;
  private TableMetadata metadata;

  @Setup(Level.Trial)
  public void setUp() {
    catalog = new InMemoryCatalog();
    catalog.initialize("bench", Map.of());
    catalog.createNamespace(Namespace.of("db"));
    Table table =
        catalog.createTable(
            TableIdentifier.of("db", "events"), BenchRecords.SCHEMA, PartitionSpec.unpartitioned(),
            Map.of(TableProperties.FORMAT_VERSION, "2"));
    commit(table, JOB, 1);
    for (int i = 2; i <= snapshots; i++) {
      commit(table, OTHER_JOB, i);
    }
    table.refresh();
    metadata = ((HasTableOperations) table).operations().current();
    if (metadata.snapshots().size() != snapshots || ancestryWalk() != 1 || watermarkProperty() != 1) {
      throw new IllegalStateException("Table not prepared as expected: " + metadata.snapshots().size()
          + " snapshots");
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    catalog.close();
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

  private static void commit(Table table, JobId job, long checkpoint) {
    DataFile file =
        DataFiles.builder(PartitionSpec.unpartitioned())
            .withPath(table.location() + "/data/" + job.value() + "-" + checkpoint + ".parquet")
            .withFormat(FileFormat.PARQUET)
            .withFileSizeInBytes(1024)
            .withRecordCount(10)
            .build();
    Transaction txn = table.newTransaction();
    txn.newFastAppend()
        .appendFile(file)
        .set(CommitId.JOB_ID_KEY, job.value())
        .set(CommitId.CHECKPOINT_ID_KEY, String.valueOf(checkpoint))
        .commit();
    txn.updateProperties().set(CommitId.watermarkKey(job), String.valueOf(checkpoint)).commit();
    txn.commitTransaction();
  }
}
