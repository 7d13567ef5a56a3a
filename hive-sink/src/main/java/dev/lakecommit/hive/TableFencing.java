package dev.lakecommit.hive;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Supplier;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.EnvironmentContext;
import org.apache.hadoop.hive.metastore.api.LockComponent;
import org.apache.hadoop.hive.metastore.api.LockLevel;
import org.apache.hadoop.hive.metastore.api.LockRequest;
import org.apache.hadoop.hive.metastore.api.LockResponse;
import org.apache.hadoop.hive.metastore.api.LockState;
import org.apache.hadoop.hive.metastore.api.LockType;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.hive_metastoreConstants;
import org.apache.thrift.TException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How every table change of the sink stays a compare-and-swap on a given metastore — what the run epoch's fence
 * (DESIGN.md rule 10) and the watermark rest on.
 *
 * <p>Hive Metastore 2.3.10 and 4.x refuse an {@code alter_table} whose {@code expected_parameter_value} is stale;
 * 3.1 (and 2.3 before 2.3.10) accept it, silently: there two copies of a job would both claim an epoch. So the sink
 * asks the metastore once, before its first change of the table ({@link Probed}): one alter of a scratch parameter with an expected value the
 * table cannot hold, which must be refused, and one swap as the sink makes them, which must apply. Both as
 * expected: {@link #COMPARE_AND_SWAP}. The stale one accepted, or the current one failing (4.0.1 on Derby cannot
 * evaluate the comparison): {@link #TABLE_LOCK}, the metastore's lock API that Iceberg's Hive catalog also
 * uses, if the metastore grants locks; otherwise the sink refuses to run, saying why. The probe itself runs under
 * that lock where the metastore grants it, so its alter can never overwrite a locked writer's change.
 */
enum TableFencing {
  /** The metastore checks {@code expected_parameter_value} inside its own transaction. */
  COMPARE_AND_SWAP,
  /**
   * An exclusive table lock of the metastore is held around every change: the table is read again under it, its
   * change counter compared, and the alter sent without an expectation.
   */
  TABLE_LOCK;

  private static final Logger LOG = LoggerFactory.getLogger(TableFencing.class);
  /** The scratch table parameter of the probe. */
  static final String PROBE_KEY = "lakecommit.fence-probe";
  /** How long a change waits for another writer's table lock before it fails (a crashed holder's lock expires). */
  static final Duration LOCK_WAIT = Duration.ofSeconds(60);
  /** How often a waiting lock looks for holders that are gone. */
  private static final Duration HOLDER_LOOK = Duration.ofSeconds(1);

  /**
   * The fencing of one sink's table, asked once (by the sink's first committer or epoch claim, not by a command that
   * only reads) and shared by every client of the sink.
   */
  static final class Probed {
    private final String database;
    private final String name;
    private final Supplier<String> metastore;
    private volatile TableFencing found;

    Probed(String database, String name, Supplier<String> metastore) {
      this.database = database;
      this.name = name;
      this.metastore = metastore;
    }

    /** The fencing, probed through {@code client} the first time. */
    TableFencing of(IMetaStoreClient client) throws TException {
      TableFencing known = found;
      if (known != null) {
        return known;
      }
      synchronized (this) {
        if (found == null) {
          found = probe(client, database, name, metastore.get());
        }
        return found;
      }
    }

    /** Test-only: this fencing, whatever the metastore would answer. */
    void force(TableFencing fencing) {
      found = fencing;
    }

    Optional<TableFencing> found() {
      return Optional.ofNullable(found);
    }
  }

  /**
   * Asks the metastore whether it enforces the compare-and-swap, as described above.
   *
   * @throws IllegalStateException if it does not and grants no locks either: the sink cannot fence runs there
   */
  static TableFencing probe(IMetaStoreClient client, String database, String name, String metastore)
      throws TException {
    Long lock = null;
    String lockError = null;
    try {
      lock = lock(client, database, name);
    } catch (TException e) {
      lockError = e.getMessage();
      LOG.debug("The metastore {} grants no table lock: {}", metastore, e.toString());
    }
    try {
      String refusal = staleAlterRefusal(client, database, name);
      String why;
      if (refusal == null) {
        why = "it accepted an alter_table with a stale expected_parameter_value (Hive Metastore before 2.3.10, and"
            + " 3.1, ignore it)";
      } else if (!refusal.startsWith(TableParameters.CONCURRENT_CHANGE)) {
        why = "its compare-and-swap fails: " + refusal;
      } else {
        String failure = currentSwapFailure(client, database, name);
        if (failure == null) {
          return COMPARE_AND_SWAP;
        }
        why = "it refuses a stale compare-and-swap but cannot apply a current one (Hive Metastore 4.0.x on Derby"
            + " cannot compare the values): " + failure;
      }
      if (lock == null) {
        throw new IllegalStateException(String.format("Cannot fence runs of table %s.%s on the Hive Metastore %s:"
            + " %s, and it grants no table lock either (%s). Two copies of a job could then both commit. Use a"
            + " metastore that has the compare-and-swap (Hive 2.3.10, or 4.x on a database other than Derby), or"
            + " set its transaction tables up (schematool -initSchema creates them) so that locks work",
            database, name, metastore, why, lockError));
      }
      LOG.info("Table {}.{}: the Hive Metastore {} does not enforce the compare-and-swap ({}); every change of the"
          + " table holds the metastore's exclusive table lock instead", database, name, metastore, why);
      return TABLE_LOCK;
    } finally {
      if (lock != null) {
        unlockQuietly(client, lock);
      }
    }
  }

  /** Null if the stale alter was accepted; otherwise the metastore's message. */
  private static String staleAlterRefusal(IMetaStoreClient client, String database, String name)
      throws TException {
    Table read = client.getTable(database, name);
    Table changed = read.deepCopy();
    String current = read.getParameters() == null ? null : read.getParameters().get(PROBE_KEY);
    String stale;
    do {
      stale = UUID.randomUUID().toString();
    } while (stale.equals(current));
    changed.putToParameters(PROBE_KEY, UUID.randomUUID().toString());
    EnvironmentContext context = TableParameters.keepStats();
    context.putToProperties(hive_metastoreConstants.EXPECTED_PARAMETER_KEY, PROBE_KEY);
    context.putToProperties(hive_metastoreConstants.EXPECTED_PARAMETER_VALUE, stale);
    try {
      client.alter_table_with_environmentContext(database, name, changed, context);
      return null;
    } catch (MetaException e) {
      return answer(e);
    }
  }

  /** The metastore's message for a refused change; a lost connection is not an answer, and is thrown. */
  private static String answer(MetaException e) throws MetaException {
    String message = e.getMessage() == null ? e.toString() : e.getMessage();
    if (message.matches("(?s).*(TTransportException|Could not connect to meta store|SocketException).*")) {
      throw e;
    }
    return message;
  }

  /**
   * Null if a compare-and-swap with the current value applies, as the sink's own swaps are made (it changes the
   * scratch parameter, and the change counter; a racing writer's change is a conflict, which shows it works too);
   * otherwise the metastore's message.
   */
  private static String currentSwapFailure(IMetaStoreClient client, String database, String name)
      throws TException {
    Table read = client.getTable(database, name);
    Table changed = read.deepCopy();
    changed.putToParameters(PROBE_KEY, UUID.randomUUID().toString());
    try {
      TableParameters.swap(client, COMPARE_AND_SWAP, read, changed);
      return null;
    } catch (TableParameters.ConflictException raced) {
      return null;
    } catch (MetaException e) {
      return answer(e);
    }
  }

  /**
   * An exclusive lock on the table, waited for up to {@link #LOCK_WAIT}. While it waits, it releases the locks of
   * Lakecommit processes of this host that died holding them ({@link LockHolder}), so that a job restarted after a
   * kill does not wait out the metastore's lock timeout.
   */
  static long lock(IMetaStoreClient client, String database, String name) throws TException {
    return lock(client, database, name, LOCK_WAIT);
  }

  static long lock(IMetaStoreClient client, String database, String name, Duration wait) throws TException {
    LockComponent component = new LockComponent(LockType.EXCLUSIVE, LockLevel.TABLE, database);
    component.setTablename(name);
    String host = hostName();
    LockRequest request = new LockRequest(List.of(component), System.getProperty("user.name"), host);
    request.setAgentInfo(LockHolder.self().agentInfo());
    LockResponse response = client.lock(request);
    long started = System.nanoTime();
    long deadline = started + wait.toNanos();
    long nextLook = started;
    long pause = 10;
    while (response.getState() == LockState.WAITING) {
      if (System.nanoTime() - nextLook >= 0) {
        nextLook = System.nanoTime() + HOLDER_LOOK.toNanos();
        if (releaseGoneHolders(client, database, name, host, response.getLockid()) > 0) {
          response = client.checkLock(response.getLockid());
          continue;
        }
      }
      if (System.nanoTime() > deadline) {
        unlockQuietly(client, response.getLockid());
        throw new MetaException(String.format("Table %s.%s stayed locked by another writer for %s s: a crashed"
            + " writer's lock is released by the metastore after hive.txn.timeout (300 s by default), or at once"
            + " by a Lakecommit writer on the crashed one's host", database, name, wait.toSeconds()));
      }
      try {
        Thread.sleep(pause);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        unlockQuietly(client, response.getLockid());
        throw new MetaException("Interrupted while waiting for the lock of table " + database + "." + name);
      }
      pause = Math.min(pause * 2, 500);
      response = client.checkLock(response.getLockid());
    }
    if (response.getState() != LockState.ACQUIRED) {
      throw new MetaException(String.format("The metastore did not grant the lock of table %s.%s: %s", database,
          name, response.getState()));
    }
    return response.getLockid();
  }

  /** The gone holders' locks released, or 0 where the metastore does not list locks. */
  private static int releaseGoneHolders(IMetaStoreClient client, String database, String name, String host,
      long own) {
    try {
      return LockHolder.releaseGone(client, database, name, host, own);
    } catch (TException | RuntimeException e) {
      LOG.debug("Cannot list the locks of table {}.{}: {}", database, name, e.toString());
      return 0;
    }
  }

  static void unlockQuietly(IMetaStoreClient client, long lock) {
    try {
      client.unlock(lock);
    } catch (TException | RuntimeException e) {
      LOG.warn("Cannot release metastore lock {} (it expires after hive.txn.timeout): {}", lock, e.toString());
    }
  }

  static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "localhost";
    }
  }
}
