package dev.lakecommit.bench;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitProperties;
import dev.lakecommit.iceberg.IcebergCommittable;
import dev.lakecommit.iceberg.IcebergSink;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.staging.IcebergManifest;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestWriter;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.FileIO;
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
 * Commit latency of one checkpoint against the number of staged files and writers: Lakecommit's aggregated
 * commit against a bare Iceberg {@code AppendFiles} of the same files, and against one commit per writer (the
 * two-level baseline).
 *
 * <p>Every variant starts from the same input: the writers' {@link StagingManifest}s over the same real staged
 * Parquet files ({@link StagedFilePool}, staged once per JVM, outside the measurement), split into {@code writers}
 * contiguous runs. Every operation (one {@code SingleShotTime} iteration) commits them to a fresh, empty format-v2
 * table in a Hadoop catalog on local disk ({@link FastLocalFileSystem}); creating, checking and dropping the table
 * are outside the measurement. The measured time includes all manifest writing of the checkpoint:
 *
 * <ul>
 *   <li>{@code lakecommit}: each writer with at least the sink's {@code writerManifestMinFiles} (100) files
 *       writes the Iceberg manifest of its files, as {@code StagingWriter} does at {@code prepareCommit}
 *       ({@code ManifestFiles.write}, v2, no snapshot id), all writers at once on {@code writers} threads; then
 *       the aggregated committer combines and commits once (refreshes the table it read at the job's restart
 *       lookup, which is outside the measurement like the baselines' table load; checks the watermark, writes one
 *       manifest of the other writers' files, appends all manifests with a fast append, sets the watermark in
 *       the same transaction). Wall time of both steps.
 *   <li>{@code lakecommitSerialManifests}: the same, but the writers' manifests are written one after another on
 *       the committing thread: the total work of the checkpoint, no credit for the writers' parallelism.
 *   <li>{@code lakecommitAddFiles}: the same committer on a sink with {@code writeManifests(false)}: it adds every
 *       file to one fast append (the manifest is written inside the commit).
 *   <li>{@code bareAppend}: {@code table.newFastAppend()}, {@code appendFile} of every file, {@code commit()}.
 *   <li>{@code perWriterCommits}: one {@code newFastAppend()} commit per writer of its files, one after another
 *       (the best case of the two-level design: no conflicts between concurrent committers).
 * </ul>
 *
 * <p>Run it (from the repository root):
 *
 * <pre>
 * mvn -q -T1 -pl benchmarks -am package -DskipTests
 * java -jar benchmarks/target/benchmarks.jar CommitLatencyBenchmark -p files=1,100,10000 -f 1 -wi 5 -i 10
 * java -jar benchmarks/target/benchmarks.jar CommitLatencyBenchmark -p files=100000 -f 1 -wi 1 -i 3
 * </pre>
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms3g", "-Xmx3g"})
@Warmup(iterations = 5)
@Measurement(iterations = 10)
@State(Scope.Benchmark)
public class CommitLatencyBenchmark {
  private static final JobId JOB = JobId.of("bench");
  private static final long CHECKPOINT = 1;
  private static final CommitId COMMIT = new CommitId(JOB, CHECKPOINT);
  private static final int FORMAT_VERSION = 2;
  /** The sink's default, set explicitly so that the writers simulated here follow the sink's rule. */
  private static final int WRITER_MANIFEST_MIN_FILES = IcebergSinkConfig.DEFAULT_WRITER_MANIFEST_MIN_FILES;

  @Param({"1", "100", "10000", "100000"})
  public int files;

  @Param({"1", "8", "64"})
  public int writers;

  private StagedFilePool pool;
  private List<StagingManifest> staged;
  private Path root;
  private Map<String, String> catalogProperties;
  private Catalog catalog;
  private ExecutorService writerThreads;
  private int tableNumber;
  private boolean readBackDone;

  /** This iteration's table, as the sinks and the baselines see it. */
  private TableIdentifier identifier;
  private IcebergSink<?> sink;
  private SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committer;
  private SinkAggregatedCommitter<StagingManifest, IcebergCommittable> addFilesCommitter;
  private Table table;
  private CommitChecks.Expected expected;

  @Setup(Level.Trial)
  public void setUpTrial() throws IOException {
    pool = StagedFilePool.of(files);
    staged = pool.manifests(JOB, CHECKPOINT, writers);
    root = Files.createTempDirectory("lakecommit-bench-commit-");
    catalogProperties =
        Map.of(
            "type", "hadoop",
            "warehouse", root.resolve("warehouse").toString(),
            "fs.file.impl", FastLocalFileSystem.class.getName(),
            "fs.file.impl.disable.cache", "true");
    catalog = CommitChecks.catalog(catalogProperties);
    writerThreads = Executors.newFixedThreadPool(staged.size(), BenchFiles.daemonThreads("bench-writer"));
  }

  @Setup(Level.Iteration)
  public void setUpIteration() throws IOException {
    identifier = TableIdentifier.of("db", "t" + tableNumber++);
    sink = IcebergSink.forRecords(config(true));
    committer = sink.createAggregatedCommitter();
    addFilesCommitter = IcebergSink.forRecords(config(false)).createAggregatedCommitter();
    // The committers load the table outside the measurement, like the baselines' table load.
    for (var target : List.of(committer, addFilesCommitter)) {
      if (((SupportsCommitProperties) target).currentProperties().containsKey(CommitId.watermarkKey(JOB))) {
        throw new IllegalStateException("Table " + identifier + " is not new");
      }
    }
    table = catalog.loadTable(identifier);
    expected = null;
  }

