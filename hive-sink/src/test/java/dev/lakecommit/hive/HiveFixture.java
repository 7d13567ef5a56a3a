package dev.lakecommit.hive;

import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.AlreadyExistsException;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.thrift.TException;

/**
 * One metastore and one storage for a test class: local disk (the metastore's warehouse) or S3 through S3A.
 * Tables go into database {@value #DB}, whose location is on that storage, so managed tables land there too.
 */
final class HiveFixture implements AutoCloseable {
  static final String DB = "lc";
  private static final AtomicInteger TABLES = new AtomicInteger();

  private final HiveMetastoreServer hms;
  private final String warehouse;
  private final Map<String, String> hadoopProperties;
  private final IMetaStoreClient client;

  HiveFixture(HiveMetastoreServer hms, String warehouse, Map<String, String> hadoopProperties) throws TException {
    this.hms = hms;
    this.warehouse = warehouse;
    this.hadoopProperties = new LinkedHashMap<>(hadoopProperties);
    this.client = hms.newRetryingClient();
    try {
      client.createDatabase(new Database(DB, "tests", warehouse + "/" + DB + ".db", new HashMap<>()));
    } catch (AlreadyExistsException e) {
      // kept from an earlier class on the same metastore
    }
  }

  /** A table name not used before in this JVM. */
  static String newTable(String prefix) {
    return prefix + "_" + TABLES.incrementAndGet();
  }

  HiveMetastoreServer hms() {
    return hms;
  }

  IMetaStoreClient client() {
    return client;
  }

  String warehouse() {
    return warehouse;
  }

  /** Where an external table of this name goes. */
  String location(String table) {
    return warehouse + "/external/" + table;
  }

  Configuration conf() {
    Configuration conf = new Configuration();
    hadoopProperties.forEach(conf::set);
    return conf;
  }

  /** A sink configuration for {@code lc.<table>} with this fixture's metastore and storage. */
  HiveSinkConfig.Builder config(String table) {
    HiveSinkConfig.Builder builder = HiveSinkConfig.builder().metastoreUri(hms.uri()).table(DB + "." + table);
    hadoopProperties.forEach(builder::hadoopProperty);
    return builder;
  }

  TableContents contents(String table) {
    return TableContents.read(client, conf(), DB, table);
  }

  @Override
  public void close() {
    client.close();
  }
}
