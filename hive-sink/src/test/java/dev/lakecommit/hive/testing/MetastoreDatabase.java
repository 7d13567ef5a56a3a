package dev.lakecommit.hive.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.txn.TxnDbUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a {@link HiveMetastoreServer} keeps its catalog: the JVM's embedded Derby database, or a database in an
 * {@link EmbeddedPostgres}.
 *
 * <p>Hive 2.3 keeps its database connections in static state (ObjectStore's persistence manager factory,
 * TxnHandler's pools), so there is one Derby metastore database per JVM, in memory, shared by every Derby-backed
 * server in turn (each new server empties it first); Iceberg's own test metastore also keeps one per JVM.
 */
final class MetastoreDatabase {
  private static final Logger LOG = LoggerFactory.getLogger(MetastoreDatabase.class);
  private static final String DERBY_URL = "jdbc:derby:memory:lakecommit_metastore;create=true";
  private static Path derbyLogDir;
  private static boolean derbyLockTablesCreated;

  private final HiveMetastoreServer.Backend backend;
  private final Map<String, String> connectionConf;

  private MetastoreDatabase(HiveMetastoreServer.Backend backend, Map<String, String> connectionConf) {
    this.backend = backend;
    this.connectionConf = connectionConf;
  }

  static synchronized MetastoreDatabase derby() {
    if (derbyLogDir == null) {
      try {
        derbyLogDir = Files.createTempDirectory("lakecommit-hms-derby-");
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot create a directory for derby.log", e);
      }
      // Otherwise derby.log lands in the working directory.
      System.setProperty("derby.stream.error.file", derbyLogDir.resolve("derby.log").toString());
      Path dir = derbyLogDir;
      Runtime.getRuntime().addShutdownHook(new Thread(() -> TestFiles.deleteRecursively(dir), "derby-log-cleanup"));
    }
    // In memory: creating the metastore schema takes about half as long as on disk.
    return new MetastoreDatabase(
        HiveMetastoreServer.Backend.DERBY,
        connection(DERBY_URL, "org.apache.derby.jdbc.EmbeddedDriver", "APP", "mine"));
  }

  static MetastoreDatabase postgres(EmbeddedPostgres pg, String database) {
    return new MetastoreDatabase(
        HiveMetastoreServer.Backend.POSTGRES,
        connection(pg.createDatabase(database), "org.postgresql.Driver", pg.user(), pg.password()));
  }

  HiveMetastoreServer.Backend backend() {
    return backend;
  }

  /** The {@code javax.jdo.option.*} entries of the server's configuration. */
  Map<String, String> connectionConf() {
    return connectionConf;
  }

  /** Called before each start of a server on this database, with the server's configuration. */
  void prepare(HiveConf serverConf) {
    resetTxnHandlerPools();
    if (backend == HiveMetastoreServer.Backend.DERBY) {
      createDerbyLockTables(serverConf);
    }
  }

  /**
   * The HMS lock API (which Iceberg's HiveCatalog uses unless told not to) needs the transaction tables; Hive 2.3
   * creates them only in Derby's dialect, and only once per database.
   */
  private static synchronized void createDerbyLockTables(HiveConf serverConf) {
    if (!derbyLockTablesCreated) {
      try {
        TxnDbUtil.prepDb(serverConf);
      } catch (Exception e) {
        throw new IllegalStateException("Cannot create the metastore's lock tables in Derby", e);
      }
      derbyLockTablesCreated = true;
    }
  }

  /**
   * TxnHandler sets its connection pools up once per JVM, for whichever metastore database first used them (a
   * drop on PostgreSQL is enough). Forget them so the next use connects to this server's database.
   */
  private static void resetTxnHandlerPools() {
    Class<?> txnHandler;
    try {
      txnHandler = Class.forName("org.apache.hadoop.hive.metastore.txn.TxnHandler");
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("Not the Hive 2.3 metastore this helper was written for", e);
    }
    synchronized (txnHandler) {
      for (String name : new String[] {"connPool", "connPoolMutex"}) {
        try {
          Field field = txnHandler.getDeclaredField(name);
          field.setAccessible(true);
          DataSource pool = (DataSource) field.get(null);
          field.set(null, null);
          if (pool instanceof AutoCloseable) {
            ((AutoCloseable) pool).close();
          }
        } catch (Exception e) {
          // A Hive without these fields has no such static state to reset.
          LOG.warn("Cannot reset TxnHandler.{}; lock calls may reach an older metastore database", name, e);
        }
      }
    }
  }

  private static Map<String, String> connection(String url, String driver, String user, String password) {
    return Map.of(
        HiveConf.ConfVars.METASTORECONNECTURLKEY.varname, url,
        HiveConf.ConfVars.METASTORE_CONNECTION_DRIVER.varname, driver,
        HiveConf.ConfVars.METASTORE_CONNECTION_USER_NAME.varname, user,
        HiveConf.ConfVars.METASTOREPWD.varname, password);
  }
}
