package dev.lakecommit.ingest.hive;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.hive.CompatibleMetaStoreClient;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SortedMap;
import java.util.NoSuchElementException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.thrift.TException;

/**
 * An existing Hive table as {@code status} and {@code verify} read it: its parameters, its location, and the
 * directories that hold its data (the table's location, or each partition's location as the metastore lists it),
 * as any reader of the table finds them. Writing, watermarks, epochs and staged files are hive-sink's
 * ({@code CommitTarget}). Holds one metastore client.
 */
public final class HiveTableView implements AutoCloseable {
  /** Hive-sink's hidden staging directory under the table's base location (see {@code dev.lakecommit.hive}). */
  static final String STAGING_DIR = ".lakecommit-staging";
  /** Hive-sink's directory of overwritten data; an unpartitioned table overwritten lives in one of its children. */
  static final String OVERWRITE_DIR = ".lakecommit-overwrite";
  static final String VERSION_KEY = "lakecommit.version";
  private static final int PARTITION_BATCH = 100;

  private final IMetaStoreClient client;
  private final Configuration conf;
  private final Table table;
  private final String name;

  private HiveTableView(IMetaStoreClient client, Configuration conf, Table table) {
    this.client = client;
    this.conf = conf;
    this.table = table;
    this.name = table.getDbName() + "." + table.getTableName();
  }

  /**
   * Connects to the metastore and loads {@code database.table}.
   *
   * @param hadoopProperties Hadoop and Hive settings of the client and the table's storage
   * @throws IllegalArgumentException if the table name is not {@code database.table} or the table does not exist
   * @throws IllegalStateException if the metastore cannot be reached
   */
  public static HiveTableView open(String metastoreUri, Map<String, String> hadoopProperties, String table) {
    int dot = table.indexOf('.');
    if (dot <= 0 || dot != table.lastIndexOf('.') || dot == table.length() - 1) {
      throw new IllegalArgumentException("Invalid option --table: '" + table + "' (a Hive table is "
          + "database.table, e.g. shop.orders)");
    }
    String database = table.substring(0, dot).toLowerCase(Locale.ROOT);
    String tableName = table.substring(dot + 1).toLowerCase(Locale.ROOT);
    Configuration conf = new Configuration();
    hadoopProperties.forEach(conf::set);
    HiveConf hiveConf = new HiveConf(conf, HiveTableView.class);
    hiveConf.set(HiveConf.ConfVars.METASTOREURIS.varname, metastoreUri);
    IMetaStoreClient client;
    try {
      client = CompatibleMetaStoreClient.open(hiveConf);
    } catch (TException | RuntimeException e) {
      throw new IllegalStateException("Cannot connect to the Hive Metastore " + metastoreUri + ": "
          + e.getMessage(), e);
    }
    try {
      return new HiveTableView(client, conf, client.getTable(database, tableName));
    } catch (NoSuchObjectException e) {
      client.close();
      throw new IllegalArgumentException("Table " + database + "." + tableName + " does not exist in the Hive "
          + "Metastore " + metastoreUri, e);
    } catch (TException | RuntimeException e) {
      client.close();
      throw new IllegalStateException("Cannot load table " + database + "." + tableName + " from the Hive "
          + "Metastore " + metastoreUri + ": " + e.getMessage(), e);
    }
  }

  /** {@code database.table}, lower case as the metastore keeps it. */
  public String name() {
    return name;
  }

  public Map<String, String> parameters() {
    return table.getParameters() == null ? Map.of() : table.getParameters();
  }

  /** The jobs that committed to the table (their watermarks) or claimed a run epoch in it, by job id. */
  public SortedMap<String, CommitTarget.JobState> jobs() {
    return CommitTarget.JobState.fromProperties(name, parameters());
  }

  /** Hive-sink's change counter of the table ({@value #VERSION_KEY}); null if it never changed the table. */
  public String version() {
    return parameters().get(VERSION_KEY);
  }

  public String location() {
    return table.getSd().getLocation();
  }

  /** The partition columns, in order (empty for an unpartitioned table). */
  public List<String> partitionColumns() {
    return table.getPartitionKeys() == null ? List.of()
        : table.getPartitionKeys().stream().map(FieldSchema::getName).toList();
  }

  /** The data columns and their Hive types, in order. */
  public Map<String, String> columns() {
    Map<String, String> columns = new LinkedHashMap<>();
    table.getSd().getCols().forEach(c -> columns.put(c.getName(), c.getType()));
    return columns;
  }

  /** The Hadoop configuration of the table's storage. */
  public Configuration conf() {
    return new Configuration(conf);
  }

  /** The number of partitions; 0 for an unpartitioned table. */
  public int partitionCount() throws TException {
    return partitionColumns().isEmpty() ? 0
        : client.listPartitionNames(table.getDbName(), table.getTableName(), (short) -1).size();
  }

  /**
   * The directories a Hive reader reads, with the partition values of each: the table's location, or every
   * partition's location, fetched from the metastore a batch at a time while iterating.
   */
  public Iterator<DataDirectory> dataDirectories() throws TException {
    if (partitionColumns().isEmpty()) {
      return List.of(new DataDirectory(new Path(location()), List.of())).iterator();
    }
    List<String> names = client.listPartitionNames(table.getDbName(), table.getTableName(), (short) -1);
    return new Iterator<>() {
      private int next;
      private Iterator<Partition> batch = List.<Partition>of().iterator();

      @Override
      public boolean hasNext() {
        while (!batch.hasNext() && next < names.size()) {
          List<String> slice = names.subList(next, Math.min(names.size(), next + PARTITION_BATCH));
          next += slice.size();
          try {
            batch = new ArrayList<>(client.getPartitionsByNames(table.getDbName(), table.getTableName(), slice))
                .iterator();
          } catch (TException e) {
            throw new IllegalStateException("Cannot list partitions of table " + name + ": " + e.getMessage(), e);
          }
        }
        return batch.hasNext();
      }

      @Override
      public DataDirectory next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        Partition partition = batch.next();
        return new DataDirectory(new Path(partition.getSd().getLocation()), partition.getValues());
      }
    };
  }

  /**
   * A directory of the table's data.
   *
   * @param path the directory
   * @param partitionValues the values of the partition columns, in order, as the metastore holds them
   */
  public record DataDirectory(Path path, List<String> partitionValues) {
    public DataDirectory {
      partitionValues = List.copyOf(partitionValues);
    }
  }

  @Override
  public void close() {
    client.close();
  }

  @Override
  public String toString() {
    return name;
  }
}
