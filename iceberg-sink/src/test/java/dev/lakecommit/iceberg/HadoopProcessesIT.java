package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Processes committing to one Hadoop table on the local file system at the same time, as when a user starts two
 * jobs (or a job and a maintenance run) on one warehouse directory.
 */
class HadoopProcessesIT {
  @TempDir Path dir;

  @Test
  void processesAppendingToOneLocalHadoopTableLoseNoCommit() throws Exception {
    Result result = race(true);
    assertThat(result.lost()).as("keys lost").isEmpty();
    assertThat(result.duplicated()).as("keys twice").isZero();
    assertThat(result.conflicts()).as("the processes raced: a commit attempt lost to the other's").isPositive();
  }

  /** The same race with the commit lock kept within each process: commits that each process saw succeed are lost. */
  @Test
  void withoutTheLockAcrossProcessesCommitsAreLost() throws Exception {
    Result result = race(false);
    assertThat(result.lost()).as("keys lost").isNotEmpty();
  }

  @Test
  void aCommitLockHeldByAnotherProcessKeepsThisOneOutUntilReleasedOrTheProcessDies() throws Exception {
    Path metadata = Files.createDirectories(dir.resolve("table/metadata"));
    String entity = metadata.resolve("v1.metadata.json").toUri().toString();
    HadoopCommitLock impatient = HadoopCommitLockTest.lock(200, HadoopCommitLock.Options.ALL);

    Path released = dir.resolve("release");
    Process holder = holdLock(entity, released);
    assertThat(impatient.acquire(entity, "parent")).as("held by the other process").isFalse();
    HadoopCommitLock unguarded = HadoopCommitLockTest.lock(200, HadoopCommitLock.Options.ALL.withoutProcessLock());
    assertThat(unguarded.acquire(entity, "unguarded")).as("a lock of this JVM only does not see the other process's")
        .isTrue();
    assertThat(unguarded.release(entity, "unguarded")).isTrue();
    Files.createFile(released);
    assertThat(holder.waitFor(1, TimeUnit.MINUTES)).isTrue();
    assertThat(holder.exitValue()).isZero();
    HadoopCommitLock patient = HadoopCommitLockTest.lock(60_000, HadoopCommitLock.Options.ALL);
    assertThat(patient.acquire(entity, "parent")).isTrue();
    assertThat(patient.release(entity, "parent")).isTrue();

    Files.delete(released);
    Process killed = holdLock(entity, released);
    assertThat(impatient.acquire(entity, "parent")).as("held by the other process").isFalse();
    killed.destroyForcibly();
    assertThat(killed.waitFor(1, TimeUnit.MINUTES)).isTrue();
    assertThat(patient.acquire(entity, "parent")).as("the dead process's lock was dropped").isTrue();
    assertThat(patient.release(entity, "parent")).isTrue();
    assertThat(metadata.resolve(HadoopCommitLock.LOCK_FILE)).exists();
  }

  /**
   * A table dropped and made again at the same path has a new lock file: this JVM, which has the old one open from
   * an earlier commit, must lock the new one, which another process holds now.
   */
  @Test
  void aTableMadeAgainAtTheSamePathIsLockedByItsNewLockFile() throws Exception {
    Path metadata = Files.createDirectories(dir.resolve("again/metadata"));
    String entity = metadata.resolve("v1.metadata.json").toUri().toString();
    HadoopCommitLock impatient = HadoopCommitLockTest.lock(200, HadoopCommitLock.Options.ALL);
    assertThat(impatient.acquire(entity, "before")).isTrue();
    assertThat(impatient.release(entity, "before")).isTrue();
    Files.delete(metadata.resolve(HadoopCommitLock.LOCK_FILE));
    Files.delete(metadata);
    Files.createDirectories(metadata);

    Path released = dir.resolve("release-again");
    Process holder = holdLock(entity, released);
    assertThat(impatient.acquire(entity, "after")).as("held by the other process, on the new lock file").isFalse();
    Files.createFile(released);
    assertThat(holder.waitFor(1, TimeUnit.MINUTES)).isTrue();
    assertThat(impatient.acquire(entity, "after")).isTrue();
    assertThat(impatient.release(entity, "after")).isTrue();
  }

  /**
   * Two copies of the lock class in one JVM (two Flink jobs' class loaders in one TaskManager): the second copy
   * cannot take the table's lock while the first holds it, and its failed attempts (and the first's release) leave
   * no process able to take it while it is held.
   */
  @Test
  void aSecondCopyOfTheLockClassInThisJvmWaitsAndDropsNoLockOfTheFirst() throws Exception {
    Path metadata = Files.createDirectories(dir.resolve("table/metadata"));
    String entity = metadata.resolve("v1.metadata.json").toUri().toString();
    HadoopCommitLock first = HadoopCommitLockTest.lock(60_000, HadoopCommitLock.Options.ALL);
    org.apache.iceberg.LockManager second = secondCopy(200);
    assertThat(first.acquire(entity, "first")).isTrue();
    assertThat(second.acquire(entity, "second")).as("held by the first copy").isFalse();
    assertThat(second.release(entity, "second")).as("not the holder").isFalse();
    assertThat(tryInAnotherProcess(entity)).as("another process while the first copy holds it").isFalse();
    assertThat(first.release(entity, "first")).isTrue();
    assertThat(second.acquire(entity, "second")).isTrue();
    assertThat(tryInAnotherProcess(entity)).as("another process while the second copy holds it").isFalse();
    assertThat(second.release(entity, "second")).isTrue();
    assertThat(tryInAnotherProcess(entity)).as("another process once both released").isTrue();
  }

