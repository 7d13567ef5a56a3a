package dev.lakecommit.bench;

import dev.lakecommit.iceberg.ForwardingTableOperations;
import java.util.Map;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.hadoop.HadoopCatalog;

/**
 * A Hadoop catalog whose every commit takes {@code commit-delay-ms} longer, as a far or busy catalog service's
 * does: the delay is injected at the catalog boundary, in {@link TableOperations#commit}, before the commit is
 * made, so what the committer sees is a slow catalog, not a slow client. Loaded by {@code catalog-impl}.
 */
public final class DelayedCommitCatalog extends HadoopCatalog {
  /** Catalog property: milliseconds every table commit waits before it is made (default 0). */
  public static final String COMMIT_DELAY_MS = "commit-delay-ms";

  private long delayMillis;

  @Override
  public void initialize(String name, Map<String, String> properties) {
    String delay = properties.getOrDefault(COMMIT_DELAY_MS, "0");
    try {
      this.delayMillis = Long.parseLong(delay);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("Invalid catalog property " + COMMIT_DELAY_MS + ": " + delay, e);
    }
    if (delayMillis < 0) {
      throw new IllegalArgumentException("Invalid catalog property " + COMMIT_DELAY_MS + ": " + delay
          + " (must be >= 0)");
    }
    super.initialize(name, properties);
  }

  @Override
  protected TableOperations newTableOps(TableIdentifier identifier) {
    TableOperations ops = super.newTableOps(identifier);
    return delayMillis == 0 ? ops : new Delayed(ops, delayMillis);
  }

  private static final class Delayed extends ForwardingTableOperations {
    private final long delayMillis;

    Delayed(TableOperations delegate, long delayMillis) {
      super(delegate);
      this.delayMillis = delayMillis;
    }

    @Override
    public void commit(TableMetadata base, TableMetadata metadata) {
      try {
        Thread.sleep(delayMillis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted in the injected catalog delay", e);
      }
      delegate().commit(base, metadata);
    }
  }
}
