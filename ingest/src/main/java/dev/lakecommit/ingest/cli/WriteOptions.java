package dev.lakecommit.ingest.cli;

import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.staging.StagingWriterConfig;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;
import picocli.CommandLine.TypeConversionException;

/**
 * How an ingest writes files and commits them: the sinks' settings that a tool user may want to change. What the
 * tool leaves out is library-only for a reason: the overwrite modes need an engine's batch (Spark), a metrics sink
 * and test switches are for programs.
 */
public final class WriteOptions {
  @Option(names = {"--table-property", "-P"}, paramLabel = "KEY=VALUE", mapFallbackValue = "",
      description = "A property of a table the tool creates (Iceberg table property or Hive table parameter), e.g. "
          + "format-version=3; repeat for each.")
  Map<String, String> tableProperties = new LinkedHashMap<>();

  @Option(names = "--branch", paramLabel = "NAME", description = "Iceberg: commit to this branch instead of main.")
  String branch;

  @Option(names = "--target-file-size", paramLabel = "SIZE", converter = SizeConverter.class,
      description = "Roll data files at about this size, e.g. 128m (default: the table's write.target-file-size-"
          + "bytes, else 512m).")
  Long targetFileSize;

  @Option(names = "--max-rows-per-file", paramLabel = "N", description = "Roll data files after N rows.")
  Long maxRowsPerFile;

  @Option(names = "--max-open-files", paramLabel = "N",
      description = "Open data files per writer (one per partition written) before the writer closes the least "
          + "recently written; past it records of partitions without an open file are held (within half the write "
          + "buffer) and written grouped by partition (default: as many as a quarter of the heap holds at 2.5 MB per "
          + "open file, at least 32, at most 1000).")
  Integer maxOpenFiles;

  @Option(names = "--write-buffer-size", paramLabel = "SIZE", converter = SizeConverter.class,
      description = "Memory the writers' open data files may buffer together, e.g. 512m; past it a writer closes its "
          + "largest open file (default: a sixteenth of the heap, at most 256m per writer: Parquet's dictionaries of "
          + "many-valued string columns take several times the bytes counted).")
  Long writeBufferSize;

  @Option(names = "--no-writer-manifests", negatable = false,
      description = "Iceberg: the commit adds every file itself instead of appending the writers' own manifests.")
  boolean noWriterManifests;

  @Option(names = "--writer-manifest-min-files", paramLabel = "N",
      description = "Iceberg: the fewest files a writer needs at a checkpoint to write its own manifest.")
  Integer writerManifestMinFiles;

  @Option(names = "--coalesce-pending-commits",
      description = "Iceberg: commit checkpoints pending together (after a restore, or a backlog of failed commits) "
          + "as one snapshot (default: one snapshot per checkpoint).")
  boolean coalescePendingCommits;

  @Option(names = "--upsert-key", paramLabel = "COLUMNS", split = ",",
      description = "Iceberg: insert or replace rows by these key columns (required columns; a table the tool creates"
          + " gets them as identifier fields; format-version 2). Records are routed to writers by key; with"
          + " --route-by every table is written by it.")
  java.util.List<String> upsertKey;

  @Option(names = "--move-threads", paramLabel = "N", description = "Hive: threads moving files at commit.")
  Integer moveThreads;

  @Option(names = "--partition-batch-size", paramLabel = "N",
      description = "Hive: partitions per metastore call at commit.")
  Integer partitionBatchSize;

  /** Refuses the Iceberg-only options for a Hive table. */
  void checkHive() {
    if (branch != null || noWriterManifests || writerManifestMinFiles != null || coalescePendingCommits
        || upsertKey != null) {
      throw new IllegalArgumentException("Options --branch, --no-writer-manifests, --writer-manifest-min-files, "
          + "--coalesce-pending-commits and --upsert-key are for Iceberg tables");
    }
  }

  /** Refuses the Hive-only options for an Iceberg table. */
  void checkIceberg() {
    if (moveThreads != null || partitionBatchSize != null) {
      throw new IllegalArgumentException("Options --move-threads and --partition-batch-size are for --target hive");
    }
  }

  /**
   * The bytes each of {@code writers} writers' open files may buffer: {@code --write-buffer-size} shared by them,
   * else a sixteenth of the heap shared by them, at most {@link StagingWriterConfig#DEFAULT_MAX_BUFFERED_BYTES}
   * each. The bound counts the files' encoded bytes; the dictionaries of string columns with many values take
   * several times that (a Parquet {@code Binary} and its buffer per value): a 300 MB heap ingests a million
   * 225-byte JSON lines in one checkpoint with 2 writers at a sixteenth, not at an eighth.
   */
  long bufferedBytesPerWriter(int writers) {
    int shares = Math.max(1, writers);
    if (writeBufferSize != null) {
      check("--write-buffer-size", writeBufferSize, writeBufferSize > 0);
      return Math.max(1, writeBufferSize / shares);
    }
    return Math.min(StagingWriterConfig.DEFAULT_MAX_BUFFERED_BYTES, Runtime.getRuntime().maxMemory() / 16 / shares);
  }

