package dev.lakecommit.staging;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What one writer staged for one checkpoint: the commit info of {@link StagingWriter}. The aggregated committer
 * combines the manifests of all writers of a checkpoint into one table commit.
 *
 * @param jobId the job
 * @param checkpointId the checkpoint the files belong to, {@code >= 1}
 * @param writerIndex the writer that staged them, {@code >= 0}
 * @param attempt the job attempt that staged them, {@code >= 0}
 * @param files the staged data files, in the order they were closed
 * @param icebergManifest an Iceberg manifest listing exactly {@code files}, if the writer wrote one
 * @param deleteFiles staged delete files (position or equality deletes) to commit with {@code files} in one row
 *     delta; empty for writers that only add rows. {@code files} and {@code deleteFiles} are not both empty
 * @param evolvedSchema the table schema the files were written with, as Iceberg schema JSON, when the writer
 *     wrote columns the table did not have yet or wider types than the table's: the commit that adds the files
 *     evolves the table to it in the same transaction. Empty when the files follow the table's schema
 */
public record StagingManifest(
    JobId jobId,
    long checkpointId,
    int writerIndex,
    int attempt,
    List<StagedFile> files,
    Optional<IcebergManifest> icebergManifest,
    List<StagedFile> deleteFiles,
    Optional<String> evolvedSchema) implements WriterManifest {

  public StagingManifest {
    Objects.requireNonNull(evolvedSchema, "evolvedSchema");
    Objects.requireNonNull(jobId, "jobId");
    Objects.requireNonNull(icebergManifest, "icebergManifest");
    if (checkpointId < 1) {
      throw new IllegalArgumentException(
          String.format("Invalid checkpoint id: %s (must be >= 1)", checkpointId));
    }
    if (writerIndex < 0) {
      throw new IllegalArgumentException(String.format("Invalid writer index: %s (must be >= 0)", writerIndex));
    }
    if (attempt < 0) {
      throw new IllegalArgumentException(String.format("Invalid attempt: %s (must be >= 0)", attempt));
    }
    files = List.copyOf(Objects.requireNonNull(files, "files"));
    deleteFiles = List.copyOf(Objects.requireNonNull(deleteFiles, "deleteFiles"));
    if (files.isEmpty() && deleteFiles.isEmpty()) {
      throw new IllegalArgumentException(
          String.format("Invalid manifest of checkpoint %s, writer %s: no files (a writer that staged nothing "
              + "reports no manifest)", checkpointId, writerIndex));
    }
    for (StagedFile file : files) {
      if (file.isDelete()) {
        throw new IllegalArgumentException("Invalid manifest of checkpoint " + checkpointId + ", writer "
            + writerIndex + ": delete file " + file.path() + " listed among the data files");
      }
    }
    for (StagedFile file : deleteFiles) {
      if (!file.isDelete()) {
        throw new IllegalArgumentException("Invalid manifest of checkpoint " + checkpointId + ", writer "
            + writerIndex + ": data file " + file.path() + " listed among the delete files");
      }
    }
  }

  /** A manifest of files written with the table's schema. */
  public StagingManifest(JobId jobId, long checkpointId, int writerIndex, int attempt, List<StagedFile> files,
      Optional<IcebergManifest> icebergManifest, List<StagedFile> deleteFiles) {
    this(jobId, checkpointId, writerIndex, attempt, files, icebergManifest, deleteFiles, Optional.empty());
  }

  /** A manifest of data files, with the Iceberg manifest of them if the writer wrote one. */
  public StagingManifest(JobId jobId, long checkpointId, int writerIndex, int attempt, List<StagedFile> files,
      Optional<IcebergManifest> icebergManifest) {
    this(jobId, checkpointId, writerIndex, attempt, files, icebergManifest, List.of());
  }

  /** A manifest of data files without an Iceberg manifest file. */
  public StagingManifest(JobId jobId, long checkpointId, int writerIndex, int attempt, List<StagedFile> files) {
    this(jobId, checkpointId, writerIndex, attempt, files, Optional.empty());
  }

  /** This manifest as of checkpoint {@code newCheckpointId} (an engine renumbered the checkpoint). */
  @Override
  public StagingManifest withCheckpointId(long newCheckpointId) {
    return new StagingManifest(jobId, newCheckpointId, writerIndex, attempt, files, icebergManifest, deleteFiles,
        evolvedSchema);
  }

  /** The commit this manifest belongs to. */
  public CommitId commitId() {
    return new CommitId(jobId, checkpointId);
  }

  @Override
  public long fileCount() {
    return files.size();
  }

  /** Rows in all data files. */
  @Override
  public long recordCount() {
    return files.stream().mapToLong(StagedFile::recordCount).sum();
  }

  /** Bytes in all data and delete files. */
  public long totalBytes() {
    return files.stream().mapToLong(StagedFile::fileSizeInBytes).sum()
        + deleteFiles.stream().mapToLong(StagedFile::fileSizeInBytes).sum();
  }

  /** Delete entries (positions or keys) in all delete files. */
  public long deleteRecordCount() {
    return deleteFiles.stream().mapToLong(StagedFile::recordCount).sum();
  }
}
