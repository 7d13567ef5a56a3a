package dev.lakecommit.staging;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.WriterContext;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.apache.iceberg.FileFormat;

/**
 * Where staged files go, deterministically: {@code <root>/<job-id>/ckpt-<checkpoint-id>/[<partition-path>/]
 * <job-id>-<checkpoint-id>-e<epoch>-<writer>-<attempt>-<seq>.parquet} ({@code e<epoch>-} only for runs that claimed
 * an epoch in the target).
 *
 * <p>Everything a job staged for a checkpoint is under one prefix, so leftovers of a checkpoint that never
 * completed are found by listing that prefix, never by age. The name alone is unique across jobs, checkpoints,
 * writers, run epochs and attempts, so files can be moved into a shared partition directory (Hive) without clashes,
 * and no two runs of a job ever produce the same name (DESIGN.md rule 11).
 *
 * <p>The root is chosen by the sink: the table's data location for Iceberg (files become visible only when a
 * snapshot references them), a hidden staging directory for Hive.
 */
public final class StagingLayout {
  private static final String CHECKPOINT_DIR_PREFIX = "ckpt-";

  private final String root;
  private final String base;

  private StagingLayout(String root, String base) {
    this.root = root;
    this.base = base;
  }

  /**
   * A layout under {@code root}, a location any {@code FileIO} of the sink understands ({@code s3://bucket/p},
   * {@code file:/tmp/x}, {@code /tmp/x}, {@code s3a://bucket/p}). A trailing slash is ignored.
   */
  public static StagingLayout under(String root) {
    Objects.requireNonNull(root, "root");
    String trimmed = root;
    while (trimmed.endsWith("/") && trimmed.length() > 1) {
      trimmed = trimmed.substring(0, trimmed.length() - 1);
    }
    if (trimmed.isEmpty() || trimmed.equals("/")) {
      throw new IllegalArgumentException(
          String.format("Invalid staging root: '%s' (use a directory, not the file system root)", root));
    }
    return new StagingLayout(trimmed, "");
  }

  /**
   * This layout with a directory {@code element} between each checkpoint's prefix and the partition path of its data
   * files ({@code <root>/<job>/ckpt-<id>/<element>/<partition>/<file>}): S3A's magic committer reads the path after
   * its {@code __base} element as the file's destination under the table.
   */
  public StagingLayout withBaseElement(String element) {
    if (element.isEmpty() || element.contains("/")) {
      throw new IllegalArgumentException(
          String.format("Invalid base element: '%s' (one path element, not empty)", element));
    }
    return new StagingLayout(root, element + "/");
  }

  public String root() {
    return root;
  }

  /** The prefix of everything {@code job} staged, with a trailing slash. */
  public String jobPrefix(JobId job) {
    return root + "/" + job.value() + "/";
  }

  /** The prefix of everything {@code job} staged for {@code checkpointId}, with a trailing slash. */
  public String checkpointPrefix(JobId job, long checkpointId) {
    checkCheckpoint(checkpointId);
    return jobPrefix(job) + CHECKPOINT_DIR_PREFIX + checkpointId + "/";
  }

  /** {@code <job-id>-<checkpoint-id>-<writer>-<attempt>-<seq>.<ext>}: a name of a run without epoch. */
  public static String fileName(
      JobId job, long checkpointId, int writerIndex, int attempt, int sequence, FileFormat format) {
    return fileName(job, checkpointId, 0, writerIndex, attempt, sequence, format);
  }

  /** {@code <job-id>-<checkpoint-id>-e<epoch>-<writer>-<attempt>-<seq>.<ext>} ({@code e<epoch>-} if epoch > 0). */
  public static String fileName(
      JobId job, long checkpointId, long epoch, int writerIndex, int attempt, int sequence, FileFormat format) {
    checkCheckpoint(checkpointId);
    if (writerIndex < 0 || attempt < 0 || sequence < 0 || epoch < 0) {
      throw new IllegalArgumentException(
          String.format("Invalid file name parts: epoch %s, writer %s, attempt %s, sequence %s (must be >= 0)",
              epoch, writerIndex, attempt, sequence));
    }
    return format.addExtension(stem(job, checkpointId, epoch, writerIndex, attempt) + "-" + sequence);
  }

  private static String stem(JobId job, long checkpointId, long epoch, int writerIndex, int attempt) {
    return job.value() + "-" + checkpointId + "-" + (epoch > 0 ? "e" + epoch + "-" : "") + writerIndex + "-"
        + attempt;
  }

  /** The location of a staged data file; {@code partitionPath} is empty for an unpartitioned table. */
  public String fileLocation(
      JobId job, long checkpointId, String partitionPath, int writerIndex, int attempt, int sequence,
      FileFormat format) {
    return fileLocation(new WriterContext(job, writerIndex, writerIndex + 1, attempt, 0), checkpointId,
        partitionPath, sequence, format);
  }

