package dev.lakecommit.spark;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.sql.types.StructType;

/**
 * The sinks built in this JVM, one per target and input schema, so that the tasks of a write (and the micro-batches
 * of a query) on one executor share one catalog or metastore connection instead of opening one per task. Bounded:
 * the least recently used sink is dropped (the sinks hold no open files; a dropped sink's catalog is left to the
 * garbage collector, as the sinks have no close).
 */
final class SinkCache {
  private static final int MAX_SINKS = 16;

  private static final Map<String, SinkRecipe.Opened<?, ?>> SINKS =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, SinkRecipe.Opened<?, ?>> eldest) {
          return size() > MAX_SINKS;
        }
      };

  private SinkCache() {}

  static SinkRecipe.Opened<?, ?> open(SinkRecipe target, StructType schema) {
    String key = target.key + "/" + schema.json();
    synchronized (SINKS) {
      SinkRecipe.Opened<?, ?> opened = SINKS.get(key);
      if (opened == null) {
        opened = target.open(schema);
        SINKS.put(key, opened);
      }
      return opened;
    }
  }
}
