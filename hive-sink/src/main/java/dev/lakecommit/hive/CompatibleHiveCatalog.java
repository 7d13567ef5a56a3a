package dev.lakecommit.hive;

import java.io.IOException;
import java.lang.reflect.Field;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.ClientPool;
import org.apache.iceberg.hive.HiveCatalog;
import org.apache.iceberg.hive.HiveClientPool;
import org.apache.iceberg.hive.RuntimeMetaException;
import org.apache.iceberg.util.PropertyUtil;

/**
 * Iceberg's {@link HiveCatalog}, talking to the metastore through {@link CompatibleMetaStoreClient}, so that it
 * works with Hive Metastore 2.3 to 4.x (Iceberg's own client calls {@code get_table}, which 4.0.1 removed).
 * Everything else — commits, the metastore lock, namespaces — is Iceberg's.
 *
 * <p>Iceberg's catalog makes its clients in a pool it keeps in a private field, with no way to name another client
 * class; this catalog puts a pool of its own clients there after Iceberg's initialization (checked once, when the
 * class loads) and closes it with the catalog. The pool is not shared between catalog instances, as Iceberg's
 * cached pool is.
 */
public class CompatibleHiveCatalog extends HiveCatalog {
  private static final Field CLIENTS = clientsField();

  private HiveClientPool compatibleClients;

  @Override
  public void initialize(String name, Map<String, String> properties) {
    super.initialize(name, properties);
    int size = PropertyUtil.propertyAsInt(properties, CatalogProperties.CLIENT_POOL_SIZE,
        CatalogProperties.CLIENT_POOL_SIZE_DEFAULT);
    Configuration conf = getConf();
    compatibleClients = new HiveClientPool(size, conf) {
      private final HiveConf hiveConf = hiveConf(conf);

      @Override
      protected IMetaStoreClient newClient() {
        try {
          return CompatibleMetaStoreClient.open(hiveConf);
        } catch (MetaException e) {
          throw new RuntimeMetaException(e, "Failed to connect to Hive Metastore");
        }
      }
    };
    try {
      CLIENTS.set(this, compatibleClients);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Cannot give Iceberg's Hive catalog its metastore clients", e);
    }
  }

  /** The client settings of Iceberg's own pool: the catalog's configuration, with its resources. */
  private static HiveConf hiveConf(Configuration conf) {
    HiveConf hiveConf = new HiveConf(conf, CompatibleHiveCatalog.class);
    hiveConf.addResource(conf);
    return hiveConf;
  }

  @Override
  public void close() throws IOException {
    try {
      super.close();
    } finally {
      if (compatibleClients != null) {
        compatibleClients.close();
      }
    }
  }

  private static Field clientsField() {
    try {
      Field field = HiveCatalog.class.getDeclaredField("clients");
      if (!ClientPool.class.isAssignableFrom(field.getType())) {
        throw new ExceptionInInitializerError("Iceberg's HiveCatalog.clients is a " + field.getType()
            + ", not a ClientPool: this Iceberg version is not supported");
      }
      field.setAccessible(true);
      return field;
    } catch (NoSuchFieldException e) {
      throw new ExceptionInInitializerError("Iceberg's HiveCatalog (" + HiveCatalog.class.getProtectionDomain()
          .getCodeSource() + ") has no field 'clients': this Iceberg version is not supported");
    }
  }
}
