package dev.lakecommit.bench;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.iceberg.CutCommitter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Types;
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
 * One checkpoint of a job that writes {@code tables} tables of an Iceberg JDBC catalog (SQLite on local disk, as the
 * tool's embedded catalog), one data file per table:
 *
 * <ul>
 *   <li>{@code atomicCut}: the whole checkpoint as one cut ({@link CutCommitter} on the JDBC catalog: each table's
 *       new metadata written, then every pointer swapped in one database transaction), with the idempotency and
 *       epoch checks of every table;
 *   <li>{@code oneTableCommits}: the baseline, what a job of one sink per table does: one Iceberg transaction per
 *       table (the file appended, the job's watermark property set), one after another.
 * </ul>
 *
 * <p>Each invocation commits the next checkpoint to the same tables (created once per fork, outside the
 * measurement), so both variants meet tables of the same history. The data files are not read by a commit: their
 * entries name files that need not exist.
 *
 * <pre>
 * java -cp $CP org.openjdk.jmh.Main CutCommitBenchmark -p tables=100 -f 1 -wi 3 -i 10
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3)
@Measurement(iterations = 10)
@Fork(1)
public class CutCommitBenchmark {
  private static final JobId JOB = JobId.of("cut-bench");
  private static final Schema SCHEMA = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  @Param({"100"})
  public int tables;

  private Path dir;
  private Map<String, String> properties;
  private Catalog catalog;
  private CutCommitter cut;
  private List<TableIdentifier> identifiers;
  private RunEpoch epoch;
  private long checkpoint;

  @Setup(Level.Trial)
  public void createTables() throws IOException {
    dir = Files.createTempDirectory("cut-bench");
    // the tool's embedded catalog: Hadoop's local file system without a chmod process per directory
    properties = Map.of("type", "jdbc", "uri", "jdbc:sqlite:" + dir.resolve("catalog.db"), "warehouse",
        dir.resolve("warehouse").toUri().toString(), "jdbc.schema-version", "V1", "fs.file.impl",
        dev.lakecommit.staging.NoForkLocalFileSystem.class.getName());
    catalog = CatalogUtil.buildIcebergCatalog("bench", properties, dev.lakecommit.iceberg.HadoopConfs.from(properties));
    ((SupportsNamespaces) catalog).createNamespace(Namespace.of("bench"));
    identifiers = new ArrayList<>();
    for (int i = 0; i < tables; i++) {
      TableIdentifier table = TableIdentifier.of("bench", "t" + i);
      catalog.createTable(table, SCHEMA, PartitionSpec.unpartitioned(), Map.of("format-version", "2"));
      identifiers.add(table);
    }
    cut = CutCommitter.forCatalog(catalog, properties, null, true);
    epoch = cut.claim(JOB, "benchmark", identifiers);
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    cut.close();
    if (catalog instanceof java.io.Closeable closeable) {
      closeable.close();
    }
    BenchFiles.deleteRecursively(dir);
  }

  private DataFile file(TableIdentifier table, long id) {
    return DataFiles.builder(PartitionSpec.unpartitioned()).withPath(dir + "/data/" + table + "-" + id + ".parquet")
        .withFileSizeInBytes(4096).withRecordCount(100).withFormat(FileFormat.PARQUET).build();
  }

  @Benchmark
  public CommitOutcome atomicCut() {
    long id = ++checkpoint;
    Map<TableIdentifier, List<DataFile>> files = new LinkedHashMap<>();
    for (TableIdentifier table : identifiers) {
      files.put(table, List.of(file(table, id)));
    }
    CommitOutcome outcome = cut.commit(new CommitId(JOB, id), epoch.epoch(), files, Map.of());
    if (!(outcome instanceof CommitOutcome.Committed)) {
      throw new IllegalStateException("Cut of checkpoint " + id + " did not commit: " + outcome);
    }
    return outcome;
  }

  @Benchmark
  public long oneTableCommits() {
    long id = ++checkpoint;
    for (TableIdentifier table : identifiers) {
      Table loaded = catalog.loadTable(table);
      Transaction transaction = loaded.newTransaction();
      transaction.newFastAppend().appendFile(file(table, id)).set(CommitId.JOB_ID_KEY, JOB.value())
          .set(CommitId.CHECKPOINT_ID_KEY, Long.toString(id)).commit();
      transaction.updateProperties().set(CommitId.watermarkKey(JOB), Long.toString(id)).commit();
      transaction.commitTransaction();
    }
    return id;
  }
}
