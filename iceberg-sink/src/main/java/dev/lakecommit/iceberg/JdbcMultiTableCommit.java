package dev.lakecommit.iceberg;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import org.apache.iceberg.BaseMetastoreTableOperations;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.Transactions;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.jdbc.UncheckedSQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One atomic commit over several tables of one Iceberg JDBC catalog (SQLite, PostgreSQL, any database Iceberg's
 * {@code JdbcCatalog} runs on). Each table's change is made on a transaction of that table and its new metadata
 * file written first; then every table's metadata pointer in the catalog's {@code iceberg_tables} is swapped in one
 * database transaction, each swap a compare-and-set from the metadata the change was made on. Either every table
 * shows its change or none does, for every engine that reads through the catalog.
 *
 * <p>When another writer changed one of the tables in between, its swap updates no row, the database transaction
 * is rolled back (no table changed), the attempt's metadata files are deleted and the changes are made again on
 * fresh metadata, up to a bounded number of attempts. Pointers are swapped in the order of the table identifiers, so
 * that two multi-table commits lock rows in the same order (no deadlock on PostgreSQL). When the database's answer
 * to the commit is lost, the pointers are read again: all new is committed; all old is tried again (a commit that
 * lands late makes that attempt's compare-and-set fail), and the metadata files of an attempt whose commit was sent
 * are never deleted here.
 */
public final class JdbcMultiTableCommit implements MultiTableCommit {
  private static final Logger LOG = LoggerFactory.getLogger(JdbcMultiTableCommit.class);
  private static final String SWAP = "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?"
      + " WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?";
  private static final String POINTER = "SELECT metadata_location FROM iceberg_tables"
      + " WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?";
  private static final String JDBC_PREFIX = "jdbc.";

  /** Test-only: told at the steps of an attempt, so that tests can crash or race there. */
  interface SwapHook {
    SwapHook NONE = new SwapHook() {};

    /** A table's change was made on the metadata read for it; its new metadata is written next. */
    default void changed(TableIdentifier table, int attempt) {}

    /** Every table's new metadata is written; the database transaction of attempt {@code attempt} comes next. */
    default void beforeSwap(int attempt) {}

    /** Inside the database transaction, after the {@code swapped}-th pointer swap (1-based), before the next. */
    default void swapped(TableIdentifier table, int swapped) throws SQLException {}

    /** The database transaction of attempt {@code attempt} committed; the commit has not returned yet. */
    default void committed(int attempt) {}
  }

  /** One table's part of an attempt: the pointer swap from {@code from} to {@code to}. */
  private record Swap(TableIdentifier table, TableMetadata base, TableMetadata metadata, String from, String to) {}

  private final String catalogName;
  private final String uri;
  private final Properties connection;
  private final FileIO io;
  private final int maxAttempts;
  private SwapHook hook = SwapHook.NONE;
  /** Tables from which a commit writes their metadata on several threads at once. */
  private static final int PARALLEL_FROM = 4;
  /**
   * Writes the tables' new metadata of multi-table commits: mostly waiting on storage and on Iceberg's own worker
   * pool, so more threads than cores.
   */
  private static final java.util.concurrent.ExecutorService PREPARERS =
      java.util.concurrent.Executors.newFixedThreadPool(8, runnable -> {
        Thread thread = new Thread(runnable, "lakecommit-cut-metadata");
        thread.setDaemon(true);
        return thread;
      });
  /** Whether the current attempt sent its database commit: its metadata files then stay whatever the answer. */
  private boolean commitSent;
  private boolean oneTransaction = true;
  private boolean closesIo;

  private JdbcMultiTableCommit(String catalogName, String uri, Properties connection, FileIO io, int maxAttempts) {
    this.catalogName = catalogName;
    this.uri = uri;
    this.connection = connection;
    this.io = io;
    this.maxAttempts = maxAttempts;
  }

  /**
   * For the JDBC catalog named {@code catalogName} with Iceberg's catalog {@code properties} ({@code uri}, and the
   * {@code jdbc.}-prefixed connection properties such as {@code jdbc.user}), whose tables' files {@code io} reads
   * and writes.
   *
   * @param maxAttempts attempts before a commit that keeps meeting other writers' changes gives up (at least 1)
   */
  public static JdbcMultiTableCommit of(String catalogName, Map<String, String> properties, FileIO io,
      int maxAttempts) {
    String type = properties.get(CatalogUtil.ICEBERG_CATALOG_TYPE);
    String uri = properties.get(CatalogProperties.URI);
    if (!"jdbc".equalsIgnoreCase(String.valueOf(type)) || uri == null || !uri.startsWith("jdbc:")) {
      throw new IllegalArgumentException("Not an Iceberg JDBC catalog (type=jdbc and a jdbc: uri): type=" + type
          + ", uri " + (uri == null ? "missing" : "not jdbc:"));
    }
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be at least 1, not " + maxAttempts);
    }
    Properties connection = new Properties();
    properties.forEach((key, value) -> {
      if (key.startsWith(JDBC_PREFIX)) {
        connection.put(key.substring(JDBC_PREFIX.length()), value);
      }
    });
    return new JdbcMultiTableCommit(catalogName, uri, connection, Objects.requireNonNull(io, "io"), maxAttempts);
  }

  /**
   * Test-only: {@code false} makes each pointer swap a database transaction of its own, so that the tests show what
   * the one transaction prevents (a reader seeing the tables at different checkpoints).
   */
  JdbcMultiTableCommit oneTransaction(boolean enabled) {
    this.oneTransaction = enabled;
    return this;
  }

  /** Closes the file IO on {@link #close}: one this commit's creator opened for it alone. */
  JdbcMultiTableCommit closingIo() {
    this.closesIo = true;
    return this;
  }

  @Override
  public void close() {
    if (closesIo) {
      io.close();
    }
  }

  JdbcMultiTableCommit hook(SwapHook swapHook) {
    this.hook = Objects.requireNonNull(swapHook, "swapHook");
    return this;
  }

  @Override
  public String describe() {
    return "JDBC catalog " + catalogName;
  }

  /**
   * Makes every change and shows them all at once, or none.
   *
   * @throws CommitFailedException if other writers' changes kept conflicting for {@code maxAttempts} attempts
   *     (nothing of this commit is visible)
   * @throws CommitStateUnknownException if the database's answer was lost and the pointers could not be read
   *     again (read them before trying again)
   * @throws NoSuchTableException if a table is not in the catalog (nothing of this commit is visible)
   */
  @Override
  public Result commit(Map<TableIdentifier, TableChange> changes) {
    List<TableIdentifier> order = new ArrayList<>(changes.keySet());
    order.sort(Comparator.comparing(TableIdentifier::toString));
    for (int attempt = 1; ; attempt++) {
      List<Swap> swaps = new ArrayList<>();
      boolean swapped = false;
      boolean unknown = false;
      commitSent = false;
      try {
        prepareAll(order, changes, attempt, swaps);
        if (!swaps.isEmpty()) {
          hook.beforeSwap(attempt);
        }
        swapped = swaps.isEmpty() || swapAll(swaps);
      } catch (CommitStateUnknownException | Error e) {
        // The new metadata may be what a table points to now: it stays.
        unknown = true;
        throw e;
      } finally {
        if (!swapped && !unknown && !commitSent) {
          swaps.forEach(this::deleteUnpublished);
        }
      }
      if (swapped) {
        if (!swaps.isEmpty()) {
          hook.committed(attempt);
        }
        Map<TableIdentifier, String> locations = new LinkedHashMap<>();
        for (Swap swap : swaps) {
          CatalogUtil.deleteRemovedMetadataFiles(io, swap.base(), swap.metadata());
          locations.put(swap.table(), swap.to());
        }
        return new Result(locations, attempt);
      }
      if (attempt >= maxAttempts) {
        throw new CommitFailedException("Cannot commit to tables %s of JDBC catalog %s at once: other writers changed"
            + " them during each of %s attempts; nothing of this commit is visible", order, catalogName, attempt);
      }
      LOG.info("Multi-table commit to {} of catalog {}: another writer changed a table meanwhile (attempt {});"
          + " making the changes again on fresh metadata", order, catalogName, attempt);
    }
  }

  /**
   * Writes every table's new metadata (its pointer read once, the change applied, the files written), in the order
   * of {@code order}, into {@code swaps}: on several threads at once when the tables are many (each table's
   * metadata, manifests and manifest list are its own), one after another where a test hook watches the order.
   * Every swap prepared is in {@code swaps} even when another table's change failed, so that what was written is
   * deleted; the first failure is thrown.
   */
  private void prepareAll(List<TableIdentifier> order, Map<TableIdentifier, TableChange> changes, int attempt,
      List<Swap> swaps) {
    if (order.size() < PARALLEL_FROM || hook != SwapHook.NONE) {
      for (TableIdentifier table : order) {
        Swap swap = prepare(table, changes.get(table), attempt);
        if (swap != null) {
          swaps.add(swap);
        }
      }
      return;
    }
    List<java.util.concurrent.Future<Swap>> prepared = new ArrayList<>();
    for (TableIdentifier table : order) {
      prepared.add(PREPARERS.submit(() -> prepare(table, changes.get(table), attempt)));
    }
    Throwable failure = null;
    boolean interrupted = false;
    for (java.util.concurrent.Future<Swap> future : prepared) {
      // every task is waited for, also after an interrupt: what each wrote is in swaps, to be deleted if unused
      while (true) {
        try {
          Swap swap = future.get();
          if (swap != null) {
            swaps.add(swap);
          }
          break;
        } catch (java.util.concurrent.ExecutionException e) {
          failure = failure == null ? e.getCause() : failure;
          break;
        } catch (InterruptedException e) {
          interrupted = true;
          failure = failure == null ? e : failure;
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (failure instanceof RuntimeException runtime) {
      throw runtime;
    }
    if (failure instanceof Error error) {
      throw error;
    }
    if (failure != null) {
      throw new CommitFailedException(failure, "Interrupted while writing the metadata of %s", order);
    }
  }

  /** One table's new metadata, written but not published: its swap, or null if the change changed nothing. */
  private Swap prepare(TableIdentifier table, TableChange change, int attempt) {
    StagingOperations ops = new StagingOperations(table);
    ops.refresh();
    Transaction transaction = Transactions.newTransaction(table.toString(), ops);
    change.apply(transaction);
    hook.changed(table, attempt);
    transaction.commitTransaction();
    return ops.swap;
  }

  /**
   * @return true if every pointer moved, false if one had moved already (the database transaction rolled back) or
   *     the database's answer to the commit was lost and no pointer had moved when read again
   */
  private boolean swapAll(List<Swap> swaps) {
    Connection db;
    try {
      db = DriverManager.getConnection(uri, connection);
    } catch (SQLException e) {
      throw notSwapped(swaps, e);
    }
    try {
      db.setAutoCommit(false);
      try (PreparedStatement update = db.prepareStatement(SWAP)) {
        int done = 0;
        for (Swap swap : swaps) {
          update.setString(1, swap.to());
          update.setString(2, swap.from());
          update.setString(3, catalogName);
          update.setString(4, namespace(swap.table()));
          update.setString(5, swap.table().name());
          update.setString(6, swap.from());
          if (update.executeUpdate() != 1) {
            db.rollback();
            LOG.debug("Table {} moved on from {}: rolled back", swap.table(), swap.from());
            return false;
          }
          if (!oneTransaction) {
            db.commit();
          }
          hook.swapped(swap.table(), ++done);
        }
      } catch (SQLException | RuntimeException | Error e) {
        rollbackQuietly(db, e);
        throw e;
      }
      // From here on the new metadata may be what the tables point to, now or later: it is never deleted.
      commitSent = true;
      try {
        db.commit();
      } catch (SQLException e) {
        return settle(swaps, e);
      }
      return true;
    } catch (SQLException e) {
      throw notSwapped(swaps, e);
    } finally {
      try {
        db.close();
      } catch (SQLException e) {
        LOG.debug("Closing the connection to JDBC catalog {} failed: {}", catalogName, e.toString());
      }
    }
  }

  private CommitFailedException notSwapped(List<Swap> swaps, SQLException e) {
    return new CommitFailedException(e, "Cannot swap the metadata pointers of %s in JDBC catalog %s: %s; nothing"
        + " of this commit is visible", swaps.stream().map(Swap::table).toList(), catalogName, e.getMessage());
  }

  /**
   * The commit's answer was lost: reads the pointers again. All new: committed; all old: not now (the next
   * attempt's compare-and-set meets the commit if it lands later, and its metadata files are left to orphan
   * removal).
   */
  private boolean settle(List<Swap> swaps, SQLException lost) {
    int moved = 0;
    try (Connection db = DriverManager.getConnection(uri, connection)) {
      for (Swap swap : swaps) {
        String now = pointer(db, swap.table());
        if (swap.to().equals(now)) {
          moved++;
        }
      }
    } catch (SQLException e) {
      lost.addSuppressed(e);
      throw new CommitStateUnknownException(lost);
    }
    if (moved == swaps.size()) {
      return true;
    }
    if (moved == 0) {
      return false;
    }
    throw new IllegalStateException(String.format("%d of %d metadata pointers of one database transaction moved in"
        + " JDBC catalog %s (%s): the database did not apply the transaction atomically", moved, swaps.size(),
        catalogName, swaps.stream().map(Swap::table).toList()), lost);
  }

  private String pointer(Connection db, TableIdentifier table) throws SQLException {
    try (PreparedStatement select = db.prepareStatement(POINTER)) {
      select.setString(1, catalogName);
      select.setString(2, namespace(table));
      select.setString(3, table.name());
      try (ResultSet row = select.executeQuery()) {
        return row.next() ? row.getString(1) : null;
      }
    }
  }

  /** An attempt that did not publish: its metadata file and new manifest list are nobody's. */
  private void deleteUnpublished(Swap swap) {
    try {
      io.deleteFile(swap.to());
      Snapshot snapshot = swap.metadata().currentSnapshot();
      Snapshot before = swap.base().currentSnapshot();
      if (snapshot != null && (before == null || snapshot.snapshotId() != before.snapshotId())) {
        io.deleteFile(snapshot.manifestListLocation());
      }
    } catch (RuntimeException e) {
      LOG.warn("Could not delete the unpublished metadata {} of {}; orphan-file removal deletes it", swap.to(),
          swap.table(), e);
    }
  }

  private static void rollbackQuietly(Connection db, Throwable cause) {
    try {
      db.rollback();
    } catch (SQLException e) {
      cause.addSuppressed(e);
    }
  }

  /** As Iceberg's JDBC catalog stores a namespace: its levels joined by dots. */
  private static String namespace(TableIdentifier table) {
    return String.join(".", table.namespace().levels());
  }

  /**
   * A table's operations for one attempt: reads the pointer from the catalog's database and, on commit, writes the
   * new metadata file and keeps the swap for the database transaction instead of making it.
   */
  private final class StagingOperations extends BaseMetastoreTableOperations {
    private final TableIdentifier table;
    private Swap swap;
    private boolean loaded;

    StagingOperations(TableIdentifier table) {
      this.table = table;
    }

    /**
     * Reads the pointer once, at the start of the attempt; later refreshes return that metadata. Iceberg's
     * transaction refreshes before it commits and would re-apply the change's updates on a newer base without the
     * checks the change made on the one it read: the swap's compare-and-set finds any newer base instead, and the
     * next attempt makes the whole change, checks included, on it.
     */
    @Override
    public TableMetadata refresh() {
      if (loaded) {
        return current();
      }
      loaded = true;
      return super.refresh();
    }

    @Override
    protected String tableName() {
      return catalogName + "." + table;
    }

    @Override
    public FileIO io() {
      return io;
    }

    @Override
    protected void doRefresh() {
      String location;
      try (Connection db = DriverManager.getConnection(uri, connection)) {
        location = pointer(db, table);
      } catch (SQLException e) {
        throw new UncheckedSQLException(e, "Cannot read the metadata pointer of %s from JDBC catalog %s: %s", table,
            catalogName, e.getMessage());
      }
      if (location == null) {
        throw new NoSuchTableException("Table %s is not in JDBC catalog %s", table, catalogName);
      }
      refreshFromMetadataLocation(location);
    }

    /**
     * After the change: the metadata it made, so that the transaction finds its own snapshot when it cleans up
     * (else Iceberg warns that it cannot, once per table and attempt).
     */
    @Override
    public TableMetadata current() {
      return swap != null ? swap.metadata() : super.current();
    }

    /** As Iceberg's, without deleting the metadata files the change drops from the log: that waits for the swap. */
    @Override
    public void commit(TableMetadata base, TableMetadata metadata) {
      if (base == null) {
        throw new IllegalStateException("A multi-table commit changes existing tables; " + table + " is new");
      }
      if (base != current()) {
        throw new CommitFailedException("Cannot commit: stale table metadata");
      }
      if (base == metadata) {
        return;
      }
      if (swap != null) {
        throw new IllegalStateException("A second commit to " + table + " in one attempt");
      }
      String location = writeNewMetadataIfRequired(false, metadata);
      swap = new Swap(table, base, metadata, base.metadataFileLocation(), location);
    }
  }
}
