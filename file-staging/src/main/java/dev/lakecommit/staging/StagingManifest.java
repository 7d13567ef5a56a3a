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
 * @param files the staged files, in the order they were closed; not empty
 * @param icebergManifest an Iceberg manifest listing exactly {@code files}, if the writer wrote one
 */
public record StagingManifest(
    JobId jobId,
    long checkpointId,
    int writerIndex,
    int attempt,
    List<StagedFile> files,
    Optional<IcebergManifest> icebergManifest) {

  public StagingManifest {
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
    if (files.isEmpty()) {
      throw new IllegalArgumentException(
          String.format("Invalid manifest of checkpoint %s, writer %s: no files (a writer that staged nothing "
              + "reports no manifest)", checkpointId, writerIndex));
    }
  }

  /** A manifest without an Iceberg manifest file. */
  public StagingManifest(JobId jobId, long checkpointId, int writerIndex, int attempt, List<StagedFile> files) {
    this(jobId, checkpointId, writerIndex, attempt, files, Optional.empty());
  }

  /** The commit this manifest belongs to. */
  public CommitId commitId() {
    return new CommitId(jobId, checkpointId);
  }

  /** Rows in all files. */
  public long recordCount() {
    return files.stream().mapToLong(StagedFile::recordCount).sum();
  }

  /** Bytes in all files. */
  public long totalBytes() {
    return files.stream().mapToLong(StagedFile::fileSizeInBytes).sum();
  }
}
