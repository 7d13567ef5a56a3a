package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Supplier;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RewriteFiles;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.util.PropertyUtil;
import org.apache.iceberg.util.SnapshotUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Bin-packing compaction of small data files, per partition, committed with {@code RewriteFiles}. Rows are read
 * with the deletes that apply to them at the planned snapshot (Iceberg's {@link GenericDeleteFilter}) and the new
 * files carry that snapshot's sequence number as their data sequence number, so equality deletes committed after
 * it (upserts running meanwhile) still apply to them; the rewrite is validated from the planned snapshot, so a
 * concurrent rewrite of the same files or new position deletes against them make it fail, and it is dropped.
 * Appends since the plan never conflict: a commit that only lost races to them is retried
 * ({@link MaintenanceCommits}).
 * Only Parquet files of format-version 2+ tables are compacted.
 */
public final class Compaction {
  private static final Logger LOG = LoggerFactory.getLogger(Compaction.class);
  /** Summary key of maintenance snapshots, so that they are told apart from checkpoint commits. */
  public static final String MAINTENANCE_KEY = "lakecommit.maintenance";

  private Compaction() {}

  /** One output file: the small files of one partition it replaces. */
  public record Bin(int specId, String partition, List<FileScanTask> tasks, long bytes, long records) {
    /** The data files this bin replaces. */
    public List<DataFile> files() {
      return tasks.stream().map(FileScanTask::file).toList();
    }
  }

  /** What a compaction would do; {@code snapshotId} is -1 for an empty table. */
  public record Plan(long snapshotId, long sequenceNumber, long targetFileSize, List<Bin> bins) {
    public int files() {
      return bins.stream().mapToInt(b -> b.tasks().size()).sum();
    }
  }

  /** How a compaction ended. */
  public enum Outcome { NOTHING_TO_DO, COMMITTED, DROPPED_CONFLICT, UNKNOWN }

  /**
   * {@code snapshotId} is the rewrite's snapshot when committed; {@code reason} says why it was dropped;
   * {@code commitAttempts} counts the catalog attempts of its commit, {@code lostRaces} those that lost to another
   * commit (retried: see {@link MaintenanceCommits}).
   */
  public record Result(Outcome outcome, long snapshotId, int filesRewritten, int filesAdded, String reason,
      int commitAttempts, int lostRaces) {
    Result(Outcome outcome, String reason) {
      this(outcome, -1, 0, 0, reason, 0, 0);
    }
  }

  static Plan plan(Table table, int keepCheckpoints) {
    if (keepCheckpoints < 0) {
      throw new IllegalArgumentException(
          String.format("Invalid checkpoints to keep: %s (must be >= 0)", keepCheckpoints));
    }
    Snapshot current = table.currentSnapshot();
    long target = PropertyUtil.propertyAsLong(table.properties(), TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
        TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT);
    if (current == null || ((org.apache.iceberg.HasTableOperations) table).operations().current().formatVersion() < 2) {
      return new Plan(current == null ? -1 : current.snapshotId(), 0, target, List.of());
    }
    long boundary = boundarySequenceNumber(table, current, keepCheckpoints);
    long small = target * 3 / 4;
    Map<String, List<FileScanTask>> byPartition = new LinkedHashMap<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().useSnapshot(current.snapshotId()).planFiles()) {
      for (FileScanTask task : tasks) {
        DataFile file = task.file();
        Long added = file.fileSequenceNumber();
        if (file.format() == FileFormat.PARQUET && file.fileSizeInBytes() < small && added != null
            && added < boundary) {
          PartitionSpec spec = table.specs().get(file.specId());
          byPartition.computeIfAbsent(file.specId() + "|" + spec.partitionToPath(file.partition()),
              k -> new ArrayList<>()).add(task);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<Bin> bins = new ArrayList<>();
    byPartition.forEach((key, files) -> {
      files.sort(java.util.Comparator.comparing(task -> task.file().location()));
      List<FileScanTask> bin = new ArrayList<>();
      long bytes = 0;
      for (FileScanTask task : files) {
        if (!bin.isEmpty() && bytes + task.file().fileSizeInBytes() > target) {
          addBin(bins, table, bin, bytes);
          bin = new ArrayList<>();
          bytes = 0;
        }
        bin.add(task);
        bytes += task.file().fileSizeInBytes();
      }
      addBin(bins, table, bin, bytes);
    });
    return new Plan(current.snapshotId(), current.sequenceNumber(), target, List.copyOf(bins));
  }

  private static void addBin(List<Bin> bins, Table table, List<FileScanTask> tasks, long bytes) {
    if (tasks.size() < 2) {
      return; // one file alone is not made any bigger by rewriting it
    }
    DataFile first = tasks.get(0).file();
    bins.add(new Bin(first.specId(), table.specs().get(first.specId()).partitionToPath(first.partition()),
        List.copyOf(tasks), bytes, tasks.stream().mapToLong(task -> task.file().recordCount()).sum()));
  }

  /**
   * Files added at or after this sequence number belong to the newest {@code keep} checkpoint commits of the main
   * branch and are left alone. With fewer such commits in the history, nothing is old enough.
   */
  private static long boundarySequenceNumber(Table table, Snapshot current, int keep) {
    if (keep == 0) {
      return Long.MAX_VALUE;
    }
    int seen = 0;
    for (Snapshot snapshot : SnapshotUtil.ancestorsOf(current.snapshotId(), table::snapshot)) {
      if (snapshot.summary() != null && snapshot.summary().containsKey(CommitId.CHECKPOINT_ID_KEY)
          && ++seen == keep) {
        return snapshot.sequenceNumber();
      }
    }
    return Long.MIN_VALUE;
  }

  /** Rewrites the plan's bins, reading {@code table}, and commits them to the table as {@code load} reads it then. */
  static Result run(Table table, Supplier<Table> load, Plan plan, Runnable beforeCommit) throws IOException {
    if (plan.bins().isEmpty()) {
      return new Result(Outcome.NOTHING_TO_DO, "no partition has two or more small files");
    }
    List<DataFile> written = new ArrayList<>();
    MaintenanceCommits.Attempts attempts;
    try {
      for (Bin bin : plan.bins()) {
        written.add(rewrite(table, plan, bin));
      }
      beforeCommit.run();
      // Every attempt is validated from the planned snapshot: appends since then never conflict, new deletes of
      // the replaced files do (and drop the compaction); lost races are retried (see MaintenanceCommits).
      attempts = MaintenanceCommits.commit(load, current -> {
        RewriteFiles rewrite = current.newRewrite()
            .validateFromSnapshot(plan.snapshotId())
            .dataSequenceNumber(plan.sequenceNumber())
            .set(MAINTENANCE_KEY, "compaction");
        plan.bins().forEach(bin -> bin.files().forEach(rewrite::deleteFile));
        written.forEach(rewrite::addFile);
        return rewrite;
      });
    } catch (ValidationException | CommitFailedException e) {
      LOG.info("Dropped the compaction of {} files of table {} planned at snapshot {}: {}", plan.files(),
          table.name(), plan.snapshotId(), e.getMessage());
      deleteQuietly(table, written);
      return new Result(Outcome.DROPPED_CONFLICT, e.getMessage());
    } catch (CommitStateUnknownException e) {
      LOG.warn("Compaction of table {} has an unknown outcome; its {} new files stay (orphan removal takes them "
          + "if it did not land): {}", table.name(), written.size(), e.getMessage());
      return new Result(Outcome.UNKNOWN, e.getMessage());
    } catch (IOException | RuntimeException e) {
      deleteQuietly(table, written);
      throw e;
    }
    Table after = load.get();
    long snapshotId = -1; // the newest compaction in the history: a checkpoint commit may already be on top of it
    for (Snapshot snapshot : SnapshotUtil.ancestorsOf(after.currentSnapshot().snapshotId(), after::snapshot)) {
      if ("compaction".equals(snapshot.summary().get(MAINTENANCE_KEY))) {
        snapshotId = snapshot.snapshotId();
        break;
      }
    }
    LOG.info("Compacted {} files of table {} into {} in {} partitions (snapshot {}; {} commit attempts, {} lost to "
        + "concurrent commits)", plan.files(), table.name(), written.size(), plan.bins().size(), snapshotId,
        attempts.attempts(), attempts.lostRaces());
    return new Result(Outcome.COMMITTED, snapshotId, plan.files(), written.size(), null, attempts.attempts(),
        attempts.lostRaces());
  }

  private static DataFile rewrite(Table table, Plan plan, Bin bin) throws IOException {
    PartitionSpec spec = table.specs().get(bin.specId());
    Schema schema = table.schema();
    StructLike partition = bin.tasks().get(0).file().partition();
    String name = FileFormat.PARQUET.addExtension("lakecommit-compact-" + plan.snapshotId() + "-" + UUID.randomUUID());
    DataWriter<Record> writer = Parquet.writeData(table.io().newOutputFile(
            table.locationProvider().newDataLocation(spec, partition, name)))
        .forTable(table)
        .createWriterFunc(GenericParquetWriter::create)
        .withSpec(spec)
        .withPartition(partition)
        .build();
    try (writer) {
      for (FileScanTask task : bin.tasks()) {
        try (CloseableIterable<Record> rows = liveRows(table, schema, task)) {
          rows.forEach(writer::write);
        }
      }
    }
    return writer.toDataFile();
  }

  /** The rows of a file that the deletes applying to it at the planned snapshot leave. */
  private static CloseableIterable<Record> liveRows(Table table, Schema schema, FileScanTask task) {
    GenericDeleteFilter deletes = new GenericDeleteFilter(table.io(), task, schema, schema);
    Schema read = deletes.requiredSchema();
    CloseableIterable<Record> rows = Parquet.read(table.io().newInputFile(task.file().location()))
        .project(read)
        .createReaderFunc(fileSchema -> GenericParquetReaders.buildReader(read, fileSchema))
        .build();
    return deletes.filter(rows);
  }

  private static void deleteQuietly(Table table, List<DataFile> files) {
    FieldIdRewrite.deleteQuietly(table, files.stream().map(DataFile::location).toList(),
        "file of a dropped compaction");
  }
}
