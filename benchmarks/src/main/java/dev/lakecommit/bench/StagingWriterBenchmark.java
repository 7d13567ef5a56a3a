package dev.lakecommit.bench;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriter;
import dev.lakecommit.staging.StagingWriterConfig;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.MetricsConfig;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.parquet.Parquet;
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
 * Writer throughput: Lakecommit's {@link StagingWriter} against Iceberg's bare Parquet appender (a
 * {@code DataWriter<Record>} from {@code Parquet.writeData(..)} with {@code GenericParquetWriter}, one file per
 * writer) on identical pre-generated records ({@link BenchRecords}, fixed seed), unpartitioned, same codec,
 * Parquet and metrics settings, same target file size, same local-disk {@code FileIO}
 * ({@code HadoopFileIO} on {@link FastLocalFileSystem}: no forked {@code chmod}, no checksum files).
 *
 * <p>One operation writes all {@code rows} records and closes the files: {@code writers} threads each write their
 * half (or all) through their own writer, then the staging writer runs {@code prepareCommit} (closes its file,
 * builds the manifest with column metrics) and the appender {@code close}s (builds its {@code DataFile}). Opening
 * the files is measured; generating records, creating directories and deleting the files are not. The secondary
 * result {@code rows} is rows/s; the goal is staging ÷ bare ≥ 0.9.
 *
 * <p>Run it (from the repository root):
 *
 * <pre>
 * mvn -q -T1 -pl benchmarks -am package -DskipTests
 * java -jar benchmarks/target/benchmarks.jar StagingWriterBenchmark -f 1 -wi 3 -i 5 -w 2s -r 2s
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@State(Scope.Benchmark)
public class StagingWriterBenchmark {
  private static final JobId JOB = JobId.of("bench");
  private static final long CHECKPOINT = 1;
  /** Far above what one writer writes in an operation, so both variants write exactly one file per writer. */
  private static final long TARGET_FILE_SIZE = 512L * 1024 * 1024;

  @Param({"zstd", "snappy"})
  public String codec;

  @Param({"1", "2"})
  public int writers;

  @Param({"100000"})
  public int rows;

  private List<List<Record>> slices;
  private Map<String, String> properties;
  private MetricsConfig metrics;
  private FileIO io;
  private ExecutorService pool;
  private Path root;
  private int invocation;

  /** This invocation's directory and the staging config over it. */
  private Path dir;
  private StagingWriterConfig stagingConfig;
  /** What the last operation wrote, checked outside the measurement. */
  private List<Written> written;

  /** Rows written, reported by JMH as rows/s. */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.OPERATIONS)
  public static class Rows {
    public long rows;

    @Setup(Level.Iteration)
    public void reset() {
      rows = 0;
    }
  }

  record Written(int files, long records) {}

  @Setup(Level.Trial)
  public void setUpTrial() throws IOException {
    List<Record> records = BenchRecords.generate(rows);
    slices = new ArrayList<>(writers);
    for (int w = 0; w < writers; w++) {
      slices.add(records.subList((int) ((long) rows * w / writers), (int) ((long) rows * (w + 1) / writers)));
    }
    properties =
        Map.of(
            TableProperties.PARQUET_COMPRESSION, codec,
            TableProperties.WRITE_TARGET_FILE_SIZE_BYTES, String.valueOf(TARGET_FILE_SIZE));
    metrics = MetricsConfig.from(properties, BenchRecords.SCHEMA, SortOrder.unsorted());
    io = new HadoopFileIO(FastLocalFileSystem.configuration());
    pool = Executors.newFixedThreadPool(writers, BenchFiles.daemonThreads("bench-writer"));
    root = Files.createTempDirectory("lakecommit-bench-writer-");
  }

  @Setup(Level.Invocation)
  public void setUpInvocation() throws IOException {
    dir = Files.createDirectories(root.resolve("op-" + invocation++));
    stagingConfig =
        StagingWriterConfig.builder()
            .schema(BenchRecords.SCHEMA)
            .properties(properties)
            .targetFileSizeBytes(TARGET_FILE_SIZE)
            .io(io)
            .layout(StagingLayout.under(dir.resolve("staging").toString()))
            .build();
  }

  @TearDown(Level.Invocation)
  public void tearDownInvocation() throws IOException {
    checkWritten();
    BenchFiles.deleteRecursively(dir);
  }

  @TearDown(Level.Trial)
  public void tearDownTrial() throws IOException {
    pool.shutdownNow();
    io.close();
    BenchFiles.deleteRecursively(root);
  }

  @Benchmark
  public List<Written> stagingWriter(Rows counter) throws Exception {
    written = runWriters(this::stage);
    counter.rows += rows;
    return written;
  }

  @Benchmark
  public List<Written> bareAppender(Rows counter) throws Exception {
    written = runWriters(this::append);
    counter.rows += rows;
    return written;
  }

  private Written stage(int writer) throws IOException {
    WriterContext context = new WriterContext(JOB, writer, writers, 0, 0);
    try (StagingWriter<Record> staging = StagingWriter.forRecords(stagingConfig, context)) {
      for (Record record : slices.get(writer)) {
        staging.write(record);
      }
      StagingManifest manifest = staging.prepareCommit(CHECKPOINT).orElseThrow();
      return new Written(manifest.files().size(), manifest.recordCount());
    }
  }

  private Written append(int writer) throws IOException {
    DataWriter<Record> appender =
        Parquet.writeData(io.newOutputFile(dir.resolve("bare-" + writer + ".parquet").toString()))
            .schema(BenchRecords.SCHEMA)
            .withSpec(PartitionSpec.unpartitioned())
            .setAll(properties)
            .metricsConfig(metrics)
            .createWriterFunc(GenericParquetWriter::create)
            .build();
    try (appender) {
      for (Record record : slices.get(writer)) {
        appender.write(record);
      }
    }
    DataFile file = appender.toDataFile();
    return new Written(1, file.recordCount());
  }

  private interface WriterTask {
    Written write(int writer) throws IOException;
  }

  /** Runs one task per writer on the pool, so one and two writers go through the same hand-off. */
  private List<Written> runWriters(WriterTask task) throws InterruptedException, ExecutionException {
    List<Future<Written>> futures = new ArrayList<>(writers);
    for (int w = 0; w < writers; w++) {
      int writer = w;
      futures.add(pool.submit(() -> task.write(writer)));
    }
    List<Written> result = new ArrayList<>(writers);
    for (Future<Written> future : futures) {
      result.add(future.get());
    }
    return result;
  }

  private void checkWritten() {
    if (written == null) {
      return;
    }
    long records = written.stream().mapToLong(Written::records).sum();
    int files = written.stream().mapToInt(Written::files).sum();
    written = null;
    if (records != rows || files != writers) {
      throw new IllegalStateException(
          String.format("Wrote %s records in %s files, expected %s records in %s files (one per writer)",
              records, files, rows, writers));
    }
  }
}
