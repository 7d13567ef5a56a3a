package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.testing.TestScale;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.Table;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The maintenance lease over real catalogs (Hadoop, JDBC/SQLite; not REST, whose property commits carry no
 * precondition, see {@link MaintenanceLock}), contended by threads, each with its own
 * catalog instance: exactly one takes it, an expired one is taken over and its old holder learns that it lost it,
 * and lease commits racing checkpoint commits never make one fail.
 */
class MaintenanceLockTest {
  @TempDir Path dir;
  private final List<AutoCloseable> servers = new ArrayList<>();

  static java.util.stream.Stream<String> catalogs() {
    return CatalogFixture.NAMES.stream().filter(name -> !name.equals("rest"));
  }

  @AfterEach
  void stopServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  private CatalogFixture fixture(String name, String sub) throws Exception {
    return CatalogFixture.named(name, Files.createDirectories(dir.resolve(sub)), servers);
  }

  private static MaintenanceLock lock(CatalogFixture fixture, Duration duration) {
    return MaintenanceLock.of(fixture.newCatalog(), TestTables.IDENT, duration);
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void exactlyOneOfManyThreadsTakesTheLease(String name) throws Exception {
    CatalogFixture fixture = fixture(name, "threads");
    TestTables.create(fixture.newCatalog());
    int threads = 4;
    int rounds = TestScale.pick(5, 50);
    List<MaintenanceLock> locks = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      locks.add(lock(fixture, Duration.ofMinutes(5)));
    }
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 0; round < rounds; round++) {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Optional<MaintenanceLock.Lease>>> takes = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
          MaintenanceLock lock = locks.get(i);
          String who = "thread-" + i;
          takes.add(pool.submit(() -> {
            start.await();
            return lock.tryAcquire(who);
          }));
        }
        start.countDown();
        List<MaintenanceLock.Lease> won = new ArrayList<>();
        for (Future<Optional<MaintenanceLock.Lease>> take : takes) {
          take.get(1, TimeUnit.MINUTES).ifPresent(won::add);
        }
        assertThat(won).as("round %s over %s", round, name).hasSize(1);
        MaintenanceLock.Lease lease = won.get(0);
        assertThat(locks.get(0).holder()).contains(lease.holder());
        assertThat(lease.renew()).isTrue();
        lease.close();
        assertThat(locks.get(0).holder()).isEmpty();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void anExpiredLeaseIsTakenOverAndItsOldHolderLearnsItLostIt(String name) throws Exception {
    CatalogFixture fixture = fixture(name, "expiry");
    TestTables.create(fixture.newCatalog());
    MaintenanceLock first = lock(fixture, Duration.ofMinutes(1));
    MaintenanceLock.Lease old = first.tryAcquire("first").orElseThrow();

    MaintenanceLock second = lock(fixture, Duration.ofMinutes(1));
    assertThat(second.tryAcquire("second")).as("a live lease is not taken").isEmpty();
    Clock later = Clock.fixed(Instant.now().plus(Duration.ofMinutes(2)), ZoneOffset.UTC);
    MaintenanceLock.Lease taken = second.withClock(later).tryAcquire("second").orElseThrow();
    assertThat(taken.holder().holder()).startsWith("second [");

    assertThat(old.renew()).as("the old holder's renewal after the takeover").isFalse();
    old.close(); // must not remove the new holder's lease
    assertThat(second.holder()).contains(taken.holder());
    taken.close();
    assertThat(second.holder()).isEmpty();
  }

