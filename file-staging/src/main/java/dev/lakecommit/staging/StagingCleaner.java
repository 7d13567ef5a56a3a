package dev.lakecommit.staging;

import dev.lakecommit.core.JobId;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.TreeMap;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.SupportsBulkOperations;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The orphan sweeper: deletes what a job staged for checkpoints above a given one, found by listing the job's
 * prefix of a {@link StagingLayout}, on any {@code FileIO} with prefix operations (Hadoop file systems, local
 * disk, S3). The sinks' targets sweep through it.
 *
 * <p>Only checkpoint directories of {@link StagingLayout} are touched; anything else under the job's prefix is
 * left alone. The caller guarantees that checkpoints above the given id are neither committed nor pending.
 */
public final class StagingCleaner {
  private static final Logger LOG = LoggerFactory.getLogger(StagingCleaner.class);

  private final SupportsPrefixOperations io;
  private final StagingLayout layout;

  /**
   * @throws IllegalArgumentException if {@code io} cannot list and delete by prefix
   */
  public StagingCleaner(FileIO io, StagingLayout layout) {
    Objects.requireNonNull(io, "io");
    if (!(io instanceof SupportsPrefixOperations prefixIO)) {
      throw new IllegalArgumentException(
          String.format("FileIO %s cannot list by prefix; use HadoopFileIO, S3FileIO or ResolvingFileIO",
              io.getClass().getName()));
    }
    this.io = prefixIO;
    this.layout = Objects.requireNonNull(layout, "layout");
  }

  /**
   * Deletes every file of {@code jobId} staged for a checkpoint above {@code checkpointId}. Idempotent; a
   * missing job prefix deletes nothing.
   *
   * @return the number of files deleted
   * @throws IOException if listing or deleting fails; the sweep can be repeated
   */
  public long deleteStagedAfter(JobId jobId, long checkpointId) throws IOException {
    if (checkpointId < 0) {
      throw new IllegalArgumentException(
          String.format("Invalid checkpoint id: %s (must be >= 0)", checkpointId));
    }
    Map<Long, Long> filesByCheckpoint = new TreeMap<>();
    for (FileInfo file : list(layout.jobPrefix(jobId))) {
      OptionalLong checkpoint = layout.checkpointOf(jobId, file.location());
      if (checkpoint.isPresent() && checkpoint.getAsLong() > checkpointId) {
        filesByCheckpoint.merge(checkpoint.getAsLong(), 1L, Long::sum);
      }
    }
    long deleted = 0;
    for (Map.Entry<Long, Long> checkpoint : filesByCheckpoint.entrySet()) {
      try {
        io.deletePrefix(layout.checkpointPrefix(jobId, checkpoint.getKey()));
      } catch (UncheckedIOException e) {
        throw e.getCause();
      } catch (RuntimeException e) {
        throw new IOException(
            "Cannot delete staged files of checkpoint " + checkpoint.getKey() + " of job " + jobId + " under "
                + layout.root(), e);
      }
      deleted += checkpoint.getValue();
    }
    if (deleted > 0) {
      LOG.info("Deleted {} staged files of job {} in checkpoints {} (above checkpoint {}) under {}",
          deleted, jobId, filesByCheckpoint.keySet(), checkpointId, layout.root());
    }
    return deleted;
  }

