package dev.lakecommit.bench;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriter;
import dev.lakecommit.staging.StagingWriterConfig;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Real staged Parquet files for the commit benchmarks, prepared once per JVM and size and shared by every
 * variant, so all variants commit the same files.
 *
 * <p>Up to {@link #MAX_DISTINCT} distinct files are written by Lakecommit's {@link StagingWriter} ({@link
 * #ROWS_PER_FILE} rows of {@link BenchRecords} each, zstd, Iceberg's default metrics); beyond that, each further
 * file is a hard link (a copy where links are not supported) to one of them under its own name. Every pool entry
 * is therefore a real, readable Parquet file whose {@link StagedFile} (row count, size, column metrics, split
 * offsets) is what the staging writer reported for its bytes; only the path differs. Writing 100,000 distinct
 * files would take minutes per trial and is not what the commit benchmarks measure.
 */
final class StagedFilePool {
  private static final Logger LOG = LoggerFactory.getLogger(StagedFilePool.class);
  static final int MAX_DISTINCT = 256;
  static final int ROWS_PER_FILE = 20;
  private static final Map<Integer, StagedFilePool> POOLS = new ConcurrentHashMap<>();
  private static Path root;

  private final List<StagedFile> files;

  private StagedFilePool(List<StagedFile> files) {
    this.files = List.copyOf(files);
  }

  /** The pool of {@code count} files, staged on first use in this JVM and deleted when the JVM exits. */
  static StagedFilePool of(int count) {
    if (count < 1) {
      throw new IllegalArgumentException(String.format("Invalid file count: %s (must be > 0)", count));
    }
    return POOLS.computeIfAbsent(count, StagedFilePool::stage);
  }

  /** The files, in a fixed order. */
  List<StagedFile> files() {
    return files;
  }

  /** Rows in all files. */
  long records() {
    return files.stream().mapToLong(StagedFile::recordCount).sum();
  }

  /**
   * The files split into {@code writers} contiguous runs, one {@link StagingManifest} per writer that got at
   * least one file (without an Iceberg manifest), as {@code writers} staging writers would report them.
   */
  List<StagingManifest> manifests(JobId job, long checkpoint, int writers) {
    List<StagingManifest> manifests = new ArrayList<>(writers);
    for (int w = 0; w < writers; w++) {
      int from = (int) ((long) files.size() * w / writers);
      int to = (int) ((long) files.size() * (w + 1) / writers);
      if (from < to) {
        manifests.add(new StagingManifest(job, checkpoint, w, 0, files.subList(from, to)));
      }
    }
    return manifests;
  }

  private static StagedFilePool stage(int count) {
    long start = System.nanoTime();
    try {
      Path dir = Files.createDirectories(root().resolve("pool-" + count));
      List<StagedFile> distinct = writeDistinct(dir.resolve("staged"), Math.min(count, MAX_DISTINCT));
      List<StagedFile> files = new ArrayList<>(count);
      files.addAll(distinct);
      Path links = Files.createDirectories(dir.resolve("links"));
      for (int i = distinct.size(); i < count; i++) {
        StagedFile source = distinct.get(i % distinct.size());
        Path link = links.resolve(String.format("bench-1-%d-0-%d.parquet", i % MAX_DISTINCT, i));
        link(Path.of(source.path()), link);
        files.add(new StagedFile(link.toString(), source.format(), source.specId(), source.partitionPath(),
            source.partitionValues(), source.recordCount(), source.fileSizeInBytes(), source.metrics(),
            source.splitOffsets()));
      }
      LOG.info("Staged a pool of {} Parquet files ({} distinct) in {} ms", count, distinct.size(),
          (System.nanoTime() - start) / 1_000_000);
      return new StagedFilePool(files);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot stage a pool of " + count + " files", e);
    }
  }

  private static List<StagedFile> writeDistinct(Path dir, int count) throws IOException {
    StagingWriterConfig config =
        StagingWriterConfig.builder()
            .schema(BenchRecords.SCHEMA)
            .io(new HadoopFileIO(FastLocalFileSystem.configuration()))
            .layout(StagingLayout.under(dir.toString()))
            .maxRowsPerFile(ROWS_PER_FILE)
            .build();
    List<Record> records = BenchRecords.generate(count * ROWS_PER_FILE);
    WriterContext context = new WriterContext(JobId.of("bench-pool"), 0, 1, 0, 0);
    try (StagingWriter<Record> writer = StagingWriter.forRecords(config, context)) {
      for (Record record : records) {
        writer.write(record);
      }
      List<StagedFile> files = writer.prepareCommit(1).orElseThrow().files();
      if (files.size() != count) {
        throw new IllegalStateException(String.format("Staged %s files, expected %s", files.size(), count));
      }
      return files;
    }
  }

  private static void link(Path existing, Path link) throws IOException {
    try {
      Files.createLink(link, existing);
    } catch (UnsupportedOperationException | IOException e) {
      Files.copy(existing, link);
    }
  }

  private static synchronized Path root() throws IOException {
    if (root == null) {
      Path dir = Files.createTempDirectory("lakecommit-bench-pool-");
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          BenchFiles.deleteRecursively(dir);
        } catch (IOException e) {
          // best effort: a temporary directory
        }
      }, "bench-pool-cleanup"));
      root = dir;
    }
    return root;
  }
}