  /** The location of a file a writer stages for a checkpoint; its name carries the writer's epoch and attempt. */
  public String fileLocation(
      WriterContext writer, long checkpointId, String partitionPath, int sequence, FileFormat format) {
    String dir = checkpointPrefix(writer.jobId(), checkpointId) + base;
    if (!partitionPath.isEmpty()) {
      dir = dir + partitionPath + "/";
    }
    return dir + fileName(writer.jobId(), checkpointId, writer.epoch(), writer.writerIndex(), writer.attempt(),
        sequence, format);
  }

  /** The location of the Iceberg manifest a writer writes for its files of a checkpoint. */
  public String manifestLocation(JobId job, long checkpointId, int writerIndex, int attempt) {
    return manifestLocation(new WriterContext(job, writerIndex, writerIndex + 1, attempt, 0), checkpointId);
  }

  /** The location of the Iceberg manifest a writer writes for its files of a checkpoint. */
  public String manifestLocation(WriterContext writer, long checkpointId) {
    return checkpointPrefix(writer.jobId(), checkpointId)
        + FileFormat.AVRO.addExtension(stem(writer.jobId(), checkpointId, writer.epoch(), writer.writerIndex(),
            writer.attempt()) + "-manifest");
  }

  /**
   * The checkpoint a location was staged for, or empty if it is not under {@code job}'s prefix of this layout.
   * Tolerates the scheme forms a {@code FileIO} listing may return ({@code file:/x} for {@code /x}).
   */
  public OptionalLong checkpointOf(JobId job, String location) {
    String marker = "/" + job.value() + "/" + CHECKPOINT_DIR_PREFIX;
    int at = location.indexOf(marker);
    if (at < 0) {
      return OptionalLong.empty();
    }
    int start = at + marker.length();
    int end = location.indexOf('/', start);
    if (end <= start) {
      return OptionalLong.empty();
    }
    try {
      long id = Long.parseLong(location.substring(start, end));
      return id >= 1 ? OptionalLong.of(id) : OptionalLong.empty();
    } catch (NumberFormatException e) {
      return OptionalLong.empty();
    }
  }

  /**
   * The attempt that staged a file of {@code job}, from its name, or empty if the name is not one this layout
   * gives.
   */
  public OptionalInt attemptOf(JobId job, String location) {
    StagedName name = parse(job, location);
    return name == null ? OptionalInt.empty() : OptionalInt.of(name.attempt());
  }

  /**
   * The run epoch that staged a file of {@code job}, from its name (0 for a name without epoch), or empty if the
   * name is not one this layout gives.
   */
  public OptionalLong epochOf(JobId job, String location) {
    StagedName name = parse(job, location);
    return name == null ? OptionalLong.empty() : OptionalLong.of(name.epoch());
  }

  /**
   * The checkpoint a file of {@code job} was staged for, from its name alone (so also after a move out of the
   * staging layout, into a Hive partition directory), or empty if the name is not one this layout gives.
   */
  public static OptionalLong checkpointInName(JobId job, String location) {
    StagedName name = parse(job, location);
    return name == null ? OptionalLong.empty() : OptionalLong.of(name.checkpointId());
  }

  /** The parts of a staged file's name. */
  private record StagedName(long checkpointId, long epoch, int writerIndex, int attempt) {}

  private static StagedName parse(JobId job, String location) {
    String name = location.substring(location.lastIndexOf('/') + 1);
    String prefix = job.value() + "-";
    if (!name.startsWith(prefix)) {
      return null;
    }
    String[] parts = name.substring(prefix.length()).split("-", 5);
    try {
      if (parts.length == 5 && parts[1].startsWith("e")) {
        return new StagedName(Long.parseLong(parts[0]), Long.parseLong(parts[1].substring(1)),
            Integer.parseInt(parts[2]), Integer.parseInt(parts[3]));
      }
      if (parts.length >= 4 && !parts[1].startsWith("e")) {
        return new StagedName(Long.parseLong(parts[0]), 0, Integer.parseInt(parts[1]), Integer.parseInt(parts[2]));
      }
    } catch (NumberFormatException e) {
      return null;
    }
    return null;
  }

  private static void checkCheckpoint(long checkpointId) {
    if (checkpointId < 1) {
      throw new IllegalArgumentException(String.format("Invalid checkpoint id: %s (must be >= 1)", checkpointId));
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof StagingLayout other && root.equals(other.root) && base.equals(other.base);
  }

  @Override
  public int hashCode() {
    return root.hashCode() * 31 + base.hashCode();
  }

  @Override
  public String toString() {
    return "StagingLayout{" + root + (base.isEmpty() ? "" : ", base " + base) + "}";
  }
}