  /** Whether a child process can take the commit lock of {@code entity} within 300 ms. */
  private boolean tryInAnotherProcess(String entity) throws Exception {
    Path held = dir.resolve("held-" + System.nanoTime());
    Path release = Files.createFile(dir.resolve("release-" + System.nanoTime()));
    Process child = RaceCommitterMain.startJava(HoldCommitLockMain.class, entity, held.toString(), release.toString(),
        "300");
    assertThat(child.waitFor(1, TimeUnit.MINUTES)).isTrue();
    String out = new String(child.getInputStream().readAllBytes());
    assertThat(out).containsAnyOf("RELEASED", "NOT ACQUIRED");
    return child.exitValue() == 0;
  }

  /** {@link HadoopCommitLock} loaded again by a class loader of its own, as a second job's copy of it. */
  private static org.apache.iceberg.LockManager secondCopy(long timeoutMs) throws Exception {
    ClassLoader app = HadoopProcessesIT.class.getClassLoader();
    ClassLoader own = new ClassLoader(app) {
      @Override
      protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (!name.startsWith(HadoopCommitLock.class.getName())) {
          return super.loadClass(name, resolve);
        }
        synchronized (getClassLoadingLock(name)) {
          Class<?> loaded = findLoadedClass(name);
          if (loaded == null) {
            try (java.io.InputStream in = app.getResourceAsStream(name.replace('.', '/') + ".class")) {
              byte[] bytes = in.readAllBytes();
              loaded = defineClass(name, bytes, 0, bytes.length);
            } catch (java.io.IOException e) {
              throw new ClassNotFoundException(name, e);
            }
          }
          return loaded;
        }
      }
    };
    Class<?> lock = own.loadClass(HadoopCommitLock.class.getName());
    Class<?> options = own.loadClass(HadoopCommitLock.Options.class.getName());
    assertThat(lock).isNotSameAs(HadoopCommitLock.class);
    java.lang.reflect.Constructor<?> constructor = lock.getDeclaredConstructor(org.apache.iceberg.LockManager.class,
        Configuration.class, Map.class, options);
    constructor.setAccessible(true);
    java.lang.reflect.Field all = options.getDeclaredField("ALL");
    all.setAccessible(true);
    return (org.apache.iceberg.LockManager) constructor.newInstance(null, new Configuration(),
        Map.of(org.apache.iceberg.CatalogProperties.LOCK_ACQUIRE_TIMEOUT_MS, Long.toString(timeoutMs)),
        all.get(null));
  }

  /** A child process that holds the commit lock of {@code entity} until {@code release} exists. */
  private Process holdLock(String entity, Path release) throws Exception {
    Path held = dir.resolve("held-" + System.nanoTime());
    Process child = RaceCommitterMain.startJava(HoldCommitLockMain.class, entity, held.toString(),
        release.toString());
    RaceCommitterMain.awaitFile(held);
    return child;
  }


  private Result race(boolean processLock) throws Exception {
    int processes = 3;
    int commits = TestScale.pick(20, 200);
    int rows = 5;
    String warehouse = dir.resolve("warehouse-" + processLock).toUri().toString();
    Catalog catalog = CatalogUtil.buildIcebergCatalog("hadoop",
        GuardedHadoopCatalog.substitute(Map.of("type", "hadoop", "warehouse", warehouse)), new Configuration());
    Table table = TestTables.create(catalog);
    Path barrier = Files.createDirectory(dir.resolve("barrier-" + processLock));
    List<Process> children = new ArrayList<>();
    for (int p = 0; p < processes; p++) {
      List<String> args = new ArrayList<>(List.of(warehouse, "job-" + p, String.valueOf((long) p * commits * rows),
          String.valueOf(commits), String.valueOf(rows), barrier.toString()));
      if (!processLock) {
        args.add("no-process-lock");
      }
      children.add(RaceCommitterMain.startJava(HadoopAppendLoopMain.class, args.toArray(String[]::new)));
    }
    for (int p = 0; p < processes; p++) {
      RaceCommitterMain.awaitFile(barrier.resolve("ready-job-" + p));
    }
    Files.createFile(barrier.resolve("go"));
    long conflicts = 0;
    for (Process child : children) {
      assertThat(child.waitFor(5, TimeUnit.MINUTES)).isTrue();
      String output = new String(child.getInputStream().readAllBytes());
      assertThat(child.exitValue()).as(output).isZero();
      String done = output.lines().filter(l -> l.startsWith("DONE ")).findFirst().orElseThrow();
      if (processLock) { // unguarded, a process may also read a version file replaced under it: outcome unknown
        assertThat(done.split(" ")[1]).as(output).isEqualTo(String.valueOf(commits));
      }
      conflicts += Long.parseLong(done.split(" ")[2]);
    }
    Map<Long, Integer> counts = TestTables.keyCounts(table);
    List<Long> lost = new ArrayList<>();
    for (long key = 0; key < (long) processes * commits * rows; key++) {
      if (!counts.containsKey(key)) {
        lost.add(key);
      }
    }
    long duplicated = counts.values().stream().filter(n -> n > 1).count();
    System.out.printf("[hadoop-processes] lock across processes %s: %d commits, %d conflicts, %d keys lost%n",
        processLock, processes * commits, conflicts, lost.size());
    return new Result(lost, duplicated, conflicts);
  }

  private record Result(List<Long> lost, long duplicated, long conflicts) {}
}
