package dev.lakecommit.core;

import java.io.IOException;
import java.util.Optional;

/**
 * Writes records to staging, invisible to readers, and reports what it staged at each checkpoint.
 *
 * <p>A writer is used by one thread at a time. Nothing it does may become visible in the target: visibility is
 * the committer's job, after the checkpoint is durable.
 *
 * @param <IN> records written
 * @param <C> commit info emitted per checkpoint
 * @param <S> writer state
 */
public interface SinkWriter<IN, C, S> extends AutoCloseable {

  /**
   * Stages one record. Side effects: staged bytes only.
   *
   * @throws IOException on a storage failure; the checkpoint in progress will not complete
   * @throws IllegalArgumentException if the record does not fit the target; the message names the record and field
   */
  void write(IN record) throws IOException;

  /**
   * Closes what is open for this checkpoint and returns what the checkpoint staged, or empty if nothing was
   * written since the last checkpoint. Has no visible side effect: the returned info is committed later, or
   * aborted.
   */
  Optional<C> prepareCommit(long checkpointId) throws IOException;

  /**
   * The state a restore needs, taken right after {@link #prepareCommit} of the same checkpoint. References and
   * positions only; never the data itself.
   */
  S snapshotState(long checkpointId) throws IOException;

  /**
   * Deletes what was staged since the last {@link #prepareCommit}, when the checkpoint in progress will never
   * complete. Best effort: leftovers are found by prefix and removed on the next restart.
   */
  void abortPrepare() throws IOException;

  /** Releases resources without deleting or committing anything. */
  @Override
  void close() throws IOException;

  /**
   * Closes every writer, also after one failed to close; the first failure is thrown with the others suppressed.
   */
  static void closeAll(Iterable<? extends SinkWriter<?, ?, ?>> writers) throws IOException {
    IOException failure = null;
    for (SinkWriter<?, ?, ?> writer : writers) {
      try {
        writer.close();
      } catch (IOException e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }
}
