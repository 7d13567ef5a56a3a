package dev.lakecommit.core.runtime;

import java.io.IOException;

/**
 * An input that can be resumed exactly: its position is stored with every checkpoint, and a restored job reopens
 * it there, so each record is read into exactly one committed checkpoint.
 *
 * @param <T> records produced
 */
@FunctionalInterface
public interface CheckpointedSource<T> {

  /**
   * Opens a reader.
   *
   * @param position a position a reader returned from {@link SourceReader#position()}, or null for the beginning
   * @throws IOException if the input cannot be opened; the message names it
   */
  SourceReader<T> open(byte[] position) throws IOException;

  /** Reads records one at a time; used by one thread. */
  interface SourceReader<T> extends AutoCloseable {

    /** The next record, or null at the end of the input. */
    T next() throws IOException;

    /** The position just after the last record returned by {@link #next()}: opening there resumes exactly. */
    byte[] position();

    @Override
    void close() throws IOException;
  }
}
