package dev.lakecommit.spark;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sinks built in this JVM, one per target and input schema, so that the tasks of a write (and the micro-batches
 * of a query) on one executor share one catalog or metastore connection instead of opening one per task. Each use
 * holds a {@link Lease}; past {@value #MAX_SINKS} sinks, the least recently used one that no lease holds is closed
 * (its catalog's connections with it), so a job that writes many tables, or builds its targets anew, does not keep
 * a catalog open per table for good.
 */
final class SinkCache {
  private static final Logger LOG = LoggerFactory.getLogger(SinkCache.class);
  static final int MAX_SINKS = 16;

  /** A sink and how many leases hold it. */
  private static final class Entry {
    final SinkRecipe.Opened<?, ?> opened;
    int leases;

    Entry(SinkRecipe.Opened<?, ?> opened) {
      this.opened = opened;
    }
  }

  /** In the order of last use. */
  private static final Map<String, Entry> SINKS = new LinkedHashMap<>(16, 0.75f, true);

  private SinkCache() {}

  /** One use of a cached sink: the sink stays open until every lease on it is closed. */
  static final class Lease implements AutoCloseable {
    private final Entry entry;
    private boolean closed;

    private Lease(Entry entry) {
      this.entry = entry;
    }

    SinkRecipe.Opened<?, ?> opened() {
      return entry.opened;
    }

    @Override
    public void close() {
      synchronized (SINKS) {
        if (!closed) {
          closed = true;
          entry.leases--;
          evict();
        }
      }
    }
  }

  /** The sink of {@code target} for rows of {@code schema}, built now if this JVM has none; close the lease after. */
  static Lease open(SinkRecipe target, StructType schema) {
    String key = target.key + "/" + schema.json();
    synchronized (SINKS) {
      Entry entry = SINKS.get(key);
      if (entry == null) {
        entry = new Entry(target.open(schema));
        SINKS.put(key, entry);
      }
      entry.leases++;
      evict();
      return new Lease(entry);
    }
  }

  /** Closes the least recently used sinks that no lease holds while there are more than {@link #MAX_SINKS}. */
  private static void evict() {
    Iterator<Map.Entry<String, Entry>> entries = SINKS.entrySet().iterator();
    while (SINKS.size() > MAX_SINKS && entries.hasNext()) {
      Entry entry = entries.next().getValue();
      if (entry.leases == 0) {
        entries.remove();
        try {
          entry.opened.sink().close();
        } catch (Exception e) {
          LOG.warn("Could not close an unused sink: {}", e.toString());
        }
      }
    }
  }

  /** Sinks this JVM keeps open now (for tests). */
  static int size() {
    synchronized (SINKS) {
      return SINKS.size();
    }
  }
}
