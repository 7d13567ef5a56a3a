package dev.lakecommit.core.runtime;

import java.io.IOException;
import java.time.Duration;

/**
 * A reader that forwards everything to another, for decorators that count, pace or watch records: each record
 * {@link #next()} or {@link #poll} returns passes {@link #onRecord} first; positions, the end and closing are the
 * wrapped reader's.
 *
 * @param <T> records produced
 */
public abstract class ForwardingSourceReader<T> implements CheckpointedSource.SourceReader<T> {
  private final CheckpointedSource.SourceReader<T> reader;

  protected ForwardingSourceReader(CheckpointedSource.SourceReader<T> reader) {
    this.reader = reader;
  }

  /** Sees a record (never null) before it is returned; the default does nothing. */
  protected void onRecord(T record) throws IOException {}

  private T seen(T record) throws IOException {
    if (record != null) {
      onRecord(record);
    }
    return record;
  }

  @Override
  public T next() throws IOException {
    return seen(reader.next());
  }

  @Override
  public T poll(Duration maxWait) throws IOException, InterruptedException {
    return seen(reader.poll(maxWait));
  }

  @Override
  public boolean ended() {
    return reader.ended();
  }

  @Override
  public boolean atBoundary() {
    return reader.atBoundary();
  }

  @Override
  public byte[] position() {
    return reader.position();
  }

  @Override
  public void close() throws IOException {
    reader.close();
  }
}
