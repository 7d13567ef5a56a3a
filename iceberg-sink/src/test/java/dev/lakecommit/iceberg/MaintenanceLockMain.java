package dev.lakecommit.iceberg;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * A second process contending for the maintenance lease: says it is ready, waits for go, tries to take the lease,
 * prints {@code TOOK true|false <holder>}, and then holds it (never renewing, never releasing) until it is killed
 * or told to exit.
 *
 * <p>Arguments: catalog-properties-file, barrier directory, lease duration in milliseconds.
 */
public final class MaintenanceLockMain {
  private MaintenanceLockMain() {}

  public static void main(String[] args) throws Exception {
    MaintenanceLock lock = MaintenanceLock.of(RaceCommitterMain.catalogFrom(Path.of(args[0])), TestTables.IDENT,
        Duration.ofMillis(Long.parseLong(args[2])));
    Path barrier = Path.of(args[1]);
    RaceCommitterMain.arrive(barrier);
    Optional<MaintenanceLock.Lease> lease = lock.tryAcquire("child pid " + ProcessHandle.current().pid());
    System.out.println("TOOK " + lease.isPresent() + " " + lease.map(l -> l.holder().holder()).orElse(""));
    System.out.flush();
    RaceCommitterMain.awaitFile(barrier.resolve("exit"));
    System.exit(0);
  }
}
