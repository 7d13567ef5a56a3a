package dev.lakecommit.iceberg;

import dev.lakecommit.staging.S3Clients;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;

/**
 * Loads Iceberg catalogs from Iceberg's own catalog properties, as the sinks and the tool use them: S3FileIO retries
 * with {@link S3Clients}' defaults, a Hadoop catalog is a {@link GuardedHadoopCatalog}, and a Hive catalog is
 * Lakecommit's {@code CompatibleHiveCatalog} where the hive-sink module is on the class path (Iceberg's own calls
 * a table lookup that Hive Metastore 4.0.1 and later removed).
 */
public final class CatalogLoader {
  /** In the hive-sink module, which this one does not depend on. */
  static final String COMPATIBLE_HIVE_CATALOG = "dev.lakecommit.hive.CompatibleHiveCatalog";
  private static final String ICEBERG_HIVE_CATALOG = "org.apache.iceberg.hive.HiveCatalog";

  private CatalogLoader() {}

  /** The catalog of {@code properties}, initialized with {@code conf}. */
  public static Catalog load(String name, Map<String, String> properties, Configuration conf) {
    return CatalogUtil.buildIcebergCatalog(name, substitute(properties), conf);
  }

  /** {@code properties} as {@link #load} hands them to Iceberg. */
  static Map<String, String> substitute(Map<String, String> properties) {
    return compatibleHive(GuardedHadoopCatalog.substitute(S3Clients.withDefaults(properties)));
  }

  private static Map<String, String> compatibleHive(Map<String, String> properties) {
    String type = properties.get(CatalogUtil.ICEBERG_CATALOG_TYPE);
    String impl = properties.get(CatalogProperties.CATALOG_IMPL);
    boolean hive = impl == null ? type != null && CatalogUtil.ICEBERG_CATALOG_TYPE_HIVE.equals(
        type.toLowerCase(Locale.ROOT)) : ICEBERG_HIVE_CATALOG.equals(impl);
    if (!hive || !loadable(COMPATIBLE_HIVE_CATALOG)) {
      return properties;
    }
    Map<String, String> compatible = new HashMap<>(properties);
    compatible.remove(CatalogUtil.ICEBERG_CATALOG_TYPE);
    compatible.put(CatalogProperties.CATALOG_IMPL, COMPATIBLE_HIVE_CATALOG);
    return compatible;
  }

  private static boolean loadable(String className) {
    try {
      Class.forName(className, false, CatalogLoader.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }
}
