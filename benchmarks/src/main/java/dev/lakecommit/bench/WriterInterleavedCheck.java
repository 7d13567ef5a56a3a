package dev.lakecommit.bench;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingWriter;
import dev.lakecommit.staging.StagingWriterConfig;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.MetricsConfig;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.parquet.Parquet;

/**
 * A cross-check of {@link StagingWriterBenchmark} for a noisy machine: the same two writers on the same records,
 * <b>interleaved</b> in one JVM (bare appender, then staging writer, round after round), so that load changes hit
 * both alike; JMH runs one variant's forks after the other's. Prints the median time per file of each and the
 * throughput ratio staging ÷ bare. One writer, unpartitioned, same codec and properties as the benchmark.
 *
 * <pre>
 * java -cp "$CP" dev.lakecommit.bench.WriterInterleavedCheck zstd 30     # codec, measured rounds [, rows]
 * </pre>
 */
public final class WriterInterleavedCheck {
  private static final int WARM_UP_ROUNDS = 5;

  private WriterInterleavedCheck() {}

  public static void main(String[] args) throws IOException {
    String codec = args.length > 0 ? args[0] : "zstd";
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 30;
    int rows = args.length > 2 ? Integer.parseInt(args[2]) : 100_000;
    List<Record> records = BenchRecords.generate(rows);
    Map<String, String> properties = Map.of(TableProperties.PARQUET_COMPRESSION, codec);
    MetricsConfig metrics = MetricsConfig.from(properties, BenchRecords.SCHEMA, SortOrder.unsorted());
    HadoopFileIO io = new HadoopFileIO(FastLocalFileSystem.configuration());
    Path root = Files.createTempDirectory("lakecommit-bench-interleaved-");
    long[] bare = new long[rounds];
    long[] staging = new long[rounds];
    try {
      for (int round = -WARM_UP_ROUNDS; round < rounds; round++) {
        Path dir = Files.createDirectories(root.resolve("round-" + (round + WARM_UP_ROUNDS)));
        long start = System.nanoTime();
        DataWriter<Record> appender = Parquet.writeData(io.newOutputFile(dir.resolve("bare.parquet").toString()))
            .schema(BenchRecords.SCHEMA).withSpec(PartitionSpec.unpartitioned()).setAll(properties)
            .metricsConfig(metrics).createWriterFunc(GenericParquetWriter::create).build();
        try (appender) {
          for (Record record : records) {
            appender.write(record);
          }
        }
        long bareDone = System.nanoTime();
        StagingWriterConfig config = StagingWriterConfig.builder().schema(BenchRecords.SCHEMA)
            .properties(properties).targetFileSizeBytes(512L << 20).io(io)
            .layout(StagingLayout.under(dir.resolve("staging").toString())).build();
        try (StagingWriter<Record> writer =
            StagingWriter.forRecords(config, new WriterContext(JobId.of("interleaved"), 0, 1, 0, 0))) {
          for (Record record : records) {
            writer.write(record);
          }
          writer.prepareCommit(1).orElseThrow();
        }
        long stagingDone = System.nanoTime();
        if (round >= 0) {
          bare[round] = bareDone - start;
          staging[round] = stagingDone - bareDone;
        }
        BenchFiles.deleteRecursively(dir);
      }
    } finally {
      BenchFiles.deleteRecursively(root);
    }
    Arrays.sort(bare);
    Arrays.sort(staging);
    long bareMedian = bare[rounds / 2];
    long stagingMedian = staging[rounds / 2];
    System.out.printf("%s, %,d rows, %d interleaved rounds: bare appender median %.1f ms, staging writer median "
            + "%.1f ms; throughput staging / bare = %.3f%n",
        codec, rows, rounds, bareMedian / 1e6, stagingMedian / 1e6, (double) bareMedian / stagingMedian);
  }
}
