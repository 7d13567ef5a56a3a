package dev.lakecommit.hive.testing;

import dev.lakecommit.core.testing.LoopbackPorts;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.RetryingMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An in-process Hive Metastore (Hive 2.3) Thrift server on 127.0.0.1, on embedded Derby or on a database in an
 * {@link EmbeddedPostgres}, with its warehouse in a temporary directory.
 *
 * <p>Start one per test class and close it after the class:
 *
 * <pre>{@code
 * static HiveMetastoreServer hms;
 * @BeforeAll static void start() { hms = HiveMetastoreServer.startOnDerby(); }   // or startOnPostgres(pg)
 * @AfterAll static void stop() { hms.close(); }
 *
 * HiveMetaStoreClient client = hms.newClient();                      // Hive API
 * Catalog catalog = CatalogUtil.loadCatalog(HiveCatalog.class.getName(), "hive",
 *     hms.icebergCatalogProperties(), hms.hiveConf());               // Iceberg
 * hms.stop(); ... hms.start();                                       // outage; same port, same catalog
 * }</pre>
 *
 * <p>A new server starts with an empty catalog (only {@code default}), unless it reuses a named PostgreSQL
 * database. {@link #stop()} closes every client connection too, so a stopped metastore is really gone.
 *
 * <p>On PostgreSQL the metastore has no lock tables: {@link #clientConf()} (and so {@link #hiveConf()}) turn
 * Iceberg's HMS locks off with {@code iceberg.engine.hive.lock-enabled=false}; Hive 2.3.10 then rejects stale
 * metadata swaps itself. Clients building their own Hadoop configuration must copy {@link #clientConf()}.
 *
 * <p>Hive 2.3 keeps the metastore's database connections in static state: one server runs in a JVM at a time.
 */
public final class HiveMetastoreServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HiveMetastoreServer.class);
  private static final AtomicInteger POSTGRES_DATABASES = new AtomicInteger();
  // Without log4j, DataNucleus logs through java.util.logging, at info, to stderr. Held so it is not collected.
  private static final java.util.logging.Logger DATANUCLEUS_LOG = java.util.logging.Logger.getLogger("DataNucleus");
  private static HiveMetastoreServer running;

  static {
    DATANUCLEUS_LOG.setLevel(java.util.logging.Level.WARNING);
  }

  /** The database behind the metastore. */
  public enum Backend {
    DERBY,
    POSTGRES
  }

  private final MetastoreDatabase database;
  private final Map<String, String> serverOverrides;
  private final Path root;
  private final Path warehouse;
  private ThriftMetastoreService service;
  private int port;
  private boolean started;
  private boolean closed;

  private HiveMetastoreServer(MetastoreDatabase database, Map<String, String> serverOverrides) {
    this.database = database;
    this.serverOverrides = Map.copyOf(serverOverrides);
    try {
      this.root = Files.createTempDirectory("lakecommit-hms-");
      this.warehouse = Files.createDirectories(root.resolve("warehouse"));
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot create the metastore warehouse directory", e);
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Starts a metastore on the JVM's embedded Derby database, with the lock tables Iceberg's HiveCatalog uses. */
  public static HiveMetastoreServer startOnDerby() {
    return builder().derby().start();
  }

  /** Starts a metastore on a new database in {@code pg}. */
  public static HiveMetastoreServer startOnPostgres(EmbeddedPostgres pg) {
    return builder().postgres(pg).start();
  }

  /**
   * Starts serving: on a free loopback port the first time, on the same port after {@link #stop()}. Returns once
   * the metastore answers.
   *
   * @throws IllegalStateException if running, closed, another server runs in this JVM, or the metastore cannot
   *     start (e.g. its database is down, or the port was taken while stopped)
   */
  public void start() {
    long begin = System.nanoTime();
    boolean first;
    synchronized (HiveMetastoreServer.class) {
      synchronized (this) {
        if (closed) {
          throw new IllegalStateException("Metastore " + this + " is closed");
        }
        if (running != null) {
          throw new IllegalStateException(
              "Cannot start " + this + ": " + running + " is running in this JVM; Hive 2.3 keeps the"
                  + " metastore's database connections in static state, so stop that one first");
        }
        try {
          HiveConf conf = serverConf();
          database.prepare(conf);
          if (port == 0) {
            port = LoopbackPorts.reserve();
          }
          service = ThriftMetastoreService.start(conf, port);
        } catch (Exception e) {
          throw new IllegalStateException("Cannot start the Hive Metastore on " + database.backend(), e);
        }
        port = service.port();
        running = this;
        first = !started;
        started = true;
      }
    }
    try {
      if (first && database.backend() == Backend.DERBY) {
        emptyCatalog();
      }
      awaitAnswer();
    } catch (Exception e) {
      stop();
      throw new IllegalStateException("Metastore " + this + " does not answer", e);
    }
    LOG.info("Hive Metastore on {} serving {} after {} ms", backend(), uri(), (System.nanoTime() - begin) / 1_000_000);
  }

  /**
   * Stops serving: closes the listening socket and every client connection, and returns once the server threads
   * have ended. The port, the warehouse and the database stay for {@link #start()}. Does nothing if stopped.
   */
  public void stop() {
    synchronized (HiveMetastoreServer.class) {
      synchronized (this) {
        if (service == null) {
          return;
        }
        try {
          service.stop();
        } finally {
          service = null;
          running = null;
        }
      }
    }
  }

  public synchronized boolean isRunning() {
    return service != null;
  }

  public Backend backend() {
    return database.backend();
  }

  /** Whether the HMS lock API works here (Derby); on PostgreSQL, clients must not lock. */
  public boolean supportsLocks() {
    return database.backend() == Backend.DERBY;
  }

  public synchronized int port() {
    if (port == 0) {
      throw new IllegalStateException("Metastore has not started yet");
    }
    return port;
  }

  public String uri() {
    return "thrift://127.0.0.1:" + port();
  }

  /** The warehouse root on the local file system. */
  public Path warehouseDir() {
    return warehouse;
  }

  /** The warehouse root as Hadoop and Iceberg want it: {@code file:/...}. */
  public String warehouseLocation() {
    return "file:" + warehouse.toAbsolutePath();
  }

  /**
   * The Hadoop configuration entries a client needs: metastore URI, warehouse, client timeouts and retries, and
   * {@code iceberg.engine.hive.lock-enabled=false} where the metastore cannot lock.
   */
  public Map<String, String> clientConf() {
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put(HiveConf.ConfVars.METASTOREURIS.varname, uri());
    conf.put(HiveConf.ConfVars.METASTOREWAREHOUSE.varname, warehouseLocation());
    conf.put(HiveConf.ConfVars.METASTORE_CLIENT_SOCKET_TIMEOUT.varname, "60s");
    conf.put(HiveConf.ConfVars.METASTORETHRIFTCONNECTIONRETRIES.varname, "3");
    conf.put(HiveConf.ConfVars.METASTORE_CLIENT_CONNECT_RETRY_DELAY.varname, "1s");
    if (!supportsLocks()) {
      conf.put("iceberg.engine.hive.lock-enabled", "false");
    }
    return conf;
  }

  /** A new client configuration with {@link #clientConf()} applied. */
  public HiveConf hiveConf() {
    HiveConf conf = new HiveConf(new Configuration(), HiveMetastoreServer.class);
    clientConf().forEach(conf::set);
    return conf;
  }

  /**
   * Catalog properties for Iceberg's HiveCatalog: {@code uri} and {@code warehouse}. Pass {@link #hiveConf()} as
   * its Hadoop configuration (it carries the lock setting).
   */
  public Map<String, String> icebergCatalogProperties() {
    return Map.of("uri", uri(), "warehouse", warehouseLocation());
  }

  /** A plain client (the caller closes it); after a metastore restart it fails until {@code reconnect()}. */
  public HiveMetaStoreClient newClient() throws MetaException {
    return new HiveMetaStoreClient(hiveConf());
  }

  /** A client that reconnects and retries once when its connection breaks, as Hive's own tools use it. */
  public IMetaStoreClient newRetryingClient() throws MetaException {
    return RetryingMetaStoreClient.getProxy(hiveConf(), null, HiveMetaStoreClient.class.getName());
  }

  /** Stops the server and deletes its warehouse. Idempotent. */
  @Override
  public void close() {
    try {
      stop();
    } finally {
      synchronized (this) {
        if (!closed) {
          closed = true;
          TestFiles.deleteRecursively(root);
        }
      }
    }
  }

  @Override
  public synchronized String toString() {
    return "HiveMetastoreServer{" + database.backend() + ", " + (port == 0 ? "not started" : uri())
        + (service != null ? ", running" : ", stopped") + "}";
  }

  private HiveConf serverConf() {
    HiveConf conf = new HiveConf(new Configuration(), HiveMetastoreServer.class);
    conf.set(HiveConf.ConfVars.METASTOREWAREHOUSE.varname, warehouseLocation());
    conf.set(HiveConf.ConfVars.METASTORE_AUTO_CREATE_ALL.varname, "true");
    conf.set(HiveConf.ConfVars.METASTORE_SCHEMA_VERIFICATION.varname, "false");
    // Partition pruning by expression would need hive-exec; filters (listPartitionsByFilter) work without it.
    conf.set(
        HiveConf.ConfVars.METASTORE_EXPRESSION_PROXY_CLASS.varname,
        "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy");
    // Iceberg's HiveCatalog changes column types on schema evolution.
    conf.set(HiveConf.ConfVars.METASTORE_DISALLOW_INCOMPATIBLE_COL_TYPE_CHANGES.varname, "false");
    // BoneCP is not on the classpath; HikariCP also revalidates its connections after a database restart.
    conf.set(HiveConf.ConfVars.METASTORE_CONNECTION_POOLING_TYPE.varname, "HikariCP");
    conf.set("datanucleus.connectionPool.connectionWaitTimeout", "10000");
    database.connectionConf().forEach(conf::set);
    serverOverrides.forEach(conf::set);
    return conf;
  }

  /** A new Derby server must not see what earlier servers left in the JVM's Derby database. */
  private void emptyCatalog() throws Exception {
    HiveMetaStoreClient client = newClient();
    try {
      for (String db : client.getAllDatabases()) {
        if (!"default".equals(db)) {
          client.dropDatabase(db, false, true, true);
        }
      }
      for (String table : client.getAllTables("default")) {
        client.dropTable("default", table, false, true);
      }
      Database defaultDb = client.getDatabase("default");
      if (!warehouseLocation().equals(defaultDb.getLocationUri())) {
        defaultDb.setLocationUri(warehouseLocation());
        client.alterDatabase("default", defaultDb);
      }
    } finally {
      client.close();
    }
  }

  private void awaitAnswer() throws Exception {
    HiveMetaStoreClient client = newClient();
    try {
      Objects.requireNonNull(client.getDatabase("default"), "default database");
    } finally {
      client.close();
    }
  }

  /** Which database, and optional server settings. */
  public static final class Builder {
    private final Map<String, String> serverConf = new LinkedHashMap<>();
    private EmbeddedPostgres postgres;
    private String postgresDatabase;

    private Builder() {}

    /** The JVM's embedded Derby database (the default). */
    public Builder derby() {
      this.postgres = null;
      this.postgresDatabase = null;
      return this;
    }

    /** A new database in {@code pg} (named {@code hive_metastore_N}). */
    public Builder postgres(EmbeddedPostgres pg) {
      this.postgres = Objects.requireNonNull(pg, "pg");
      this.postgresDatabase = null;
      return this;
    }

    /** A given database in {@code pg}, created if missing; a later server on it sees the earlier one's catalog. */
    public Builder postgres(EmbeddedPostgres pg, String database) {
      this.postgres = Objects.requireNonNull(pg, "pg");
      this.postgresDatabase = Objects.requireNonNull(database, "database");
      return this;
    }

    /**
     * A server-side setting, e.g. {@code hive.hmshandler.retry.attempts} and {@code hive.hmshandler.retry.interval}
     * (how often and how far apart the metastore retries a call whose database access failed; 10 and 2 s by
     * default), or {@code datanucleus.connectionPool.connectionWaitTimeout} (ms to wait for a database connection).
     */
    public Builder serverConf(String key, String value) {
      serverConf.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /** Creates the server and starts it; see {@link HiveMetastoreServer#start()}. */
    public HiveMetastoreServer start() {
      MetastoreDatabase database =
          postgres == null
              ? MetastoreDatabase.derby()
              : MetastoreDatabase.postgres(
                  postgres,
                  postgresDatabase != null
                      ? postgresDatabase
                      : "hive_metastore_" + POSTGRES_DATABASES.incrementAndGet());
      HiveMetastoreServer hms = new HiveMetastoreServer(database, serverConf);
      try {
        hms.start();
      } catch (RuntimeException | Error e) {
        hms.close();
        throw e;
      }
      return hms;
    }
  }
}