  void applyTo(IcebergSinkConfig.Builder config, int writers) {
    if (!tableProperties.isEmpty()) {
      config.tableProperties(tableProperties);
    }
    if (branch != null) {
      config.branch(check("--branch", branch, !branch.isBlank()));
    }
    applyFiles(config::targetFileSizeBytes, config::maxRowsPerFile, config::maxOpenFiles, writers);
    config.maxBufferedBytes(bufferedBytesPerWriter(writers));
    if (noWriterManifests) {
      config.writeManifests(false);
    }
    if (writerManifestMinFiles != null) {
      config.writerManifestMinFiles(check("--writer-manifest-min-files", writerManifestMinFiles,
          writerManifestMinFiles > 0));
    }
    config.coalescePendingAppends(coalescePendingCommits);
    if (upsertKey != null) {
      config.mode(dev.lakecommit.iceberg.CommitMode.UPSERT).upsertKey(upsertKey.stream().map(String::trim).toList());
    }
  }

  /**
   * The settings of a routed ingest ({@code --route-by}): the table properties of the tables it creates,
   * file rolling, the open files and buffer of each writer over all its tables, and the upsert key of every table.
   *
   * @throws IllegalArgumentException naming an option a routed ingest has not: branches, writer manifests
   */
  void applyTo(dev.lakecommit.iceberg.MultiTableSink.Builder<?> config, int writers) {
    if (branch != null || noWriterManifests || writerManifestMinFiles != null || coalescePendingCommits) {
      throw new IllegalArgumentException("Options --branch, --no-writer-manifests, --writer-manifest-min-files and "
          + "--coalesce-pending-commits are for one table; with --route-by each checkpoint commits its files to "
          + "every table it wrote as one cut");
    }
    if (upsertKey != null) {
      config.upsertKey(upsertKey.stream().map(String::trim).toList());
    }
    if (!tableProperties.isEmpty()) {
      config.tableProperties(tableProperties);
    }
    if (targetFileSize != null) {
      throw new IllegalArgumentException("Option --target-file-size is for one table; with --route-by set the "
          + "tables' write.target-file-size-bytes with -P");
    }
    applyFiles(size -> { }, config::maxRowsPerFile, config::maxOpenFiles, writers);
    config.maxBufferedBytes(bufferedBytesPerWriter(writers));
  }

  /** Whether records must be routed to writers by key (upserts). */
  boolean routesByKey() {
    return upsertKey != null;
  }

  void applyTo(HiveSinkConfig.Builder config, int writers) {
    if (!tableProperties.isEmpty()) {
      config.tableProperties(tableProperties);
    }
    applyFiles(config::targetFileSizeBytes, config::maxRowsPerFile, config::maxOpenFiles, writers);
    config.maxBufferedBytes(bufferedBytesPerWriter(writers));
    if (moveThreads != null) {
      config.moveThreads(check("--move-threads", moveThreads, moveThreads > 0));
    }
    if (partitionBatchSize != null) {
      config.partitionBatchSize(check("--partition-batch-size", partitionBatchSize, partitionBatchSize > 0));
    }
  }

  /** What an open Parquet file holds in memory besides its data: measured 2.3 MB (8 columns, 1 MB pages). */
  static final long OPEN_FILE_BYTES = 5L << 19;

  /**
   * Open files per writer without {@code --max-open-files}: as many as a quarter of {@code heap} holds, shared by
   * {@code writers}, at {@link #OPEN_FILE_BYTES} each; at least the library's default (32), at most 1000. Each open
   * Parquet file keeps compression buffers of about two pages; a fixed 32 made an input with more partitions per
   * checkpoint than that close and reopen files every few rows (35 partitions, 2 writers: 95,000 files for a
   * million rows, five times the CPU).
   */
  static int openFilesPerWriter(int writers, long heap) {
    long fits = heap / 4 / Math.max(1, writers) / OPEN_FILE_BYTES;
    return (int) Math.max(StagingWriterConfig.DEFAULT_MAX_OPEN_FILES, Math.min(1000, fits));
  }

  private void applyFiles(java.util.function.LongConsumer size, java.util.function.LongConsumer rows,
      java.util.function.IntConsumer files, int writers) {
    if (targetFileSize != null) {
      size.accept(check("--target-file-size", targetFileSize, targetFileSize > 0));
    }
    if (maxRowsPerFile != null) {
      rows.accept(check("--max-rows-per-file", maxRowsPerFile, maxRowsPerFile > 0));
    }
    if (maxOpenFiles != null) {
      files.accept(check("--max-open-files", maxOpenFiles, maxOpenFiles > 0));
    } else {
      files.accept(openFilesPerWriter(writers, Runtime.getRuntime().maxMemory()));
    }
  }

  private static <T> T check(String option, T value, boolean valid) {
    if (!valid) {
      throw new IllegalArgumentException("Invalid option " + option + ": '" + value + "' (must be "
          + (value instanceof String ? "a name" : "> 0") + ")");
    }
    return value;
  }

  /** Sizes as bytes or with a k, m or g suffix ({@code 128m}). */
  public static final class SizeConverter implements ITypeConverter<Long> {
    @Override
    public Long convert(String value) {
      String text = value.trim().toLowerCase(Locale.ROOT).replaceAll("i?b$", "");
      try {
        long unit = switch (text.isEmpty() ? ' ' : text.charAt(text.length() - 1)) {
          case 'k' -> 1L << 10;
          case 'm' -> 1L << 20;
          case 'g' -> 1L << 30;
          default -> 1;
        };
        String number = unit == 1 ? text : text.substring(0, text.length() - 1);
        return Math.multiplyExact(Long.parseLong(number.trim()), unit);
      } catch (RuntimeException e) {
        throw new TypeConversionException("Invalid size: '" + value + "' (use bytes or 64k, 128m, 1g)");
      }
    }
  }
}
