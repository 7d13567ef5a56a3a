package dev.lakecommit.core.runtime;

import java.io.IOException;
import java.time.Duration;

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

  /**
   * The text form of a position that goes into the commit of the checkpoint taken there ({@link
   * dev.lakecommit.core.CommitId#sourcePositionKey}), so that the table alone tells where the job stands — e.g.
   * Kafka offsets per partition. Null (the default) records nothing.
   */
  default String commitPosition(byte[] position) {
    return null;
  }

  /** Reads records one at a time; used by one thread. */
  interface SourceReader<T> extends AutoCloseable {

    /** The next record, or null at the end of the input. */
    T next() throws IOException;

    /**
     * The next record, waiting at most {@code maxWait} for one: an unbounded input (a stream) returns null when
     * none arrived in time, so that the job can take a checkpoint by interval while its input is idle; {@link
     * #ended()} tells that from the end. The default is {@link #next()} (a bounded input that never waits).
     */
    default T poll(Duration maxWait) throws IOException, InterruptedException {
      return next();
    }

    /** After {@link #poll} returned null: whether the input ended (true, the default) or is only idle. */
    default boolean ended() {
      return true;
    }

    /**
     * Whether a checkpoint may be taken after the records returned so far: false while they end inside a unit the
     * source keeps whole in one checkpoint (a source database's transaction), so that the job reads on to the unit's
     * end first. A source that says false must return the rest of the unit without waiting for more input. True
     * (the default) everywhere else.
     */
    default boolean atBoundary() {
      return true;
    }

    /** The position just after the last record returned by {@link #next()}: opening there resumes exactly. */
    byte[] position();

    @Override
    void close() throws IOException;
  }
}
