package dev.lakecommit.hive;

import dev.lakecommit.core.CommitTarget;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.thrift.TException;

/**
 * Maintenance of a Hive table that jobs commit to every checkpoint: merging each partition's small files into
 * files of a target size, safe while jobs commit to the table, and safe to run again after a crash.
 *
 * <p>A merge works as insert-overwrite does: it writes the merged files (and copies of the partition's files it
 * leaves as they are) into a fresh hidden directory {@code <partition dir>/.lakecommit-merge/<round>}, then
 * switches the partition to it with one {@code alter_partitions} call. Right before the switch it checks that no
 * commit is in flight into the partition (no unfinished commit intent names it), that the partition still has the
 * location it planned from, and that this location still holds the files it planned from; files that commits
 * completed meanwhile (of checkpoints their job has recorded) are copied too and the checks repeated (a few times at
 * most). Otherwise the partition's merge is dropped (its directory deleted) and the next round tries again. A commit that moved files
 * into the old directory after these checks notices the switch and moves them on (see {@code CommitAttempt}).
 * The replaced files are deleted by a later round, not by the one that switched: readers that planned on the old
 * directory may still read it, and a round deletes only the files its manifest ({@link MergeManifest}) names.
 *
 * <p>Table parameters (the jobs' watermarks and run epochs) are not touched; a partition keeps its parameters
 * (each job's checkpoint marker) and gets exact statistics and {@value #MERGED_FROM_KEY}, the location it replaced.
 * Use one round at a time per table; concurrent rounds lose nothing either (a switch checks the location it
 * replaces), but each one's leftovers wait for {@link Options#minAge()}.
 */
public final class HiveMaintenance {
  /** Files of the newest N checkpoint commits of each job are left alone unless told otherwise. */
  public static final int DEFAULT_KEEP_CHECKPOINTS = 10;
  /** The size merged files aim at unless the table parameter {@value #TARGET_FILE_SIZE_KEY} or an option says. */
  public static final long DEFAULT_TARGET_FILE_SIZE = 128L << 20;
  /** Files not written by a job of the table, and merge leftovers, are touched only once this old. */
  public static final Duration DEFAULT_MIN_AGE = Duration.ofHours(1);
  /** Table parameter: the size merged files aim at, in bytes. */
  public static final String TARGET_FILE_SIZE_KEY = "lakecommit.merge.target-file-size-bytes";
  /** Partition parameter: the location a merge replaced; its listed files are deleted by a later round. */
  static final String MERGED_FROM_KEY = "lakecommit.merged-from";

  private final HiveSinkConfig config;
  private final HiveTable table;
  private MergeHook hook = MergeHook.NONE;

  HiveMaintenance(HiveSinkConfig config, HiveTable table) {
    this.config = config;
    this.table = table;
  }

  /** Test-only: told at each step of a merge. */
  HiveMaintenance hook(MergeHook mergeHook) {
    this.hook = Objects.requireNonNull(mergeHook, "hook");
    return this;
  }

  /**
   * What a round considers.
   *
   * @param keepCheckpoints files of each job's newest N committed checkpoints are not merged
   * @param targetFileSize bytes merged files aim at; 0 for the table parameter {@value #TARGET_FILE_SIZE_KEY}, else
   *     {@link #DEFAULT_TARGET_FILE_SIZE}; files below 3/4 of it are small
   * @param minAge files no job's name identifies (written by others), and leftovers of crashed merges, are touched
   *     only once older than this
   */
  public record Options(int keepCheckpoints, long targetFileSize, Duration minAge) {
    public Options {
      if (keepCheckpoints < 0) {
        throw new IllegalArgumentException("Invalid keepCheckpoints: " + keepCheckpoints + " (must be >= 0)");
      }
      if (targetFileSize < 0) {
        throw new IllegalArgumentException("Invalid targetFileSize: " + targetFileSize + " (must be >= 0)");
      }
      Objects.requireNonNull(minAge, "minAge");
      if (minAge.isNegative()) {
        throw new IllegalArgumentException("Invalid minAge: " + minAge + " (must be >= 0)");
      }
    }

    public static Options defaults() {
      return new Options(DEFAULT_KEEP_CHECKPOINTS, 0, DEFAULT_MIN_AGE);
    }

    public Options keepCheckpoints(int n) {
      return new Options(n, targetFileSize, minAge);
    }

    public Options targetFileSize(long bytes) {
      return new Options(keepCheckpoints, bytes, minAge);
    }

