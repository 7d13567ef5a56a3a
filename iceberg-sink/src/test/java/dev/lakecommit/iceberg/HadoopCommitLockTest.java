package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The JVM-wide rename lock of guarded Hadoop tables: one holder per entity (per local table), handed over on release. */
class HadoopCommitLockTest {

  @Test
  void oneHolderAtATimeAndTheNextTakesItOnRelease() throws Exception {
    HadoopCommitLock lock = lock(60_000);
    HadoopCommitLock impatient = lock(1);
    // not a local path: locked by entity, in this JVM only (a local table's lock file would go into its directory)
    String entity = "memory://entity-" + UUID.randomUUID();
    assertThat(lock.acquire(entity, "first")).isTrue();
    assertThat(impatient.acquire(entity, "second")).as("held by first").isFalse();
    assertThat(lock.release(entity, "second")).as("not the holder").isFalse();

    ExecutorService thread = Executors.newSingleThreadExecutor();
    try {
      CountDownLatch waiting = new CountDownLatch(1);
      HadoopCommitLock signalling = new HadoopCommitLock(null, new Configuration(), Map.of(),
          HadoopCommitLock.Options.ALL.withBeforeAcquire(e -> waiting.countDown()));
      Future<Boolean> second = thread.submit(() -> signalling.acquire(entity, "second"));
      waiting.await();
      assertThat(second).isNotDone();
      assertThat(lock.release(entity, "first")).isTrue();
      assertThat(second.get()).isTrue();
      assertThat(lock.release(entity, "second")).isTrue();
      assertThat(CompletableFuture.supplyAsync(() -> impatient.acquire(entity, "third")).get()).isTrue();
      assertThat(lock.release(entity, "third")).isTrue();
    } finally {
      thread.shutdownNow();
    }
  }

  /**
   * A local table is locked as a whole, by one operating-system lock that this JVM takes through one channel:
   * attempts at two versions of it take turns, and neither release drops the other's lock.
   */
  @Test
  void versionsOfOneLocalTableTakeTheTablesLockInTurn(@TempDir Path dir) throws Exception {
    Path metadata = Files.createDirectories(dir.resolve("table/metadata"));
    takeTurns(metadata.resolve("v2.metadata.json").toUri().toString(),
        metadata.resolve("v3.metadata.json").toUri().toString());
    assertThat(metadata.resolve(HadoopCommitLock.LOCK_FILE)).exists();
  }

  /** A table reached through a link is the same table: one lock file, one holder. */
  @Test
  void aLinkToATablesDirectoryLocksTheSameTable(@TempDir Path dir) throws Exception {
    Path metadata = Files.createDirectories(dir.resolve("table/metadata"));
    Path link = Files.createSymbolicLink(dir.resolve("link"), dir.resolve("table"));
    takeTurns(metadata.resolve("v2.metadata.json").toUri().toString(),
        "file:" + link.resolve("metadata/v3.metadata.json"));
    assertThat(link.resolve("metadata").resolve(HadoopCommitLock.LOCK_FILE)).exists();
  }

  /**
   * Where the lock file cannot be locked (here: a directory in its place; in the field an NFS mount without a lock
   * daemon), commits go on, kept apart within this JVM only, as before the lock across processes existed.
   */
  @Test
  void aLockFileThatCannotBeLockedLeavesThisJvmsLock(@TempDir Path dir) throws Exception {
    Path metadata = Files.createDirectories(dir.resolve("table/metadata"));
    Files.createDirectory(metadata.resolve(HadoopCommitLock.LOCK_FILE));
    String entity = metadata.resolve("v2.metadata.json").toUri().toString();
    takeTurns(entity, entity);
  }

  /** {@code first} and {@code second} are of one table: while one is locked the other waits, then it gets it. */
  private static void takeTurns(String first, String second) {
    HadoopCommitLock lock = lock(60_000, HadoopCommitLock.Options.ALL.withoutVersionCheck());
    HadoopCommitLock impatient = lock(1, HadoopCommitLock.Options.ALL.withoutVersionCheck());
    assertThat(lock.acquire(first, "first")).isTrue();
    assertThat(impatient.acquire(second, "second")).as("the table's lock is held by first").isFalse();
    assertThat(impatient.release(second, "second")).as("not the holder").isFalse();
    assertThat(lock.release(first, "first")).isTrue();
    assertThat(impatient.acquire(second, "second")).isTrue();
    assertThat(lock.release(second, "second")).isTrue();
  }

  private static HadoopCommitLock lock(long timeoutMs) {
    return lock(timeoutMs, HadoopCommitLock.Options.ALL);
  }

  static HadoopCommitLock lock(long timeoutMs, HadoopCommitLock.Options options) {
    return new HadoopCommitLock(null, new Configuration(),
        Map.of(CatalogProperties.LOCK_ACQUIRE_TIMEOUT_MS, Long.toString(timeoutMs)), options);
  }
}