  @TearDown(Level.Iteration)
  public void tearDownIteration() throws Exception {
    try {
      if (expected != null) {
        Table committed = catalog.loadTable(identifier);
        CommitChecks.check(committed, expected, files, pool.records());
        if (!readBackDone && files <= 100) {
          CommitChecks.readBack(committed, pool.records());
          readBackDone = true;
        }
      }
    } finally {
      committer.close();
      addFilesCommitter.close();
      catalog.dropTable(identifier, false);
      BenchFiles.deleteRecursively(root.resolve("warehouse").resolve("db").resolve(identifier.name()));
    }
  }

  @TearDown(Level.Trial)
  public void tearDownTrial() throws IOException {
    writerThreads.shutdownNow();
    BenchFiles.deleteRecursively(root);
  }

  @Benchmark
  public CommitOutcome lakecommit() throws Exception {
    // Only the writers that write a manifest have work at prepareCommit: the others report as they are, without
    // a thread hand-off that no real writer would pay.
    List<Future<StagingManifest>> futures = new ArrayList<>(staged.size());
    for (StagingManifest manifest : staged) {
      futures.add(writesManifest(manifest)
          ? writerThreads.submit(() -> asReported(manifest))
          : java.util.concurrent.CompletableFuture.completedFuture(manifest));
    }
    List<StagingManifest> reported = new ArrayList<>(staged.size());
    for (Future<StagingManifest> future : futures) {
      reported.add(future.get());
    }
    return aggregatedCommit(committer, reported, expectedManifests(reported));
  }

  @Benchmark
  public CommitOutcome lakecommitSerialManifests() throws IOException {
    List<StagingManifest> reported = new ArrayList<>(staged.size());
    for (StagingManifest manifest : staged) {
      reported.add(asReported(manifest));
    }
    return aggregatedCommit(committer, reported, expectedManifests(reported));
  }

  @Benchmark
  public CommitOutcome lakecommitAddFiles() {
    return aggregatedCommit(addFilesCommitter, staged, CommitChecks.Expected.lakecommitAddedFiles());
  }

  @Benchmark
  public long bareAppend() {
    PartitionSpec spec = table.spec();
    AppendFiles append = table.newFastAppend();
    for (StagingManifest manifest : staged) {
      for (StagedFile file : manifest.files()) {
        append.appendFile(file.toDataFile(spec));
      }
    }
    append.commit();
    expected = CommitChecks.Expected.snapshots(1);
    return table.currentSnapshot().snapshotId();
  }

  @Benchmark
  public long perWriterCommits() {
    PartitionSpec spec = table.spec();
    for (StagingManifest manifest : staged) {
      AppendFiles append = table.newFastAppend();
      for (StagedFile file : manifest.files()) {
        append.appendFile(file.toDataFile(spec));
      }
      append.commit();
    }
    expected = CommitChecks.Expected.snapshots(staged.size());
    return table.currentSnapshot().snapshotId();
  }

  private CommitOutcome aggregatedCommit(
      SinkAggregatedCommitter<StagingManifest, IcebergCommittable> target, List<StagingManifest> reported,
      CommitChecks.Expected expectation) {
    IcebergCommittable committable = target.combine(COMMIT, reported);
    CommitOutcome outcome = target.commit(committable);
    if (!(outcome instanceof CommitOutcome.Committed)) {
      throw new IllegalStateException("Commit of " + COMMIT + " did not commit: " + outcome);
    }
    expected = expectation;
    return outcome;
  }

  /**
   * A writer's report as {@code StagingWriter} makes it at {@code prepareCommit} with writer manifests on: with
   * an Iceberg manifest of its files if it has at least {@link #WRITER_MANIFEST_MIN_FILES} of them.
   */
  private StagingManifest asReported(StagingManifest manifest) throws IOException {
    if (!writesManifest(manifest)) {
      return manifest;
    }
    Table target = sink.table();
    PartitionSpec spec = target.spec();
    FileIO io = target.io();
    StagingLayout layout = sink.layout();
    String location = layout.manifestLocation(JOB, CHECKPOINT, manifest.writerIndex(), manifest.attempt());
    ManifestWriter<DataFile> writer = ManifestFiles.write(FORMAT_VERSION, spec, io.newOutputFile(location), null);
    try (writer) {
      for (StagedFile file : manifest.files()) {
        writer.add(file.toDataFile(spec));
      }
    }
    return new StagingManifest(manifest.jobId(), manifest.checkpointId(), manifest.writerIndex(),
        manifest.attempt(), manifest.files(), Optional.of(IcebergManifest.of(writer.toManifestFile())));
  }

  private static boolean writesManifest(StagingManifest manifest) {
    return manifest.files().size() >= WRITER_MANIFEST_MIN_FILES;
  }

  /** The writers' manifests, and the committer's one manifest if any writer reported too few files for its own. */
  private static CommitChecks.Expected expectedManifests(List<StagingManifest> reported) {
    int writerManifests = (int) reported.stream().filter(m -> m.icebergManifest().isPresent()).count();
    return CommitChecks.Expected.lakecommit(writerManifests + (writerManifests < reported.size() ? 1 : 0));
  }

  private IcebergSinkConfig config(boolean writeManifests) {
    return IcebergSinkConfig.builder()
        .catalogName("bench")
        .catalogProperties(catalogProperties)
        .table(identifier)
        .createTable(BenchRecords.SCHEMA, List.of())
        .tableProperties(Map.of(TableProperties.FORMAT_VERSION, String.valueOf(FORMAT_VERSION)))
        .writeManifests(writeManifests)
        .writerManifestMinFiles(WRITER_MANIFEST_MIN_FILES)
        .build();
  }
}
