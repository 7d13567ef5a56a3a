package dev.lakecommit.bench;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.hive.HiveCommittable;
import dev.lakecommit.hive.HiveSink;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
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
 * Committing one checkpoint that creates {@code partitions} new partitions of a Hive table (one staged Parquet
 * file each), through a real Hive Metastore Thrift server on loopback (hive-sink's {@code HiveMetastoreServer},
 * Hive 2.3.10 on embedded Derby): Lakecommit's {@code HiveAggregatedCommitter} against a committer that registers
 * each partition with its own {@code add_partition} call.
 *
 * <p>The files are staged once per trial by the sink's own staging writer and kept aside; before every operation
 * (one {@code SingleShotTime} iteration) the table is created afresh through the sink and the staged files are put
 * back where the writer left them (hard links). Both variants then start from the same staged files and an empty
 * table, and both move each file into its partition directory on the same local file system
 * ({@link FastLocalFileSystem}, 8 threads) before registering partitions:
 *
 * <ul>
 *   <li>{@code lakecommit}: {@code combine} + {@code commit} of the sink's aggregated committer: read the table and
 *       its watermark, look the partitions up ({@code get_partitions_by_names}), move the files, add the new
 *       partitions with their statistics in batches of {@code add_partitions} (500 per call), and swap in the
 *       watermark with a compare-and-swap {@code alter_table}.
 *   <li>{@code addPartitionEach}: read the table, move the files, then one {@code add_partition} call per
 *       partition with the same statistics parameters; no watermark, no idempotency.
 * </ul>
 *
 * <p>Excluded: staging, creating and dropping the table, restoring the staged files, and the checks after each
 * operation (every partition registered with its file in place; Lakecommit's watermark recorded).
 *
 * <p>Run it (from the repository root) on the plain classpath: in the shaded {@code benchmarks.jar} the metastore's
 * DataNucleus cannot find its plugins (one {@code plugin.xml} per jar, merged away by shading).
 *
 * <pre>
 * mvn -q -T1 -pl benchmarks -am package dependency:build-classpath -Dmdep.outputFile=target/classpath.txt -DskipTests
 * java -cp benchmarks/target/classes:$(cat benchmarks/target/classpath.txt) org.openjdk.jmh.Main \
 *     HivePartitionCommitBenchmark -f 1 -wi 3 -i 8
 * </pre>
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3)
@Measurement(iterations = 8)
@State(Scope.Benchmark)
public class HivePartitionCommitBenchmark {
  private static final JobId JOB = JobId.of("bench");
  private static final CommitId COMMIT = new CommitId(JOB, 1);
  private static final String DATABASE = "bench";
  private static final int ROWS_PER_PARTITION = 20;
  private static final int MOVE_THREADS = HiveSinkConfig.DEFAULT_MOVE_THREADS;
  static final Schema SCHEMA =
      new Schema(
          Types.NestedField.required(1, "event_id", Types.LongType.get()),
          Types.NestedField.optional(2, "customer", Types.StringType.get()),
          Types.NestedField.optional(3, "amount", Types.DoubleType.get()),
          Types.NestedField.optional(4, "quantity", Types.IntegerType.get()),
          Types.NestedField.required(5, "bucket", Types.IntegerType.get()));

  @Param({"1", "100", "1000"})
  public int partitions;

  private static int tables;

  private HiveMetaStoreClient client;
  private HiveSinkConfig config;
  private String tableName;
  private Path tableDir;
  private Path pool;
  private StagingManifest staged;
  private long records;
  private FileSystem fs;
  private ExecutorService movers;

  private SinkAggregatedCommitter<StagingManifest, HiveCommittable> committer;
  private boolean committedByLakecommit;
  private boolean committed;

  @Setup(Level.Trial)
  public void setUpTrial() throws Exception {
    client = SharedMetastore.get().newClient();
    tableName = "parts_" + nextTable();
    config =
        HiveSinkConfig.builder()
            .metastoreUri(SharedMetastore.get().uri())
            .hadoopProperty("fs.file.impl", FastLocalFileSystem.class.getName())
            .hadoopProperty("fs.file.impl.disable.cache", "true")
            .table(DATABASE + "." + tableName)
            .createTable(SCHEMA, List.of("bucket"))
            .build();
    fs = FileSystem.get(java.net.URI.create("file:///"), fastLocal());
    movers = Executors.newFixedThreadPool(MOVE_THREADS, BenchFiles.daemonThreads("bench-mover"));
    HiveSink<Record> sink = HiveSink.forRecords(config);
    tableDir = localPath(client.getTable(DATABASE, tableName).getSd().getLocation());
    staged = stage(sink);
    records = staged.recordCount();
    pool = Files.createTempDirectory("lakecommit-bench-hive-");
    for (int i = 0; i < staged.files().size(); i++) {
      Files.copy(localPath(staged.files().get(i).path()), pool.resolve(i + ".parquet"));
    }
    dropTable();
  }

  @Setup(Level.Iteration)
  public void setUpIteration() throws IOException {
    HiveSink<Record> sink = HiveSink.forRecords(config);
    for (int i = 0; i < staged.files().size(); i++) {
      Path path = localPath(staged.files().get(i).path());
      Files.createDirectories(path.getParent());
      Files.createLink(path, pool.resolve(i + ".parquet"));
    }
    committer = sink.createAggregatedCommitter();
    committed = false;
  }

  @TearDown(Level.Iteration)
  public void tearDownIteration() throws Exception {
    try {
      if (committed) {
        check();
      }
    } finally {
      committer.close();
      dropTable();
    }
  }

