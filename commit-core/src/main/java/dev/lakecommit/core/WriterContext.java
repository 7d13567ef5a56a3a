package dev.lakecommit.core;

import java.util.Objects;

/**
 * Where a writer runs: its job, its index among the job's parallel writers, and the attempt (how many times the
 * job has been started). Staged file names embed all of these, so that no two attempts ever write the same name.
 *
 * @param jobId the job
 * @param writerIndex {@code 0 <= writerIndex < numberOfWriters}
 * @param numberOfWriters the job's parallelism
 * @param attempt the job's start count, {@code >= 0}; grows with every restart
 * @param restoredCheckpointId the checkpoint the writer resumes after, 0 on a fresh start: every checkpoint it
 *     prepares has a greater id, so files staged before the first {@code prepareCommit} can be named after
 *     {@code restoredCheckpointId + 1} and found by prefix if that checkpoint never completes
 * @param epoch the run epoch the job claimed in its target ({@link RunEpoch}), 0 where the runtime claims none;
 *     staged names carry it, so that no two runs of a job ever stage the same name
 */
public record WriterContext(
    JobId jobId, int writerIndex, int numberOfWriters, int attempt, long restoredCheckpointId, long epoch) {

  /** A context without a run epoch (epoch 0). */
  public WriterContext(JobId jobId, int writerIndex, int numberOfWriters, int attempt, long restoredCheckpointId) {
    this(jobId, writerIndex, numberOfWriters, attempt, restoredCheckpointId, 0);
  }

  public WriterContext {
    Objects.requireNonNull(jobId, "jobId");
    if (numberOfWriters < 1) {
      throw new IllegalArgumentException(
          String.format("Invalid writer count: %s (must be > 0)", numberOfWriters));
    }
    if (writerIndex < 0 || writerIndex >= numberOfWriters) {
      throw new IllegalArgumentException(
          String.format("Invalid writer index: %s (must be in [0, %s))", writerIndex, numberOfWriters));
    }
    if (attempt < 0) {
      throw new IllegalArgumentException(String.format("Invalid attempt: %s (must be >= 0)", attempt));
    }
    if (epoch < 0) {
      throw new IllegalArgumentException(String.format("Invalid run epoch: %s (must be >= 0)", epoch));
    }
    if (restoredCheckpointId < 0) {
      throw new IllegalArgumentException(
          String.format("Invalid restored checkpoint id: %s (must be >= 0)", restoredCheckpointId));
    }
  }
}
