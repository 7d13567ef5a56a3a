package dev.lakecommit.iceberg;

import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * A Hadoop configuration for catalogs and file systems, from the same property map as the catalog: keys starting
 * with {@code fs.} (for example {@code fs.s3a.endpoint}) are Hadoop settings and are copied in.
 */
public final class HadoopConfs {
  private HadoopConfs() {}

  public static Configuration from(Map<String, String> properties) {
    Configuration conf = new Configuration();
    properties.forEach((key, value) -> {
      if (key.startsWith("fs.")) {
        conf.set(key, value);
      }
    });
    return conf;
  }
}