    public Options minAge(Duration age) {
      return new Options(keepCheckpoints, targetFileSize, age);
    }
  }

  /**
   * One partition's merge as planned.
   *
   * @param partition the partition's name ({@code k=v/...})
   * @param location its current location
   * @param filesMerged small files to merge; {@code bins} files are written from them
   * @param bytesMerged their bytes
   * @param bins files written from them
   * @param filesCopied the partition's other files, copied as they are into the merged directory
   */
  public record PartitionPlan(String partition, String location, int filesMerged, long bytesMerged, int bins,
      int filesCopied) {}

  /**
   * A round's plan.
   *
   * @param targetFileSize the size merged files aim at
   * @param partitions partitions to merge
   * @param busy partitions skipped: a commit is in flight into them, or an earlier merge's old files are not yet
   *     deleted
   * @param pendingDeletes files replaced by earlier merges that this round deletes first
   */
  public record Plan(long targetFileSize, List<PartitionPlan> partitions, List<String> busy, int pendingDeletes) {}

  /**
   * What a round did.
   *
   * @param merged partitions switched to merged files
   * @param filesMerged small files merged into {@code filesWritten}
   * @param filesWritten merged files written
   * @param caughtUp files that commits completed between a merge's plan and its switch: copied into the merged
   *     directory too (a commit still in flight drops the partition's merge instead)
   * @param stragglers files a commit put at a partition's old location while a merge switched it, moved on to the
   *     new one
   * @param dropped partitions whose merge was dropped, with the reason (a concurrent commit); run again
   * @param filesDeleted files replaced by earlier merges, deleted
   * @param leftoversDeleted directories of merges that crashed or were dropped, deleted
   */
  public record Result(int merged, int filesMerged, int filesWritten, int caughtUp, int stragglers,
      Map<String, String> dropped, int filesDeleted, int leftoversDeleted) {}

  /** The plan of a round now, changing nothing. */
  public Plan plan(Options options) throws IOException {
    try (MergeRound round = open(options)) {
      return round.plan();
    }
  }

  /**
   * One round: deletes what earlier merges replaced (and leftovers of merges that crashed), then merges every
   * partition with at least two small files of committed checkpoints older than the newest N. Safe while jobs
   * commit; a partition whose merge meets a concurrent commit is dropped (see {@link Result#dropped()}).
   *
   * @throws IOException if the metastore or the storage fails; what is done stays done, run again
   */
  public Result merge(Options options) throws IOException {
    try (MergeRound round = open(options)) {
      return round.run();
    }
  }

  private MergeRound open(Options options) throws IOException {
    HiveConf conf = config.hiveConf();
    IMetaStoreClient client;
    try {
      client = config.clientFactory.open(conf);
    } catch (TException e) {
      throw new IOException("Cannot connect to the metastore of table " + table + ": " + e.getMessage(), e);
    }
    try {
      FileSystem fs = table.baseLocation().getFileSystem(conf);
      Table read = client.getTable(table.database(), table.name());
      return new MergeRound(client, fs, conf, table, read, options, hook);
    } catch (TException | IOException | RuntimeException e) {
      client.close();
      throw e instanceof IOException io ? io : new IOException("Cannot read table " + table + ": " + e.getMessage(),
          e);
    }
  }

  @Override
  public String toString() {
    return "merge of Hive table " + table;
  }

  /** The jobs of the table (their watermarks and epochs), from its parameters. */
  static Map<String, CommitTarget.JobState> jobs(Table read) {
    return CommitTarget.JobState.fromProperties(read.getDbName() + "." + read.getTableName(),
        read.getParameters() == null ? Map.of() : read.getParameters());
  }

  /** The size merged files aim at. */
  static long targetFileSize(Options options, Table read) {
    if (options.targetFileSize() > 0) {
      return options.targetFileSize();
    }
    String value = read.getParameters() == null ? null : read.getParameters().get(TARGET_FILE_SIZE_KEY);
    if (value == null) {
      return DEFAULT_TARGET_FILE_SIZE;
    }
    try {
      long size = Long.parseLong(value.trim());
      if (size <= 0) {
        throw new NumberFormatException();
      }
      return size;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(String.format("Invalid table parameter %s=%s of table %s.%s (must be a "
          + "positive number of bytes)", TARGET_FILE_SIZE_KEY, value, read.getDbName(), read.getTableName()), e);
    }
  }

}
