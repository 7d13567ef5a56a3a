package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.EmbeddedPostgres;
import dev.lakecommit.iceberg.CutAudit;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Direct change data capture from a real PostgreSQL (the tests' embedded server with {@code wal_level=logical})
 * through the tool's {@code postgresql://} input: a snapshot, then transactions over two related tables while the
 * tool is SIGKILLed and started again, its catalog goes away and the server restarts, then stopped with SIGTERM.
 * Every cut of the lake equals the database after one of its transactions, and the last equals the database.
 */
class PostgresCdcIT {
  private static final TableIdentifier CUSTOMERS = TableIdentifier.of("lake", "customers");
  private static final TableIdentifier ORDERS = TableIdentifier.of("lake", "orders");

  private static final String PLANTED_PASSWORD = "planted-pg-secret-7f3a";

  @TempDir Path dir;
  private EmbeddedPostgres pg;
  private String url;
  /** The lake's catalog: JDBC on a PostgreSQL of its own, which the test takes away for a while. */
  private EmbeddedPostgres catalogPg;
  private String catalogUrl;

  @BeforeEach
  void startPostgres() throws SQLException {
    pg = EmbeddedPostgres.startLogical();
    url = pg.createDatabase("shop");
    try (Connection connection = connect(); Statement statement = connection.createStatement()) {
      statement.execute("CREATE TABLE customers (id bigint PRIMARY KEY, name text NOT NULL, credit numeric(12,2))");
      statement.execute("CREATE TABLE orders (id bigint PRIMARY KEY, customer bigint NOT NULL REFERENCES customers,"
          + " amount numeric(12,2) NOT NULL, placed timestamptz NOT NULL)");
      // whole rows in every change: an update then carries also the large values it left unchanged
      statement.execute("ALTER TABLE customers REPLICA IDENTITY FULL");
      statement.execute("ALTER TABLE orders REPLICA IDENTITY FULL");
    }
    catalogPg = EmbeddedPostgres.startNew();
    catalogUrl = catalogPg.createDatabase("lake");
  }

  @AfterEach
  void stopPostgres() {
    if (pg != null) {
      pg.close();
    }
    if (catalogPg != null) {
      catalogPg.close();
    }
  }

  private Connection connect() throws SQLException {
    return DriverManager.getConnection(url, pg.user(), pg.password());
  }

  /**
   * Customers and their orders; each transaction moves credit into an order, cancels an order back into credit, or
   * renames a customer, so the credit and the orders of every consistent state add up to the same total. The tool
   * takes the snapshot, then follows the transactions through an outage of the lake's catalog (ridden through),
   * SIGKILLs, and the end of a run's replication connection with a restart of PostgreSQL (the run ends, exit 3); each
   * new run resumes at the table's source position through the job's replication slot, and a last run stops with
   * SIGTERM once it has caught up.
   */
  @Test
  void everyCutIsTheDatabaseAfterOneOfItsTransactionsThroughSigkillsAndAServerRestart() throws Exception {
    long seed = TestScale.seed();
    int transactions = TestScale.pick(600, 20_000);
    int kills = TestScale.pick(2, 6);
    Workload workload = new Workload(seed);
    workload.snapshot(40);
    List<String> command = KillLoop.command(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), List.of(
        "ingest", "--input", "postgresql://" + pg.user() + "@127.0.0.1:" + pg.port()
            + "/shop?tables=public.customers,public.orders", "--route-by", "source.table", "--table",
        "lake.${source.table}", "-C", "type=jdbc", "-C", "uri=" + catalogUrl, "-C", "jdbc.user=" + catalogPg.user(),
        "-C", "jdbc.password=" + catalogPg.password(), "-C", "warehouse=" + dir.resolve("wh").toUri(), "--job-id",
        "shop-cdc", "--checkpoint-dir", dir.resolve("checkpoints").toString(),
        "--checkpoint-interval", "500ms", "--checkpoint-every-records", "200", "--parallelism", "2",
        // the server trusts any password: one planted here must not show in any output
        "-E", "database.password=" + PLANTED_PASSWORD));

    long started = System.nanoTime();
    Thread changes = new Thread(() -> workload.run(transactions), "workload");
    changes.start();
    List<String> logs = new ArrayList<>();
    try {
      // SIGKILLs, then PostgreSQL restarted under a run
      for (int run = 1; run <= kills + 1; run++) {
        Path log = dir.resolve("run-" + run + ".log");
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
          KillLoop.awaitOutput(process, log, " complete: ", 2);
          assertThat(process.isAlive()).as("run %d: %s", run, Files.readString(log)).isTrue();
          if (run == 1) {
            // a catalog outage: the run's commits fail and are retried until the catalog is back
            catalogPg.stop();
            try {
              process.waitFor(4, TimeUnit.SECONDS); // the outage's length, not a wait for something
            } finally {
              catalogPg.start();
            }
            KillLoop.awaitOutput(process, log, " complete: ", 4);
            assertThat(process.isAlive()).as("run %d rode through the outage: %s", run, Files.readString(log))
                .isTrue();
            assertThat(Files.readString(log)).as("commits retried through the outage").contains("Retrying");
          }
          if (run <= kills) {
            process.destroyForcibly().waitFor(); // SIGKILL
          } else {
            // the server ends the job's replication connection (as a failover or a restart does), and restarts
            workload.pause();
            try {
              workload.lsn("SELECT '0/0'::pg_lsn FROM pg_replication_slots, pg_terminate_backend(active_pid)"
                  + " WHERE slot_name = 'lakecommit_shop_cdc'");
              assertThat(process.waitFor(2, TimeUnit.MINUTES)).as("the run ends without its stream").isTrue();
              pg.stop();
              pg.start();
            } finally {
              workload.resume();
            }
            assertThat(process.exitValue()).as("run %d: %s", run, Files.readString(log)).isEqualTo(3);
            assertThat(Files.readString(log)).contains("Reading the changes of postgresql://");
          }
        } finally {
          logs.add(Files.readString(log));
          System.out.printf("PostgresCdcIT seed %d: run %d ended after %d ms%n", seed, run,
              (System.nanoTime() - started) / 1_000_000);
        }
      }
      changes.join(TimeUnit.MINUTES.toMillis(3));
      assertThat(workload.failure).as("the workload").isNull();
      assertThat(changes.isAlive()).as("the workload ended").isFalse();

      // the last run through the tool's jar (bin/lakecommit's): Debezium's engine and connector as users get them
      List<String> jar = new ArrayList<>(dev.lakecommit.core.testing.ChildJvm.java("512m"));
      jar.addAll(List.of("-jar", Path.of("target", "lakecommit.jar").toAbsolutePath().toString()));
      jar.addAll(command.subList(command.indexOf("ingest"), command.size()));
      System.out.printf("PostgresCdcIT: the workload ended after %d ms%n", (System.nanoTime() - started) / 1_000_000);
      logs.add(runUntilCaughtUp(jar, dir.resolve("run-last.log"), workload));
      System.out.printf("PostgresCdcIT: the last run ended after %d ms%n", (System.nanoTime() - started) / 1_000_000);
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + "\n--- the runs' output:\n" + String.join("\n---\n", logs), e);
    }

    assertThat(lake()).as("seed %s: the lake equals the database", seed).isEqualTo(workload.database());
    assertThat(String.join("\n", logs)).as("the runs' output").doesNotContain(PLANTED_PASSWORD);
    assertThat(String.join("\n", logs)).as("runs resumed at a source position of the table")
        .contains("Resuming after checkpoint");
    try (org.apache.iceberg.jdbc.JdbcCatalog catalog = catalog()) {
      CutAudit audit = new CutAudit(catalog, List.of(CUSTOMERS, ORDERS));
      assertThat(audit.checkpoints()).as("cuts").hasSizeGreaterThan(kills);
      for (long cut : audit.checkpoints()) {
        Map<String, Map<Long, String>> state = rows(audit.at(cut));
        assertThat(workload.states).as("seed %s: the cut of checkpoint %d is the database after a transaction",
            seed, cut).contains(state.hashCode());
      }
      // The tables hold the source position. That the slot is told of the positions the tables hold, and never of a
      // change they lack, is what PostgresCdcSourceIT shows (with the switch that confirms on read).
      for (TableIdentifier table : List.of(CUSTOMERS, ORDERS)) {
        assertThat(catalog.loadTable(table).properties().get("lakecommit.source.shop-cdc")).contains("\"lsn\"");
      }
    }

    // A column added and a column widened at the source: a run with --add-new-columns follows both.
    try (Connection connection = connect(); Statement statement = connection.createStatement()) {
      connection.setAutoCommit(false);
      statement.execute("ALTER TABLE customers ADD COLUMN tier text");
      statement.execute("ALTER TABLE orders ALTER COLUMN amount TYPE numeric(14,2)");
      statement.execute("UPDATE customers SET tier = 'gold' WHERE id <= 5");
      statement.execute("INSERT INTO orders VALUES (" + (transactions + 1) + ", 1, 123456789.01, now())");
      statement.execute("UPDATE customers SET credit = credit - 123456789.01 WHERE id = 1");
      connection.commit();
    }
    List<String> evolving = new ArrayList<>(command);
    evolving.add("--add-new-columns");
    runUntilCaughtUp(evolving, dir.resolve("run-evolving.log"), workload);
    assertThat(lake()).as("the lake equals the database, with the new and the widened column")
        .isEqualTo(workload.database());
    try (org.apache.iceberg.jdbc.JdbcCatalog catalog = catalog()) {
      assertThat(catalog.loadTable(ORDERS).schema().findType("amount"))
          .isEqualTo(org.apache.iceberg.types.Types.DecimalType.of(14, 2));
      assertThat(catalog.loadTable(CUSTOMERS).schema().findField("tier")).isNotNull();
    }
  }

  /** Runs the tool until the lake equals the database, then stops it with SIGTERM (exit 0); its output. */
  private String runUntilCaughtUp(List<String> command, Path log, Workload workload) throws Exception {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    try {
      // the job has started (its SIGTERM handler is in place), also when an earlier run committed everything
      KillLoop.awaitOutput(process, log, " runs as epoch ");
      Map<String, Map<Long, String>> expected = workload.database();
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
      while (!lake().equals(expected) && System.nanoTime() < deadline && process.isAlive()) {
        process.waitFor(500, TimeUnit.MILLISECONDS); // polling the lake's tables
      }
      process.destroy(); // SIGTERM
      assertThat(process.waitFor(2, TimeUnit.MINUTES)).isTrue();
      assertThat(process.exitValue()).isZero();
      return Files.readString(log);
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + "\n--- " + log.getFileName() + ":\n" + Files.readString(log), e);
    } finally {
      process.destroyForcibly();
    }
  }

  private org.apache.iceberg.jdbc.JdbcCatalog catalog() {
    return (org.apache.iceberg.jdbc.JdbcCatalog) CatalogUtil.buildIcebergCatalog("lakecommit", Map.of("type", "jdbc",
        "uri", catalogUrl, "jdbc.user", catalogPg.user(), "jdbc.password", catalogPg.password(), "warehouse",
        dir.resolve("wh").toUri().toString(), "jdbc.schema-version", "V1"), new org.apache.hadoop.conf.Configuration());
  }

  /** The lake's tables now (empty before they exist). */
  private Map<String, Map<Long, String>> lake() throws Exception {
    try (org.apache.iceberg.jdbc.JdbcCatalog catalog = catalog()) {
      if (!catalog.tableExists(ORDERS) || !catalog.tableExists(CUSTOMERS)) {
        return Map.of();
      }
      CutAudit audit = new CutAudit(catalog, List.of(CUSTOMERS, ORDERS));
      return rows(audit.at(Long.MAX_VALUE));
    }
  }

  private static Map<String, Map<Long, String>> rows(Map<TableIdentifier, List<Record>> tables) {
    Map<Long, String> customers = new TreeMap<>();
    for (Record row : tables.getOrDefault(CUSTOMERS, List.of())) {
      customers.put((Long) row.getField("id"), row.getField("name") + "|"
          + ((BigDecimal) row.getField("credit")).toPlainString()
          + (row.struct().field("tier") == null ? "" : "|" + row.getField("tier")));
    }
    Map<Long, String> orders = new TreeMap<>();
    for (Record row : tables.getOrDefault(ORDERS, List.of())) {
      orders.put((Long) row.getField("id"), row.getField("customer") + "|"
          + ((BigDecimal) row.getField("amount")).toPlainString());
    }
    return Map.of("customers", customers, "orders", orders);
  }

  /** Transactions against the database, one at a time; the state after each, as hashes. */
  private final class Workload {
    private final Random random;
    final Set<Integer> states = java.util.Collections.synchronizedSet(new HashSet<>());
    volatile Throwable failure;
    private boolean pauseRequested;
    private boolean paused;
    private boolean ended;
    private long nextOrder = 1;

    Workload(long seed) {
      this.random = new Random(seed);
    }

    void snapshot(int customers) throws SQLException {
      try (Connection connection = connect();
          PreparedStatement insert = connection.prepareStatement("INSERT INTO customers VALUES (?, ?, 1000.00)")) {
        for (long id = 1; id <= customers; id++) {
          insert.setLong(1, id);
          insert.setString(2, "customer " + id);
          insert.addBatch();
        }
        insert.executeBatch();
        states.add(database().hashCode());
      }
    }

    void run(int transactions) {
      Connection connection = null;
      try {
        for (int t = 0; t < transactions; t++) {
          synchronized (this) {
            if (pauseRequested) {
              // between two transactions: let the server go away, and connect again once it is back
              if (connection != null) {
                connection.close();
                connection = null;
              }
              paused = true;
              notifyAll();
              while (pauseRequested) {
                wait();
              }
              paused = false;
            }
          }
          if (connection == null) {
            connection = connect();
            connection.setAutoCommit(false);
          }
          transaction(connection);
          connection.commit();
          states.add(database(connection).hashCode());
          Thread.sleep(20); // the workload's pace (about 40 transactions a second), so that the kills land in it
        }
      } catch (Throwable e) {
        failure = e;
      } finally {
        synchronized (this) {
          ended = true;
          notifyAll();
        }
        try {
          if (connection != null) {
            connection.close();
          }
        } catch (SQLException e) {
          // the workload has ended
        }
      }
    }

    /** Returns once the workload is between two transactions, holding none open, and waits there. */
    synchronized void pause() throws InterruptedException {
      pauseRequested = true;
      while (!paused && !ended) {
        wait();
      }
    }

    synchronized void resume() {
      pauseRequested = false;
      notifyAll();
    }

    private void transaction(Connection connection) throws SQLException {
      int kind = random.nextInt(10);
      long customer = 1 + random.nextInt(40);
      try (Statement statement = connection.createStatement()) {
        if (kind < 6) {
          BigDecimal amount = BigDecimal.valueOf(1 + random.nextInt(5000), 2);
          statement.executeUpdate("INSERT INTO orders VALUES (" + nextOrder++ + ", " + customer + ", " + amount
              + ", now())");
          statement.executeUpdate("UPDATE customers SET credit = credit - " + amount + " WHERE id = " + customer);
        } else if (kind < 9) {
          try (ResultSet order = statement.executeQuery("SELECT id, customer, amount FROM orders ORDER BY random()"
              + " LIMIT 1")) {
            if (order.next()) {
              long id = order.getLong(1);
              long owner = order.getLong(2);
              BigDecimal amount = order.getBigDecimal(3);
              statement.executeUpdate("DELETE FROM orders WHERE id = " + id);
              statement.executeUpdate("UPDATE customers SET credit = credit + " + amount + " WHERE id = " + owner);
            }
          }
        } else {
          statement.executeUpdate("UPDATE customers SET name = 'customer " + customer + " v" + random.nextInt(1000)
              + "' WHERE id = " + customer);
        }
      }
    }

    /** A log position the query returns ({@code pg_lsn}), as a number. */
    long lsn(String query) throws SQLException {
      try (Connection connection = connect(); Statement statement = connection.createStatement();
          ResultSet row = statement.executeQuery(query)) {
        assertThat(row.next()).as(query).isTrue();
        String[] parts = row.getString(1).split("/");
        return (Long.parseLong(parts[0], 16) << 32) + Long.parseLong(parts[1], 16);
      }
    }

    Map<String, Map<Long, String>> database() throws SQLException {
      try (Connection connection = connect()) {
        return database(connection);
      }
    }

    private Map<String, Map<Long, String>> database(Connection connection) throws SQLException {
      Map<Long, String> customers = new TreeMap<>();
      Map<Long, String> orders = new TreeMap<>();
      try (Statement statement = connection.createStatement()) {
        try (ResultSet rows = statement.executeQuery("SELECT * FROM customers")) {
          boolean tier = rows.getMetaData().getColumnCount() > 3;
          while (rows.next()) {
            customers.put(rows.getLong("id"), rows.getString("name") + "|" + rows.getBigDecimal("credit")
                .toPlainString() + (tier ? "|" + rows.getString("tier") : ""));
          }
        }
        try (ResultSet rows = statement.executeQuery("SELECT id, customer, amount FROM orders")) {
          while (rows.next()) {
            orders.put(rows.getLong(1), rows.getLong(2) + "|" + rows.getBigDecimal(3).toPlainString());
          }
        }
      }
      if (!connection.getAutoCommit()) {
        connection.commit();
      }
      return Map.of("customers", customers, "orders", orders);
    }
  }
}
