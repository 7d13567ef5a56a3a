package dev.lakecommit.hive.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.FutureTask;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.RawStore;
import org.apache.hadoop.hive.metastore.RetryingMetaStoreClient;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.server.ServerContext;
import org.apache.thrift.server.TServerEventHandler;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An in-process Hive Metastore (Hive 2.3) Thrift server on 127.0.0.1, backed by embedded Derby or by a database in
 * an {@link EmbeddedPostgres}, with its warehouse in a temporary directory.
 *
 * <p>Start one per test class and close it after the class: {@code HiveMetastoreServer.startOnDerby()} or {@code
 * HiveMetastoreServer.startOnPostgres(pg)}, or {@link #builder()} to override server settings. A new server starts
 * with an empty catalog (only {@code default}), unless it was asked to reuse a given PostgreSQL database. {@link #stop()} takes the metastore away, closing every client
 * connection; {@link #start()} brings it back on the same port with the same database.
 *
 * <p>Clients use {@link #hiveConf()} (or {@link #clientConf()} entries in their own Hadoop configuration), and
 * Iceberg's HiveCatalog additionally {@link #icebergCatalogProperties()}. On PostgreSQL the metastore has no lock
 * tables, so {@link #clientConf()} turns Iceberg's HMS locks off ({@code iceberg.engine.hive.lock-enabled=false});
 * Hive 2.3.10 then rejects stale metadata swaps itself.
 *
 * <p>Hive 2.3 keeps the metastore's database connections in static state: only one server runs in a JVM at a time.
 */
public final class HiveMetastoreServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HiveMetastoreServer.class);
  private static final long STOP_TIMEOUT_MS = 15_000;
  private static final int MAX_CONNECTIONS = 256;
  private static final AtomicInteger POSTGRES_DATABASES = new AtomicInteger();
  private static HiveMetastoreServer running;
  // Without log4j, DataNucleus logs through java.util.logging, at info, to stderr. Held so it is not collected.
  private static final java.util.logging.Logger DATANUCLEUS_LOG = java.util.logging.Logger.getLogger("DataNucleus");

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
  private int port;
  private boolean catalogEmptied;
  private boolean closed;
  private ClientClosingServerSocket socket;
  private TThreadPoolServer server;
  private Thread acceptor;

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
   * @throws IllegalStateException if running, closed, or another server runs in this JVM
   */
  public void start() {
    synchronized (HiveMetastoreServer.class) {
      if (closed) {
        throw new IllegalStateException("Metastore " + this + " is closed");
      }
      if (running != null) {
        throw new IllegalStateException(
            "Cannot start " + this + ": " + running + " is running in this JVM; Hive 2.3 keeps the metastore's"
                + " database connections in static state, so stop it first");
      }
      long begin = System.nanoTime();
      try {
        serve();
      } catch (Exception e) {
        shutDown();
        throw new IllegalStateException("Cannot start the Hive Metastore on " + database.backend(), e);
      }
      running = this;
    }
    if (!catalogEmptied && database.backend() == Backend.DERBY) {
      emptyCatalog();
      catalogEmptied = true;
    }
    awaitAnswer();
    LOG.info("Hive Metastore on {} serving {}", database.backend(), uri());
  }

  /**
   * Stops serving: closes the listening socket and every client connection, and returns once the server threads
   * have ended. The port, the warehouse and the database stay for {@link #start()}. Does nothing if stopped.
   */
  public void stop() {
    synchronized (HiveMetastoreServer.class) {
      if (running != this) {
        return;
      }
      try {
        shutDown();
      } finally {
        running = null;
      }
    }
  }

  public synchronized boolean isRunning() {
    return server != null;
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
   * Catalog properties for Iceberg's HiveCatalog ({@code uri}, {@code warehouse}); pass {@link #hiveConf()} as its
   * Hadoop configuration, e.g. {@code CatalogUtil.loadCatalog(HiveCatalog.class.getName(), "hive",
   * hms.icebergCatalogProperties(), hms.hiveConf())}.
   */
  public Map<String, String> icebergCatalogProperties() {
    return Map.of("uri", uri(), "warehouse", warehouseLocation());
  }

  /** A plain client: a call after a metastore restart fails until {@link IMetaStoreClient#reconnect()}. */
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
        + (server != null ? ", running" : ", stopped") + "}";
  }

  private synchronized void serve() throws Exception {
    HiveConf conf = serverConf();
    database.prepare(conf);
    IHMSHandler handler = newHandler(conf);
    socket = new ClientClosingServerSocket(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    port = socket.localPort();
    server =
        new TThreadPoolServer(
            new TThreadPoolServer.Args(socket)
                .processor(new TSetIpAddressProcessor<>(handler))
                .protocolFactory(new TBinaryProtocol.Factory())
                .executorService(workers(port))
                .stopTimeoutVal((int) STOP_TIMEOUT_MS)
                .stopTimeoutUnit(TimeUnit.MILLISECONDS));
    server.setServerEventHandler(new RawStoreCleanup());
    TThreadPoolServer started = server;
    acceptor = new Thread(started::serve, "hms-" + port + "-acceptor");
    acceptor.setDaemon(true);
    acceptor.start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!started.isServing()) {
      if (!acceptor.isAlive() || System.nanoTime() > deadline) {
        throw new IllegalStateException("Thrift server on port " + port + " did not start serving");
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
    }
  }

  private synchronized void shutDown() {
    if (server != null) {
      server.stop();
    }
    if (socket != null) {
      socket.closeAll();
    }
    try {
      if (acceptor != null) {
        acceptor.join(STOP_TIMEOUT_MS + 5_000);
        if (acceptor.isAlive()) {
          throw new IllegalStateException("Metastore on port " + port + " did not stop within its timeout");
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while stopping the metastore on port " + port, e);
    } finally {
      server = null;
      socket = null;
      acceptor = null;
    }
  }

  /**
   * Creates and initialises the handler (creating the schema on first use) on a thread of its own. HMSHandler
   * keeps a RawStore and a Configuration per thread and forgets neither reliably; left on the caller's thread,
   * they would make the next server in this JVM talk to this server's database.
   */
  private static IHMSHandler newHandler(HiveConf conf) throws Exception {
    FutureTask<IHMSHandler> init =
        new FutureTask<>(
            () -> {
              HiveMetaStore.HMSHandler base = new HiveMetaStore.HMSHandler("lakecommit test metastore", conf, false);
              // The retrying proxy initialises the handler, and retries calls whose database access fails,
              // e.g. while PostgreSQL is away.
              IHMSHandler handler = HiveMetaStore.newRetryingHMSHandler(base, conf, false);
              base.shutdown(); // this thread's RawStore; each worker thread opens its own
              return handler;
            });
    Thread thread = new Thread(init, "hms-init");
    thread.start();
    try {
      return init.get();
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
    }
  }

  private HiveConf serverConf() {
    HiveConf conf = new HiveConf(new Configuration(), HiveMetastoreServer.class);
    conf.set(HiveConf.ConfVars.METASTOREWAREHOUSE.varname, warehouseLocation());
    conf.set(HiveConf.ConfVars.METASTORE_AUTO_CREATE_ALL.varname, "true");
    conf.set(HiveConf.ConfVars.METASTORE_SCHEMA_VERIFICATION.varname, "false");
    conf.set(
        HiveConf.ConfVars.METASTORE_EXPRESSION_PROXY_CLASS.varname,
        "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy");
    // Iceberg's HiveCatalog changes column types on schema evolution.
    conf.set(HiveConf.ConfVars.METASTORE_DISALLOW_INCOMPATIBLE_COL_TYPE_CHANGES.varname, "false");
    // BoneCP is not on the classpath; HikariCP also revalidates connections after a database restart.
    conf.set(HiveConf.ConfVars.METASTORE_CONNECTION_POOLING_TYPE.varname, "HikariCP");
    conf.set("datanucleus.connectionPool.connectionWaitTimeout", "10000");
    database.connectionConf().forEach(conf::set);
    serverOverrides.forEach(conf::set);
    return conf;
  }

  private static ExecutorService workers(int port) {
    AtomicInteger count = new AtomicInteger();
    return new ThreadPoolExecutor(
        0,
        MAX_CONNECTIONS,
        60,
        TimeUnit.SECONDS,
        new SynchronousQueue<>(),
        runnable -> {
          Thread thread = new Thread(runnable, "hms-" + port + "-worker-" + count.incrementAndGet());
          thread.setDaemon(true);
          return thread;
        });
  }

  /** A new Derby server must not see what earlier servers on the JVM's Derby database left behind. */
  private void emptyCatalog() {
    try {
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
        String location = warehouseLocation();
        if (!location.equals(defaultDb.getLocationUri())) {
          defaultDb.setLocationUri(location);
          client.alterDatabase("default", defaultDb);
        }
      } finally {
        client.close();
      }
    } catch (Exception e) {
      stop();
      throw new IllegalStateException("Cannot empty the catalog of " + this, e);
    }
  }

  private void awaitAnswer() {
    try {
      HiveMetaStoreClient client = newClient();
      try {
        Objects.requireNonNull(client.getDatabase("default"), "default database");
      } finally {
        client.close();
      }
    } catch (Exception e) {
      stop();
      throw new IllegalStateException("Metastore " + this + " does not answer", e);
    }
  }

  /** Releases a worker thread's metastore database session when its client disconnects. */
  private static final class RawStoreCleanup implements TServerEventHandler {
    @Override
    public void preServe() {}

    @Override
    public ServerContext createContext(TProtocol input, TProtocol output) {
      return null;
    }

    @Override
    public void deleteContext(ServerContext context, TProtocol input, TProtocol output) {
      RawStore store = HiveMetaStore.HMSHandler.getRawStore();
      if (store != null) {
        try {
          store.shutdown();
        } finally {
          HiveMetaStore.HMSHandler.removeRawStore();
        }
      }
    }

    @Override
    public void processContext(ServerContext context, TTransport input, TTransport output) {}
  }

  /** Which database, and optional server settings. */
  public static final class Builder {
    private EmbeddedPostgres postgres;
    private String postgresDatabase;
    private final Map<String, String> serverConf = new LinkedHashMap<>();

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
      return this;
    }

    /** A given database in {@code pg}, created if missing; a later server on it sees the earlier one's catalog. */
    public Builder postgres(EmbeddedPostgres pg, String database) {
      this.postgresDatabase = Objects.requireNonNull(database, "database");
      return postgres(pg);
    }

    /**
     * A server-side setting, e.g. {@code hive.hmshandler.retry.attempts} (how often the metastore retries a call
     * whose database access failed; 10 by default, every {@code hive.hmshandler.retry.interval}, 2 s).
     */
    public Builder serverConf(String key, String value) {
      serverConf.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
      return this;
    }

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
      } catch (RuntimeException e) {
        hms.close();
        throw e;
      }
      return hms;
    }
  }
}
