package dev.lakecommit.iceberg;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.function.IntConsumer;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.Transactions;
import org.apache.iceberg.UpdateProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One maintenance task at a time per table, across jobs, processes and hosts: a lease kept in the table itself, as
 * the table property {@value #PROPERTY} = {@code <expiry millis> <holder>}. It is taken, renewed and released by
 * metadata-only commits whose every catalog attempt checks that the property is still what the taker read (a
 * compare-and-swap through the catalog's own optimistic commit, as run epochs are claimed), so of several takers
 * exactly one wins, in every catalog. A lease whose holder died is taken over once its expiry has passed: the holder
 * renews it between maintenance steps, and a step must not outlast the lease's duration.
 *
 * <p>The lease is advice to maintenance, not a guard of commits: checkpoint commits never read it, and a lease
 * commit is, for them, one more concurrent metadata change (their transaction is re-applied on the new metadata,
 * property updates merge). Maintenance commits stay safe without it (a conflicting compaction is dropped); the lease
 * keeps two rounds from doing the same work and from racing each other's expiry and orphan removal.
 *
 * <p>Expiry compares the holder's clock with the taker's: the duration must be well above the clock skew between
 * the hosts that maintain a table.
 *
 * <p>Exclusive in catalogs that commit against the metadata the committer read (Hadoop, JDBC, Hive, Nessie, Glue).
 * Not in a REST catalog: Iceberg's REST client sends a change of table properties with no precondition but the
 * table's UUID, so the server applies two racing takes one over the other and both takers believe they hold the
 * lease (rounds may then overlap, which maintenance survives: a conflicting compaction is dropped).
 */
public final class MaintenanceLock {
  private static final Logger LOG = LoggerFactory.getLogger(MaintenanceLock.class);
  /** The table property that holds the lease. */
  public static final String PROPERTY = "lakecommit.maintenance.lease";
  /** How long a lease lasts unless renewed: longer than any one maintenance step, far above clock skew. */
  public static final Duration DEFAULT_DURATION = Duration.ofMinutes(10);

  /**
   * Commits of the lease (each with Iceberg's own retries) that lost only races to other commits of the table — a
   * job committing a checkpoint every few tens of milliseconds wins several in a row — before a take, renewal or
   * release gives up while the lease is still as expected.
   */
  static final int MAX_SWAP_COMMITS = 10;

  private final Catalog catalog;
  private final TableIdentifier identifier;
  private final Duration duration;
  private final Clock clock;
  private final IntConsumer attemptHook;

  private MaintenanceLock(Catalog catalog, TableIdentifier identifier, Duration duration, Clock clock) {
    this(catalog, identifier, duration, clock, attempt -> { });
  }

  private MaintenanceLock(Catalog catalog, TableIdentifier identifier, Duration duration, Clock clock,
      IntConsumer attemptHook) {
    if (duration.isNegative() || duration.isZero()) {
      throw new IllegalArgumentException(String.format("Invalid lease duration: %s (must be > 0)", duration));
    }
    this.catalog = Objects.requireNonNull(catalog, "catalog");
    this.identifier = Objects.requireNonNull(identifier, "identifier");
    this.duration = duration;
    this.clock = clock;
    this.attemptHook = attemptHook;
  }

  /** The lock of {@code identifier} in {@code catalog}, whose leases last {@code duration} unless renewed. */
  public static MaintenanceLock of(Catalog catalog, TableIdentifier identifier, Duration duration) {
    return new MaintenanceLock(catalog, identifier, duration, Clock.systemUTC());
  }

  /** Test hook: the same lock on another clock (to let leases expire without waiting). */
  MaintenanceLock withClock(Clock other) {
    return new MaintenanceLock(catalog, identifier, duration, other, attemptHook);
  }

  /** Test hook: the same lock, calling {@code hook} with the attempt number before each catalog attempt. */
  MaintenanceLock withAttemptHook(IntConsumer hook) {
    return new MaintenanceLock(catalog, identifier, duration, clock, hook);
  }

  /** Who holds the lease and until when (to the millisecond), as stored in the table. */
  public record Holder(String holder, Instant expires) {
    public Holder {
      expires = expires.truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
    }

    static Optional<Holder> parse(String value) {
      if (value == null) {
        return Optional.empty();
      }
      int space = value.indexOf(' ');
      try {
        return Optional.of(new Holder(space < 0 ? "" : value.substring(space + 1),
            Instant.ofEpochMilli(Long.parseLong(space < 0 ? value : value.substring(0, space)))));
      } catch (NumberFormatException e) {
        // Not ours to judge: a corrupt lease is treated as expired, so that maintenance is not stuck for ever.
        return Optional.of(new Holder(value, Instant.EPOCH));
      }
    }

    String value() {
      return expires.toEpochMilli() + " " + holder;
    }

    @Override
    public String toString() {
      return holder + " until " + expires;
    }
  }

  /** The lease as the table holds it now (it may have expired). */
  public Optional<Holder> holder() {
    return Holder.parse(load().properties().get(PROPERTY));
  }

  /**
   * Takes the lease if nobody holds it or its expiry has passed.
   *
   * @param who describes the taker in messages (job, process, host); a unique suffix is added, so two takers with
   *     the same description are still told apart. Never put credentials in it.
   * @return the lease, or empty if another holds it (or won the race to take it)
   * @throws RuntimeException if the catalog cannot be reached; nothing is held then
   */
  public Optional<Lease> tryAcquire(String who) {
    Table table = load();
    TableOperations ops = ((HasTableOperations) table).operations();
    String current = ops.current().properties().get(PROPERTY);
    Optional<Holder> holder = Holder.parse(current);
    Instant now = clock.instant();
    if (holder.isPresent() && holder.get().expires().isAfter(now)) {
      LOG.debug("Maintenance lease of {} is held by {}", identifier, holder.get());
      return Optional.empty();
    }
    Holder mine = new Holder(who + " [" + UUID.randomUUID() + "]", now.plus(duration));
    if (!swap(table, current, mine.value())) {
      return Optional.empty();
    }
    holder.ifPresent(expired -> LOG.info("Took over the expired maintenance lease of {} from {}", identifier,
        expired));
    LOG.info("Took the maintenance lease of {} as {}", identifier, mine);
    return Optional.of(new Lease(mine));
  }

  /** A held lease; {@link #close} releases it. Not thread-safe: one maintenance round uses it. */
  public final class Lease implements AutoCloseable {
    private Holder held;
    private boolean lost;

    private Lease(Holder held) {
      this.held = held;
    }

    /** Who holds it and until when, as last written. */
    public Holder holder() {
      return held;
    }

    /**
     * Moves the expiry to now plus the lock's duration; call between maintenance steps.
     *
     * @return false if the lease was lost (it expired and another took it over): stop maintaining
     */
    public boolean renew() {
      if (lost) {
        return false;
      }
      Holder renewed = new Holder(held.holder(), clock.instant().plus(duration));
      try {
        lost = !swap(load(), held.value(), renewed.value());
      } catch (RuntimeException e) {
        LOG.warn("Cannot renew the maintenance lease of {} ({}); it holds until {}", identifier, e.toString(),
            held.expires());
        return clock.instant().isBefore(held.expires());
      }
      if (lost) {
        LOG.warn("Lost the maintenance lease of {}: now {}", identifier,
            MaintenanceLock.this.holder().map(Holder::toString).orElse("nobody holds it"));
        return false;
      }
      held = renewed;
      return true;
    }

    /** Removes the lease from the table if it is still this one; a failure is logged (the lease then expires). */
    @Override
    public void close() {
      if (lost) {
        return;
      }
      try {
        if (swap(load(), held.value(), null)) {
          LOG.info("Released the maintenance lease of {}", identifier);
        }
      } catch (RuntimeException e) {
        LOG.warn("Cannot release the maintenance lease of {} ({}); it expires at {}", identifier, e.toString(),
            held.expires());
      }
      lost = true;
    }

    @Override
    public String toString() {
      return "maintenance lease of " + identifier + " held by " + held;
    }
  }

  /**
   * Sets (or with {@code next} null removes) the property in one commit whose every catalog attempt checks that it
   * is still {@code expected}; an unknown outcome is settled by reading the property back.
   *
   * @return false if it was not {@code expected} any more
   */
  private boolean swap(Table table, String expected, String next) {
    int[] attempts = {0};
    for (int commit = 1; ; commit++) {
      TableOperations ops = ((HasTableOperations) table).operations();
      try {
        Transaction txn = Transactions.newTransaction(table.name(), new LeaseGuard(ops, expected,
            () -> attemptHook.accept(++attempts[0])));
        UpdateProperties update = txn.updateProperties();
        if (next == null) {
          update.remove(PROPERTY);
        } else {
          update.set(PROPERTY, next);
        }
        update.commit();
        txn.commitTransaction();
        return true;
      } catch (LeaseMoved e) {
        LOG.debug("Maintenance lease of {} moved: {}", identifier, e.getMessage());
        return false;
      } catch (CommitFailedException e) {
        // Every retry of the transaction lost to another commit (a job's checkpoint commits); that alone does not
        // mean the lease moved. A release that gave up here would leave the lease held for its whole duration,
        // and every round skipped meanwhile.
        table = load();
        if (!Objects.equals(table.properties().get(PROPERTY), expected) || commit >= MAX_SWAP_COMMITS) {
          LOG.debug("Maintenance lease of {} not swapped after {} commits: {}", identifier, commit, e.getMessage());
          return false;
        }
        LOG.debug("Maintenance lease commit of {} lost its races ({}); committing again", identifier,
            e.getMessage());
      } catch (CommitStateUnknownException e) {
        return Objects.equals(load().properties().get(PROPERTY), next);
      }
    }
  }

  private Table load() {
    return catalog.loadTable(identifier);
  }

  /** The lease's catalog attempts: each checks that the lease it replaces is still the table's. */
  private static final class LeaseGuard extends ForwardingTableOperations {
    private final String expected;
    private final Runnable beforeAttempt;

    LeaseGuard(TableOperations delegate, String expected, Runnable beforeAttempt) {
      super(delegate);
      this.expected = expected;
      this.beforeAttempt = beforeAttempt;
    }

    @Override
    public void commit(TableMetadata base, TableMetadata metadata) {
      beforeAttempt.run();
      String now = base.properties().get(PROPERTY);
      if (!Objects.equals(now, expected)) {
        throw new LeaseMoved("the table holds " + (now == null ? "no lease" : now) + " now");
      }
      delegate().commit(base, metadata);
    }
  }

  private static final class LeaseMoved extends RuntimeException {
    LeaseMoved(String message) {
      super(message);
    }
  }
}
