package dev.lakecommit.staging.testing;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts files being written: a file is open from the moment a writer asks its {@code FileIO} for the output
 * file until the output stream is closed. (Parquet writers buffer a row group before they create the stream, so
 * counting streams alone would miss open writers.)
 */
public final class OpenFileCounter {
  private final AtomicInteger open = new AtomicInteger();
  private final AtomicInteger max = new AtomicInteger();
  private final AtomicInteger opened = new AtomicInteger();

  void fileOpened() {
    opened.incrementAndGet();
    max.accumulateAndGet(open.incrementAndGet(), Math::max);
  }

  void fileClosed() {
    open.decrementAndGet();
  }

  /** Files open now. */
  public int open() {
    return open.get();
  }

  /** The most files ever open at once. */
  public int maxOpen() {
    return max.get();
  }

  /** Files ever opened. */
  public int openedTotal() {
    return opened.get();
  }
}