  /**
   * The other way round: before each of the first catalog attempts of every lease commit (take, renewal, release),
   * a checkpoint commit lands — more in a row than one transaction retries, as a job committing every few tens of
   * milliseconds does. The lease's commits still land (a release that gave up would leave the lease held for its
   * whole duration, and every maintenance round skipped meanwhile), and every checkpoint committed once.
   */
  @ParameterizedTest
  @MethodSource("catalogs")
  void leaseCommitsThatLoseManyRacesToCheckpointCommitsStillLand(String name) throws Exception {
    CatalogFixture fixture = fixture(name, "races");
    Table table = TestTables.create(fixture.newCatalog());
    TableCommitter committer = new TableCommitter(fixture.newCatalog(), TestTables.IDENT, CommitMode.APPEND, null,
        null, new CommitCounters());
    int races = 8; // more than Iceberg's commit.retry.num-retries (4) + 1 attempts of one transaction
    AtomicInteger checkpoints = new AtomicInteger();
    MaintenanceLock racing = lock(fixture, Duration.ofMinutes(5)).withAttemptHook(attempt -> {
      if (attempt <= races) {
        long checkpoint = checkpoints.incrementAndGet();
        long from = (checkpoint - 1) * 10;
        CommitOutcome outcome = committer.commit(TestTables.changes(checkpoint,
            List.of(TestTables.dataFile(table, from, from + 10))));
        assertThat(outcome).isInstanceOf(CommitOutcome.Committed.class);
      }
    });

    MaintenanceLock.Lease lease = racing.tryAcquire("racing").orElseThrow(
        () -> new AssertionError("the take gave up after losing its races"));
    assertThat(lease.renew()).as("renewed after losing its races").isTrue();
    lease.close();
    assertThat(lock(fixture, Duration.ofMinutes(5)).holder()).as("released after losing its races").isEmpty();
    assertThat(checkpoints.get()).as("checkpoint commits that raced the lease's").isEqualTo(3 * races);
    assertThat(TestTables.committedCheckpoints(table)).hasSize(3 * races);
    assertThat(TestTables.keyCounts(table)).hasSize(3 * races * 10).allSatisfy((k, n) -> assertThat(n).isOne());
  }

  /**
   * Before each of the first three catalog attempts of every checkpoint commit, another catalog takes, renews and
   * releases the lease, so every commit meets three conflicts: every checkpoint still commits exactly once, within
   * its own transaction's retries (no attempt is left to the retry policy), and the lease keeps working.
   */
  @ParameterizedTest
  @MethodSource("catalogs")
  void leaseCommitsNeverFailACheckpointCommit(String name) throws Exception {
    CatalogFixture fixture = fixture(name, "commits");
    Table table = TestTables.create(fixture.newCatalog());
    MaintenanceLock hookLock = lock(fixture, Duration.ofMinutes(5));
    AtomicInteger leaseCommits = new AtomicInteger();
    List<MaintenanceLock.Lease> held = new ArrayList<>();
    CommitCounters counters = new CommitCounters();
    TableCommitter committer = new TableCommitter(fixture.newCatalog(), TestTables.IDENT, CommitMode.APPEND, null,
        null, counters).attemptHook(attempt -> {
          switch (attempt) {
            case 1 -> held.add(hookLock.tryAcquire("hook").orElseThrow());
            case 2 -> assertThat(held.get(0).renew()).isTrue();
            case 3 -> held.remove(0).close();
            default -> {
              return;
            }
          }
          leaseCommits.incrementAndGet();
        });

    RetryPolicy retry = RetryPolicy.builder().maxAttempts(8).initialBackoff(Duration.ofMillis(10))
        .maxBackoff(Duration.ofMillis(200)).build();
    int checkpoints = TestScale.pick(12, 100);
    List<String> outcomes = new ArrayList<>();
    for (long checkpoint = 1; checkpoint <= checkpoints; checkpoint++) {
      long from = (checkpoint - 1) * 10;
      CheckpointChanges changes = TestTables.changes(checkpoint, List.of(TestTables.dataFile(table, from,
          from + 10)));
      CommitOutcome outcome = retry.commit("checkpoint " + checkpoint, () -> committer.commit(changes));
      outcomes.add(outcome.getClass().getSimpleName());
    }
    System.out.printf("%s: %d lease commits in the hook, %d conflicts, %d attempts%n", name, leaseCommits.get(),
        counters.conflicts(), counters.attempts());
    assertThat(outcomes).as("every checkpoint commit").containsOnly("Committed").hasSize(checkpoints);
    assertThat(counters.failures()).as("attempts left to the retry policy").isZero();
    assertThat(leaseCommits.get()).isEqualTo(3 * checkpoints);
    assertThat(counters.conflicts()).as("lease commits met by checkpoint commits").isEqualTo(3L * checkpoints);
    assertThat(held).isEmpty();
    assertThat(TestTables.committedCheckpoints(table)).hasSize(checkpoints);
    assertThat(TestTables.keyCounts(table)).hasSize(checkpoints * 10).allSatisfy((k, n) -> assertThat(n).isOne());
    assertThat(hookLock.tryAcquire("after")).as("the lease is free again").isPresent();
  }
}