  @TearDown(Level.Trial)
  public void tearDownTrial() throws IOException {
    movers.shutdownNow();
    client.close();
    fs.close();
    BenchFiles.deleteRecursively(pool);
  }

  @Benchmark
  public CommitOutcome lakecommit() {
    CommitOutcome outcome = committer.commit(committer.combine(COMMIT, List.of(staged)));
    if (!(outcome instanceof CommitOutcome.Committed)) {
      throw new IllegalStateException("Commit of " + COMMIT + " did not commit: " + outcome);
    }
    committed = true;
    committedByLakecommit = true;
    return outcome;
  }

  @Benchmark
  public int addPartitionEach() throws Exception {
    Table table = client.getTable(DATABASE, tableName);
    org.apache.hadoop.fs.Path location = new org.apache.hadoop.fs.Path(table.getSd().getLocation());
    List<Future<Boolean>> moves = new ArrayList<>(staged.files().size());
    List<Partition> added = new ArrayList<>(staged.files().size());
    for (StagedFile file : staged.files()) {
      org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path(location, file.partitionPath());
      moves.add(movers.submit(() -> fs.mkdirs(dir)
          && fs.rename(new org.apache.hadoop.fs.Path(file.path()), new org.apache.hadoop.fs.Path(dir, file.fileName()))));
      added.add(partition(table, file, dir));
    }
    for (Future<Boolean> move : moves) {
      if (!move.get()) {
        throw new IOException("Could not move a staged file into " + location);
      }
    }
    for (Partition partition : added) {
      client.add_partition(partition);
    }
    committed = true;
    committedByLakecommit = false;
    return added.size();
  }

  /** One partition per staged file: the writer wrote each partition's rows into exactly one file. */
  private static Partition partition(Table table, StagedFile file, org.apache.hadoop.fs.Path dir) {
    StorageDescriptor sd = new StorageDescriptor(table.getSd());
    sd.setLocation(dir.toString());
    Map<String, String> parameters = new HashMap<>();
    parameters.put("numFiles", "1");
    parameters.put("numRows", Long.toString(file.recordCount()));
    parameters.put("totalSize", Long.toString(file.fileSizeInBytes()));
    parameters.put("COLUMN_STATS_ACCURATE", "{\"BASIC_STATS\":\"true\"}");
    Partition partition = new Partition();
    partition.setDbName(table.getDbName());
    partition.setTableName(table.getTableName());
    partition.setValues(List.of(file.partitionPath().substring(file.partitionPath().indexOf('=') + 1)));
    partition.setSd(sd);
    partition.setParameters(parameters);
    return partition;
  }

  /** One writer stages {@code partitions} partitions, one file of {@link #ROWS_PER_PARTITION} rows each. */
  private StagingManifest stage(HiveSink<Record> sink) throws IOException {
    try (SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(JOB, 0, 1, 0, 0))) {
      Record template = GenericRecord.create(SCHEMA);
      long id = 0;
      for (int bucket = 0; bucket < partitions; bucket++) {
        for (int row = 0; row < ROWS_PER_PARTITION; row++, id++) {
          Record record = template.copy();
          record.setField("event_id", id);
          record.setField("customer", "customer-" + (id * 7919 % 100_000));
          record.setField("amount", (id % 10_000) / 3.0);
          record.setField("quantity", (int) (id % 50));
          record.setField("bucket", bucket);
          writer.write(record);
        }
      }
      StagingManifest manifest = writer.prepareCommit(COMMIT.checkpointId()).orElseThrow();
      if (manifest.files().size() != partitions) {
        throw new IllegalStateException(
            String.format("Staged %s files for %s partitions, expected one each", manifest.files().size(),
                partitions));
      }
      return manifest;
    }
  }

  /** Every partition registered, with its file in its directory; Lakecommit's watermark recorded. */
  private void check() throws Exception {
    List<Partition> registered = client.listPartitions(DATABASE, tableName, (short) -1);
    long rows = 0;
    int files = 0;
    for (Partition partition : registered) {
      rows += Long.parseLong(partition.getParameters().getOrDefault("numRows", "0"));
      try (var listing = Files.list(localPath(partition.getSd().getLocation()))) {
        files += (int) listing.filter(p -> p.getFileName().toString().endsWith(".parquet")).count();
      }
    }
    Map<String, String> parameters = client.getTable(DATABASE, tableName).getParameters();
    String watermark = parameters.get(CommitId.watermarkKey(JOB));
    if (registered.size() != partitions || files != partitions || rows != records
        || (committedByLakecommit && !"1".equals(watermark))) {
      throw new IllegalStateException(String.format(
          "Table %s.%s after the commit: %s partitions, %s files, %s rows, watermark %s; expected %s, %s, %s%s",
          DATABASE, tableName, registered.size(), files, rows, watermark, partitions, partitions, records,
          committedByLakecommit ? ", 1" : ""));
    }
  }

  private void dropTable() throws Exception {
    client.dropTable(DATABASE, tableName, false, true);
    BenchFiles.deleteRecursively(tableDir);
  }

  private static synchronized int nextTable() {
    return tables++;
  }

  /** A local path from a location the metastore or the sink wrote: {@code file:/x} or {@code /x}. */
  private static Path localPath(String location) {
    return location.startsWith("file:") ? Path.of(java.net.URI.create(location)) : Path.of(location);
  }

  private static Configuration fastLocal() {
    return FastLocalFileSystem.configuration();
  }
}
