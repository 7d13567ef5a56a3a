package dev.lakecommit.core.testing;

import dev.lakecommit.core.SinkWriter;
import java.io.IOException;
import java.util.Optional;

/**
 * A {@link SinkWriter} that forwards every call to another one; tests override the one step they break or observe.
 */
public class ForwardingSinkWriter<IN, C, S> implements SinkWriter<IN, C, S> {
  protected final SinkWriter<IN, C, S> delegate;

  public ForwardingSinkWriter(SinkWriter<IN, C, S> delegate) {
    this.delegate = delegate;
  }

  @Override
  public void write(IN record) throws IOException {
    delegate.write(record);
  }

  @Override
  public Optional<C> prepareCommit(long checkpointId) throws IOException {
    return delegate.prepareCommit(checkpointId);
  }

  @Override
  public S snapshotState(long checkpointId) throws IOException {
    return delegate.snapshotState(checkpointId);
  }

  @Override
  public void abortPrepare() throws IOException {
    delegate.abortPrepare();
  }

  @Override
  public void close() throws IOException {
    delegate.close();
  }
}
