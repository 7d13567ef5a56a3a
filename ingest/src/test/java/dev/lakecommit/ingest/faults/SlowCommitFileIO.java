package dev.lakecommit.ingest.faults;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.OutputFile;

/**
 * A catalog's {@code FileIO} ({@code -C io-impl=dev.lakecommit.ingest.faults.SlowCommitFileIO}) that makes every
 * Iceberg commit slow: each new table metadata file — written by a commit right before it asks the catalog to swap
 * to it — waits {@link #delay} first. A slow catalog, injected at the catalog boundary; for tests in this JVM.
 */
public class SlowCommitFileIO extends HadoopFileIO {
  private static volatile Duration delay = Duration.ZERO;
  private static final AtomicInteger DELAYED = new AtomicInteger();

  /** Sets the delay of every commit from now on (zero: none) and resets the count. */
  public static void delay(Duration length) {
    delay = length;
    DELAYED.set(0);
  }

  /** Ends the delay; the count stays readable. */
  public static void off() {
    delay = Duration.ZERO;
  }

  /** How many commits were delayed since the last {@link #delay}. */
  public static int delayed() {
    return DELAYED.get();
  }

  @Override
  public OutputFile newOutputFile(String path) {
    Duration length = delay;
    if (path.endsWith(".metadata.json") && !length.isZero()) {
      DELAYED.incrementAndGet();
      try {
        // the injected slowness itself, not a wait for another thread
        Thread.sleep(length.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return super.newOutputFile(path);
  }
}
