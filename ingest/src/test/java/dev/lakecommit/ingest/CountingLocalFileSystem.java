package dev.lakecommit.ingest;

import java.io.IOException;
import java.net.URI;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocalFileSystem;

/**
 * Hadoop's local file system, counting its instances and how many of them were closed: set it as
 * {@code fs.file.impl} (with {@code fs.file.impl.disable.cache=true}, as the S3 tests set S3A) in the options of a
 * command to see how many file systems the command opens and whether it closes them. The counts are global: only
 * one test at a time may use it.
 */
public final class CountingLocalFileSystem extends LocalFileSystem {
  private static final AtomicInteger INITIALIZED = new AtomicInteger();
  private static final AtomicInteger CLOSED = new AtomicInteger();
  private final AtomicBoolean closed = new AtomicBoolean();

  static void reset() {
    INITIALIZED.set(0);
    CLOSED.set(0);
  }

  /** Instances initialised since the last {@link #reset}. */
  static int initialized() {
    return INITIALIZED.get();
  }

  /** Instances closed (each counted once) since the last {@link #reset}. */
  static int closed() {
    return CLOSED.get();
  }

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    INITIALIZED.incrementAndGet();
  }

  @Override
  public void close() throws IOException {
    if (closed.compareAndSet(false, true)) {
      CLOSED.incrementAndGet();
    }
    super.close();
  }
}
