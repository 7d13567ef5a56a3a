package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

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

/** The JVM-wide rename lock of guarded Hadoop tables: one holder per entity, handed over on release. */
class HadoopCommitLockTest {

  @Test
  void oneHolderAtATimeAndTheNextTakesItOnRelease() throws Exception {
    HadoopCommitLock lock = lock(60_000);
    HadoopCommitLock impatient = lock(1);
    String entity = "entity-" + UUID.randomUUID();
    assertThat(lock.acquire(entity, "first")).isTrue();
    assertThat(impatient.acquire(entity, "second")).as("held by first").isFalse();
    assertThat(lock.release(entity, "second")).as("not the holder").isFalse();

    ExecutorService thread = Executors.newSingleThreadExecutor();
    try {
      CountDownLatch waiting = new CountDownLatch(1);
      HadoopCommitLock signalling = new HadoopCommitLock(null, new Configuration(), Map.of(), true,
          e -> waiting.countDown());
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

  private static HadoopCommitLock lock(long timeoutMs) {
    return new HadoopCommitLock(null, new Configuration(),
        Map.of(CatalogProperties.LOCK_ACQUIRE_TIMEOUT_MS, Long.toString(timeoutMs)), true, entity -> { });
  }
}