  /**
   * Like {@link #deleteStagedAfter(JobId, long)}, but deletes only files staged by runs of epochs {@code minEpoch}
   * to {@code maxEpoch} (inclusive; names without epoch count as epoch 0), file by file: safe while runs of other
   * epochs are staging under the same checkpoint prefixes (a newer run's files are never touched, DESIGN.md rule
   * 11). Files whose names this layout does not give are left alone.
   *
   * @return the number of files deleted
   */
  public long deleteStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
    List<String> doomed = listStaged(jobId, checkpointId, minEpoch, maxEpoch);
    delete(jobId, doomed);
    if (!doomed.isEmpty()) {
      LOG.debug("Deleted {} staged files of job {} above checkpoint {} from run epochs {} to {} under {}",
          doomed.size(), jobId, checkpointId, minEpoch, maxEpoch, layout.root());
    }
    return doomed.size();
  }

  /**
   * Deletes what attempts below {@code attempt} of the run of {@code epoch} staged for checkpoints above {@code
   * checkpointId}, file by file ({@link #listStagedOfEarlierAttempts}): after a failover within a run, what the
   * failed attempts staged for checkpoints that never completed. Files of {@code attempt} and later, and of other
   * runs, are never touched.
   *
   * @return the number of files deleted
   */
  public long deleteStagedOfEarlierAttempts(JobId jobId, long checkpointId, long epoch, int attempt)
      throws IOException {
    List<String> doomed = listStagedOfEarlierAttempts(jobId, checkpointId, epoch, attempt);
    delete(jobId, doomed);
    if (!doomed.isEmpty()) {
      LOG.info("Deleted {} staged files of job {} above checkpoint {} from attempts below {} of run epoch {} under {}",
          doomed.size(), jobId, checkpointId, attempt, epoch, layout.root());
    }
    return doomed.size();
  }

  /**
   * The files staged for checkpoints above {@code checkpointId} by the run of {@code epoch} in attempts below
   * {@code attempt} (from their names; names this layout does not give are left out).
   */
  public List<String> listStagedOfEarlierAttempts(JobId jobId, long checkpointId, long epoch, int attempt)
      throws IOException {
    if (checkpointId < 0 || epoch < 0 || attempt < 0) {
      throw new IllegalArgumentException(String.format(
          "Invalid checkpoint id %s, epoch %s or attempt %s (must be >= 0)", checkpointId, epoch, attempt));
    }
    List<String> found = new ArrayList<>();
    for (FileInfo file : list(layout.jobPrefix(jobId))) {
      OptionalLong checkpoint = layout.checkpointOf(jobId, file.location());
      OptionalLong fileEpoch = layout.epochOf(jobId, file.location());
      java.util.OptionalInt fileAttempt = layout.attemptOf(jobId, file.location());
      if (checkpoint.isPresent() && checkpoint.getAsLong() > checkpointId && fileEpoch.isPresent()
          && fileEpoch.getAsLong() == epoch && fileAttempt.isPresent() && fileAttempt.getAsInt() < attempt) {
        found.add(file.location());
      }
    }
    return found;
  }

  /**
   * The files {@link #deleteStaged} with the same arguments deletes: staged for checkpoints above {@code
   * checkpointId} by runs of epochs {@code minEpoch} to {@code maxEpoch}.
   */
  public List<String> listStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
    if (checkpointId < 0 || minEpoch < 0 || maxEpoch < minEpoch) {
      throw new IllegalArgumentException(String.format(
          "Invalid checkpoint id %s or epochs %s to %s (must be >= 0, in order)", checkpointId, minEpoch, maxEpoch));
    }
    List<String> found = new ArrayList<>();
    for (FileInfo file : list(layout.jobPrefix(jobId))) {
      OptionalLong checkpoint = layout.checkpointOf(jobId, file.location());
      OptionalLong epoch = layout.epochOf(jobId, file.location());
      if (checkpoint.isPresent() && checkpoint.getAsLong() > checkpointId && epoch.isPresent()
          && epoch.getAsLong() >= minEpoch && epoch.getAsLong() <= maxEpoch) {
        found.add(file.location());
      }
    }
    return found;
  }

  /**
   * The files staged for checkpoints at or below {@code checkpointId}, by any run: for a sink whose commit moves
   * staged files into the table (Hive), what is still staged for a committed checkpoint is a leftover (a crashed
   * attempt's file, a copy a failed delete left).
   */
  public List<String> listStagedUpTo(JobId jobId, long checkpointId) throws IOException {
    List<String> found = new ArrayList<>();
    for (FileInfo file : list(layout.jobPrefix(jobId))) {
      OptionalLong checkpoint = layout.checkpointOf(jobId, file.location());
      if (checkpoint.isPresent() && checkpoint.getAsLong() <= checkpointId) {
        found.add(file.location());
      }
    }
    return found;
  }

  /** Deletes the given staged files, in bulk where the {@code FileIO} can. */
  public void delete(JobId jobId, List<String> files) throws IOException {
    try {
      if (io instanceof SupportsBulkOperations bulk) {
        bulk.deleteFiles(files);
      } else {
        files.forEach(io::deleteFile);
      }
    } catch (UncheckedIOException e) {
      throw e.getCause();
    } catch (RuntimeException e) {
      throw new IOException(
          "Cannot delete " + files.size() + " staged files of job " + jobId + " under " + layout.root(), e);
    }
  }

  /**
   * Lists a prefix; a listing that fails because a file vanished under it (Hadoop's local file system fails the
   * whole walk when a concurrent run deletes a file it listed) is repeated, at most 3 times in all.
   */
  private List<FileInfo> list(String prefix) throws IOException {
    for (int attempt = 1; ; attempt++) {
      try {
        return listOnce(prefix);
      } catch (IOException | RuntimeException e) {
        if (attempt >= 3) {
          throw e;
        }
        LOG.debug("Listing {} failed (attempt {}), listing again: {}", prefix, attempt, e.toString());
      }
    }
  }

  private List<FileInfo> listOnce(String prefix) throws IOException {
    try {
      // Materialize inside the try: listings are lazy and fail on iteration.
      List<FileInfo> files = new ArrayList<>();
      io.listPrefix(prefix).forEach(files::add);
      return files;
    } catch (UncheckedIOException e) {
      if (e.getCause() instanceof FileNotFoundException) {
        return List.of();
      }
      throw e.getCause();
    } catch (NotFoundException e) {
      return List.of();
    }
  }
}
