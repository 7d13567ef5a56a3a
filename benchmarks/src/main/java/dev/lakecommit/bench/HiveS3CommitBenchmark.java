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
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import dev.lakecommit.staging.testing.FaultInjectingS3Proxy;
import dev.lakecommit.staging.testing.S3TestServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
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
 * The commit of one checkpoint of {@code files} files of about {@code fileMiB} MiB each (10 partitions) into a Hive
 * table on S3 (in-process S3 server on disk, S3A, a real metastore on loopback), by Lakecommit's Hive committer in
 * its two ways to put staged files in place:
 *
 * <ul>
 *   <li>{@code multipart}: the default on {@code s3a://}: each staged file is an S3 multipart upload (S3A's magic
 *       committer paths) that the commit only completes;
 *   <li>{@code copyRename}: {@code fs.s3a.committer.magic.enabled=false}, the path of other file systems: staged
 *       files under {@code .lakecommit-staging} renamed into their partitions, which on S3 is a copy and a delete.
 * </ul>
 *
 * <p>Each operation ({@code SingleShotTime}) commits a checkpoint staged afresh into a new table (staging excluded);
 * every request goes through the fault proxy (no faults), which counts server-side copies: the count of each
 * commit is printed, and a {@code multipart} commit that asked for one fails the run. Compare the modes' times in
 * one run. The server is S3Proxy: completing an upload there concatenates the parts into a new file (AWS S3 does
 * not move bytes), so the ratio measured here understates the gain on S3 itself.
 *
 * <pre>
 * mvn -q -T1 -pl benchmarks -am package dependency:build-classpath -Dmdep.outputFile=target/classpath.txt -DskipTests
 * java -cp benchmarks/target/classes:$(cat benchmarks/target/classpath.txt) org.openjdk.jmh.Main \
 *     HiveS3CommitBenchmark -f 1 -wi 1 -i 3                          # 100 files x 16 MiB
 * java -cp ... org.openjdk.jmh.Main HiveS3CommitBenchmark -f 1 -wi 1 -i 3 -p files=20 -p fileMiB=4   # reduced
 * </pre>
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx2g"})
@Warmup(iterations = 1)
@Measurement(iterations = 3)
@State(Scope.Benchmark)
public class HiveS3CommitBenchmark {
  private static final JobId JOB = JobId.of("bench-s3");
  private static final String BUCKET = "bench";
  private static final String DATABASE = "bench_s3";
  private static final int PARTITIONS = 10;
  private static final int PAYLOAD_CHARS = 1000;
  private static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "payload", Types.StringType.get()),
      Types.NestedField.required(3, "bucket", Types.IntegerType.get()));

  @Param({"multipart", "copyRename"})
  public String mode;

  @Param({"100"})
  public int files;

  @Param({"16"})
  public int fileMiB;

  private Path storeDir;
  private S3TestServer s3;
  private FaultInjectingS3Proxy proxy;
  private HiveMetastoreServer hms;
  private HiveMetaStoreClient client;
  private Configuration conf;
  private int tables;
  private String table;
  private HiveSink<Record> sink;
  private SinkAggregatedCommitter<StagingManifest, HiveCommittable> committer;
  private HiveCommittable committable;
  private long copiesBefore;

  @Setup(Level.Trial)
  public void setUpTrial() throws Exception {
    if (files % PARTITIONS != 0) {
      throw new IllegalArgumentException("Invalid files: " + files + " (must be a multiple of " + PARTITIONS + ")");
    }
    storeDir = Files.createTempDirectory("lakecommit-bench-s3-");
    s3 = S3TestServer.startOnDisk(storeDir, BUCKET);
    proxy = FaultInjectingS3Proxy.start(s3, 1);
    conf = proxy.s3aConfiguration();
    conf.set("fs.s3a.create.performance", "true");
    conf.set("fs.s3a.fast.upload.buffer", "disk");
    conf.set("fs.s3a.committer.magic.enabled", Boolean.toString(mode.equals("multipart")));
    Configuration direct = s3.s3aConfiguration();
    HiveMetastoreServer.Builder builder = HiveMetastoreServer.builder().derby();
    for (var entry : direct) {
      if (entry.getKey().startsWith("fs.s3a.")) {
        builder.serverConf(entry.getKey(), entry.getValue());
      }
    }
    hms = builder.start();
    client = hms.newClient();
    client.createDatabase(new Database(DATABASE, "benchmark", s3.s3aLocation(BUCKET, DATABASE + ".db"),
        new HashMap<>()));
  }

  @Setup(Level.Iteration)
  public void setUpIteration() throws Exception {
    table = "commit_" + (++tables);
    HiveSinkConfig.Builder config = HiveSinkConfig.builder().metastoreUri(hms.uri()).table(DATABASE + "." + table)
        .createTable(SCHEMA, List.of("bucket")).codec("uncompressed")
        .maxRowsPerFile((long) fileMiB * 1024 * 1024 / (PAYLOAD_CHARS + 8));
    for (var entry : conf) {
      if (entry.getKey().startsWith("fs.s3a.")) {
        config.hadoopProperty(entry.getKey(), entry.getValue());
      }
    }
    sink = HiveSink.forRecords(config.build());
    committer = sink.createAggregatedCommitter();
    committable = committer.combine(new CommitId(JOB, 1), List.of(stage()));
    copiesBefore = proxy.copyRequests();
  }

  @Benchmark
  public CommitOutcome commit() {
    CommitOutcome outcome = committer.commit(committable);
    if (!(outcome instanceof CommitOutcome.Committed)) {
      throw new IllegalStateException("The commit of " + table + " did not commit: " + outcome);
    }
    return outcome;
  }

  @TearDown(Level.Iteration)
  public void tearDownIteration() throws Exception {
    long copies = proxy.copyRequests() - copiesBefore;
    System.out.printf("%n%s: %s files, %.1f MiB staged, %s copy requests in the commit%n", mode,
        committable.fileCount(), committable.files().mapToLong(f -> f.fileSizeInBytes()).sum() / 1048576.0, copies);
    committer.close();
    org.apache.hadoop.fs.Path location =
        new org.apache.hadoop.fs.Path(client.getTable(DATABASE, table).getSd().getLocation());
    client.dropTable(DATABASE, table, false, true);
    try (FileSystem fs = FileSystem.newInstance(location.toUri(), conf)) {
      fs.delete(location, true);
    }
    if (mode.equals("multipart") && copies != 0) {
      throw new IllegalStateException("A commit of staged uploads asked for " + copies + " copies");
    }
  }

  @TearDown(Level.Trial)
  public void tearDownTrial() throws Exception {
    client.close();
    hms.close();
    proxy.close();
    s3.close();
    BenchFiles.deleteRecursively(storeDir);
  }

  /** One writer stages {@code files / 10} files of about {@code fileMiB} MiB in each of 10 partitions. */
  private StagingManifest stage() throws IOException {
    Random random = new Random(tables);
    long rowsPerFile = (long) fileMiB * 1024 * 1024 / (PAYLOAD_CHARS + 8);
    char[] payload = new char[PAYLOAD_CHARS];
    try (SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(JOB, 0, 1, 0, 0))) {
      Record template = GenericRecord.create(SCHEMA);
      long id = 0;
      for (int bucket = 0; bucket < PARTITIONS; bucket++) {
        for (long row = 0; row < rowsPerFile * (files / PARTITIONS); row++, id++) {
          for (int c = 0; c < PAYLOAD_CHARS; c++) {
            payload[c] = (char) ('!' + random.nextInt(90));
          }
          Record record = template.copy();
          record.setField("id", id);
          record.setField("payload", new String(payload));
          record.setField("bucket", bucket);
          writer.write(record);
        }
      }
      StagingManifest manifest = writer.prepareCommit(1).orElseThrow();
      if (manifest.files().size() != files) {
        throw new IllegalStateException(
            String.format("Staged %s files, expected %s", manifest.files().size(), files));
      }
      return manifest;
    }
  }
}
