package dev.lakecommit.flink;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.hadoop.HadoopCatalog;

/**
 * A Hadoop catalog ({@code catalog-impl}) that counts its instances initialized and closed in this JVM, for tests
 * that the code which opens a catalog also closes it.
 */
public class CountingHadoopCatalog extends HadoopCatalog {
  static final AtomicInteger INITIALIZED = new AtomicInteger();
  static final AtomicInteger CLOSED = new AtomicInteger();

  @Override
  public void initialize(String name, Map<String, String> properties) {
    super.initialize(name, properties);
    INITIALIZED.incrementAndGet();
  }

  @Override
  public void close() throws IOException {
    super.close();
    CLOSED.incrementAndGet();
  }
}
