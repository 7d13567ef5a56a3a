package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Two processes contend for the maintenance lease of a table in a JDBC (PostgreSQL) or Hive catalog, taking it at
 * the same moment (every other race, the child first): exactly one holds it. Then the child is SIGKILLed; a lease it held stays in the table until its
 * expiry and is then taken over (the taker's clock moved past the expiry, so that nobody waits for it).
 */
class MaintenanceLockIT {
  private static final Duration LEASE = Duration.ofMinutes(2);

  @TempDir Path dir;
  private final List<AutoCloseable> servers = new ArrayList<>();

  static Stream<String> catalogs() {
    return CatalogFixture.SERVER_NAMES.stream();
  }

  @AfterEach
  void stopServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  @ParameterizedTest
  @MethodSource("catalogs")
  void exactlyOneOfTwoProcessesHoldsTheLeaseAndADeadHoldersLeaseIsTakenOver(String name) throws Exception {
    Path base = Files.createDirectory(dir.resolve("lock"));
    CatalogFixture fixture = CatalogFixture.named(name, base, servers);
    TestTables.create(fixture.newCatalog());
    Path catalogFile = RaceCommitterMain.writeCatalog(fixture, base);
    MaintenanceLock lock = MaintenanceLock.of(fixture.newCatalog(), TestTables.IDENT, LEASE);
    int races = TestScale.pick(3, 30);
    int childWins = 0;
    for (int race = 0; race < races; race++) {
      Path barrier = Files.createDirectory(base.resolve("barrier-" + race));
      Process child = RaceCommitterMain.startJava(MaintenanceLockMain.class, catalogFile.toString(),
          barrier.toString(), Long.toString(LEASE.toMillis()));
      try {
        RaceCommitterMain.awaitFile(barrier.resolve("child-ready"));
        Files.createFile(barrier.resolve("go"));
        // Every other race the child goes first, so that a dead holder's lease is seen in every run.
        boolean childFirst = race % 2 == 1;
        String theirs = childFirst ? took(child) : null;
        Optional<MaintenanceLock.Lease> mine = lock.tryAcquire("parent");
        theirs = childFirst ? theirs : took(child);
        boolean theyTook = theirs.startsWith("TOOK true");
        assertThat(mine.isPresent() ^ theyTook).as("race %s over %s: parent %s, child %s", race, name, mine,
            theirs).isTrue();
        assertThat(lock.holder().map(MaintenanceLock.Holder::holder)).as("race %s", race)
            .contains(mine.map(lease -> lease.holder().holder())
                .orElse(theirs.substring("TOOK true ".length()).trim()));
        if (mine.isPresent()) {
          mine.get().close();
          continue;
        }
        childWins++;
        child.destroyForcibly().waitFor(1, TimeUnit.MINUTES); // SIGKILL: its lease stays behind
        assertThat(lock.tryAcquire("parent")).as("a dead holder's lease before its expiry").isEmpty();
        Clock afterExpiry = Clock.fixed(Instant.now().plus(LEASE).plusSeconds(1), ZoneOffset.UTC);
        MaintenanceLock.Lease taken = lock.withClock(afterExpiry).tryAcquire("parent").orElseThrow(
            () -> new AssertionError("the expired lease of the killed child was not taken over"));
        assertThat(lock.holder()).contains(taken.holder());
        taken.close();
      } finally {
        Files.createFile(barrier.resolve("exit"));
        child.destroyForcibly().waitFor(1, TimeUnit.MINUTES);
      }
    }
    System.out.printf("MaintenanceLockIT %s: %d races, the child won %d%n", name, races, childWins);
    assertThat(lock.holder()).isEmpty();
  }

  /** The child's TOOK line (its log lines are skipped); bounded by the child's own barrier deadline. */
  private static String took(Process child) throws Exception {
    BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream()));
    StringBuilder seen = new StringBuilder();
    for (String line = out.readLine(); line != null; line = out.readLine()) {
      if (line.startsWith("TOOK ")) {
        return line;
      }
      seen.append(line).append('\n');
    }
    throw new AssertionError("The child ended without taking part:\n" + seen);
  }
}
