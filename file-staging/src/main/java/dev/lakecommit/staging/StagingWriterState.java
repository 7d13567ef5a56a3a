package dev.lakecommit.staging;

/**
 * The state of a {@link StagingWriter} in a checkpoint. Every file is closed and reported at {@code
 * prepareCommit}, so nothing open needs restoring: the state only records which writer prepared which
 * checkpoint, for diagnostics and for sinks that keep their own state next to it.
 *
 * @param writerIndex the writer
 * @param checkpointId the last checkpoint the writer prepared, {@code >= 0}
 */
public record StagingWriterState(int writerIndex, long checkpointId) {
  public StagingWriterState {
    if (writerIndex < 0) {
      throw new IllegalArgumentException(String.format("Invalid writer index: %s (must be >= 0)", writerIndex));
    }
    if (checkpointId < 0) {
      throw new IllegalArgumentException(
          String.format("Invalid checkpoint id: %s (must be >= 0)", checkpointId));
    }
  }
}
