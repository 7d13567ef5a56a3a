package dev.lakecommit.hive;

import static dev.lakecommit.hive.HiveTestData.PARTITIONED;
import static dev.lakecommit.hive.HiveTestData.SCHEMA;
import static dev.lakecommit.hive.HiveTestData.row;
import static dev.lakecommit.hive.HiveTestData.rows;
import static dev.lakecommit.hive.HiveTestData.stage;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongFunction;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Merging a Hive table's small files ({@link HiveMaintenance}) on a real metastore and local disk: rows exact after
 * every round as a reader that knows nothing of Lakecommit reads them, the jobs' parameters untouched, old files
 * deleted by the next round, a concurrent commit never losing rows (the merge is dropped, or the commit moves its
 * files on), and the crash points of a merge.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HiveMergeIT {
  private static final String JOB = "merge-job";
  /** Every row in one partition: the race tests line one commit up with one switch. */
  private static final LongFunction<Record> ONE_PARTITION = id -> row(id, "plain", 0);
  private static final HiveMaintenance.Options NOW = HiveMaintenance.Options.defaults().keepCheckpoints(0)
      .minAge(Duration.ZERO);

  private HiveMetastoreServer hms;
  private HiveFixture fixture;

  @BeforeAll
  void start() throws Exception {
    hms = HiveMetastoreServer.startOnDerby();
    fixture = new HiveFixture(hms, hms.warehouseLocation(), Map.of());
  }

  @AfterAll
  void stop() {
    if (fixture != null) {
      fixture.close();
    }
    if (hms != null) {
      hms.close();
    }
  }

  /** A table, its sink and a committer of run epoch 1 of {@value #JOB}. */
  private final class Writer implements AutoCloseable {
    final String table = HiveFixture.newTable("merge");
    final HiveSink<Record> sink;
    final HiveAggregatedCommitter committer;
    final CommitTarget target;
    long checkpoint;

    Writer(java.util.function.UnaryOperator<HiveSink<Record>> tweak) throws IOException {
      sink = tweak.apply(HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, PARTITIONED).build()));
      target = sink.openTarget();
      RunEpoch epoch = target.claimEpoch(JobId.of(JOB), "merge-test");
      committer = HiveSinkSuite.committer(sink);
      committer.fence(JobId.of(JOB), epoch.epoch());
    }

    /** Commits rows {@code [from, to)} as the next checkpoint, retrying what is retryable (bounded). */
    void commit(long from, long to, LongFunction<Record> rowOf) throws IOException {
      checkpoint++;
      HiveCommittable committable = stage(sink, committer, JOB, checkpoint, rows(from, to, rowOf));
      for (int attempt = 1; ; attempt++) {
        CommitOutcome outcome = committer.commit(committable);
        if (outcome.isSuccess()) {
          return;
        }
        assertThat(outcome.isRetryable() && attempt < 20).as("checkpoint %s: %s", checkpoint, outcome).isTrue();
      }
    }

    @Override
    public void close() throws IOException {
      committer.close();
      target.close();
    }
  }

  @Test
  void mergesSmallFilesKeepsTheJobsParametersAndDeletesReplacedFilesNextRound() throws Exception {
    try (Writer w = new Writer(s -> s)) {
      for (int c = 0; c < 6; c++) {
        w.commit(c * 20L, c * 20L + 20, HiveTestData.MIXED);
      }
      TableContents before = fixture.contents(w.table);
      Map<String, String> tableParams = fixture.client().getTable(HiveFixture.DB, w.table).getParameters();
      HiveMaintenance maintenance = w.sink.maintenance();
      HiveMaintenance.Options keepTwo = HiveMaintenance.Options.defaults().keepCheckpoints(2);

      HiveMaintenance.Plan plan = maintenance.plan(keepTwo);
      assertThat(plan.partitions()).hasSize(10).allSatisfy(p -> {
        assertThat(p.filesMerged()).isEqualTo(4);
        assertThat(p.bins()).isEqualTo(1);
        assertThat(p.filesCopied()).isEqualTo(2);
      });
      assertThat(fixture.contents(w.table).files()).as("a plan changes nothing")
          .containsExactlyInAnyOrderElementsOf(before.files());

      HiveMaintenance.Result merged = maintenance.merge(keepTwo);
      assertThat(merged.merged()).as("%s", merged).isEqualTo(10);
      assertThat(merged.filesMerged()).isEqualTo(40);
      TableContents after = fixture.contents(w.table);
      assertThat(after.ids()).containsExactlyInAnyOrderElementsOf(ids(0, 120));
      assertThat(after.files()).hasSize(30).noneMatch(f -> f.startsWith(JOB + "-1-") || f.startsWith(JOB + "-4-"));
      assertThat(after.visibleDirs()).isEmpty();
      assertThat(fixture.client().getTable(HiveFixture.DB, w.table).getParameters())
          .as("watermark and run epoch untouched").isEqualTo(tableParams);
      for (TableContents.Part part : after.parts()) {
        assertThat(part.params()).containsEntry("lakecommit.committed." + JOB, "6")
            .containsEntry(TableParameters.NUM_FILES, "3")
            .containsEntry(TableParameters.NUM_ROWS, String.valueOf(part.ids().size()));
        assertThat(part.location()).contains("/" + MergeRound.MERGE_DIR + "/");
      }
      // The replaced files stay until the next round: a reader may still read the old directories.
      assertThat(visibleFiles(usualDir(w.table, before.parts().get(0).name()))).hasSize(6);

      // A checkpoint committed after the switch goes to the merged directory.
      w.commit(120, 140, HiveTestData.MIXED);
      List<String> firstMergeDirs = after.parts().stream().map(TableContents.Part::location).toList();
      HiveMaintenance.Result next = maintenance.merge(keepTwo);
      assertThat(next.filesDeleted()).as("%s", next).isEqualTo(60);
      assertThat(next.merged()).as("the merged file and checkpoint 5's").isEqualTo(10);
      for (TableContents.Part part : before.parts()) {
        assertThat(visibleFiles(usualDir(w.table, part.name()))).isEmpty();
      }
      assertThat(fixture.contents(w.table).ids()).containsExactlyInAnyOrderElementsOf(ids(0, 140));

      HiveMaintenance.Result all = maintenance.merge(NOW);
      assertThat(all.filesDeleted()).as("%s", all).isEqualTo(40);
      assertThat(all.merged()).isEqualTo(10);
      for (String dir : firstMergeDirs) {
        assertThat(fs().exists(new Path(dir))).as("%s, emptied, is deleted", dir).isFalse();
      }
      TableContents last = fixture.contents(w.table);
      assertThat(last.ids()).containsExactlyInAnyOrderElementsOf(ids(0, 140));
      assertThat(last.files()).hasSize(10);
      assertThat(fixture.client().getTable(HiveFixture.DB, w.table).getParameters())
          .containsEntry("lakecommit.committed." + JOB, "7")
          .containsEntry(RunEpoch.key(JobId.of(JOB)), tableParams.get(RunEpoch.key(JobId.of(JOB))));
    }
  }

  /**
   * A commit whose files land in the partition's old directory right before the switch (its intent was written
   * after the merge's checks): its next attempt finds them there and moves them on; nothing is lost.
   */
  @Test
  void aCommitThatMovedIntoTheOldDirectoryDuringTheSwitchMovesItsFilesOn() throws Exception {
    CountDownLatch moved = new CountDownLatch(1);
    CountDownLatch switched = new CountDownLatch(1);
    AtomicBoolean raced = new AtomicBoolean();
    try (Writer w = new Writer(s -> s.commitHook((point, id) -> {
      if (point.equals(CommitHook.FILES_MOVED) && id.checkpointId() == 4 && raced.compareAndSet(false, true)) {
        moved.countDown();
        await(switched);
      }
    }))) {
      for (int c = 0; c < 3; c++) {
        w.commit(c * 10L, c * 10L + 10, ONE_PARTITION);
      }
      ExecutorService other = Executors.newSingleThreadExecutor();
      try {
        AtomicReferenceOf<Future<?>> commit = new AtomicReferenceOf<>();
        HiveMaintenance maintenance = w.sink.maintenance().hook((point, partition) -> {
          if (point.equals(MergeHook.BEFORE_SWITCH)) {
            commit.value = other.submit(() -> {
              w.commit(30, 40, ONE_PARTITION);
              return null;
            });
            await(moved);
          } else if (point.equals(MergeHook.SWITCHED)) {
            switched.countDown();
          }
        });
        HiveMaintenance.Result result = maintenance.merge(NOW);
        assertThat(result.merged()).as("%s", result).isEqualTo(1);
        commit.value.get(2, TimeUnit.MINUTES);
      } finally {
        other.shutdownNow();
      }
      assertThat(w.committer.conflicts()).as("the commit saw the switch").isPositive();
      TableContents after = fixture.contents(w.table);
      assertThat(after.ids()).containsExactlyInAnyOrderElementsOf(ids(0, 40));
      assertThat(after.part("cat=plain/bucket=0").files()).hasSize(2).anyMatch(f -> f.startsWith(JOB + "-4-"));

      HiveMaintenance.Result next = w.sink.maintenance().merge(NOW);
      assertThat(next.filesDeleted()).as("%s", next).isEqualTo(3);
      assertThat(visibleFiles(usualDir(w.table, "cat=plain/bucket=0"))).isEmpty();
      assertThat(fixture.contents(w.table).ids()).containsExactlyInAnyOrderElementsOf(ids(0, 40));
    }
  }

  /**
   * A job committing every checkpoint into the same partitions while rounds run on another thread: rows exact after
   * every round (no duplicate, every committed row there), merges dropped when a commit came between their read and
   * their switch, and the table exact at the end. Every third round runs while the job waits between two
   * checkpoints, so merges are seen to land as well as to meet commits; the others run beside the commits until
   * one of them has met a commit (bounded).
   */
  @Test
  void mergesWhileAJobCommitsEveryCheckpoint() throws Exception {
    int rounds = TestScale.pick(10, 60);
    int maxRounds = rounds * 5;
    int perCheckpoint = 30;
    try (Writer w = new Writer(s -> s)) {
      LongFunction<Record> twoPartitions = id -> row(id, id % 2 == 0 ? "plain" : "a/b", 0);
      w.commit(0, perCheckpoint, twoPartitions);
      AtomicLong committedRows = new AtomicLong(perCheckpoint);
      AtomicBoolean stop = new AtomicBoolean();
      ReentrantReadWriteLock quiet = new ReentrantReadWriteLock(true);
      ExecutorService writer = Executors.newSingleThreadExecutor();
      Future<?> commits = writer.submit(() -> {
        while (!stop.get()) {
          quiet.readLock().lock();
          try {
            long from = committedRows.get();
            w.commit(from, from + perCheckpoint, twoPartitions);
            committedRows.set(from + perCheckpoint);
          } finally {
            quiet.readLock().unlock();
          }
        }
        return null;
      });
      int merged = 0;
      int mergedBesideCommits = 0;
      int dropped = 0;
      int caughtUp = 0;
      int failed = 0;
      int round = 0;
      HiveMaintenance maintenance = w.sink.maintenance();
      try {
        for (; round < maxRounds; round++) {
          boolean met = dropped + caughtUp + w.committer.conflicts() > 0;
          if (round >= rounds && met) {
            break;
          }
          boolean quietRound = round % 3 == 2;
          long committedBefore = committedRows.get();
          if (quietRound) {
            quiet.writeLock().lock();
          }
          try {
            HiveMaintenance.Result result = maintenance.merge(NOW.keepCheckpoints(1));
            merged += result.merged();
            mergedBesideCommits += quietRound ? 0 : result.merged();
            dropped += result.dropped().size();
            caughtUp += result.caughtUp();
          } catch (IOException e) {
            failed++; // e.g. a file a commit moved away meanwhile; the next round tries again
          } finally {
            if (quietRound) {
              quiet.writeLock().unlock();
            }
          }
          List<Long> ids = fixture.contents(w.table).ids();
          assertThat(new HashSet<>(ids)).as("round %s: no duplicate", round).hasSameSizeAs(ids);
          assertThat(ids).as("round %s: every committed row", round).containsAll(ids(0, committedBefore));
          assertThat(commits.isDone()).as("the writer failed").isFalse();
        }
      } finally {
        stop.set(true);
        commits.get(2, TimeUnit.MINUTES);
        writer.shutdownNow();
      }
      String seen = String.format("%s rounds, %s merged (%s beside commits), %s dropped, %s files caught up,"
          + " %s failed rounds, %s commit conflicts, %s checkpoints", round, merged, mergedBesideCommits, dropped,
          caughtUp, failed, w.committer.conflicts(), w.checkpoint);
      System.out.println("Merges while a job commits: " + seen);
      assertThat(merged).as(seen).isPositive();
      assertThat(dropped + caughtUp + w.committer.conflicts()).as("commits met merges: " + seen).isPositive();
      maintenance.merge(NOW);
      assertThat(fixture.contents(w.table).ids()).containsExactlyInAnyOrderElementsOf(ids(0, committedRows.get()));
    }
  }

  /** Crash after the merged files are written: the table is as before, and the next round removes them. */
  @Test
  void crashAfterWritingMergedFiles() throws Exception {
    try (Writer w = new Writer(s -> s)) {
      for (int c = 0; c < 3; c++) {
        w.commit(c * 10L, c * 10L + 10, ONE_PARTITION);
      }
      HiveMaintenance crashing = w.sink.maintenance().hook(crashAt(MergeHook.FILES_WRITTEN, 1));
      assertThatThrownBy(() -> crashing.merge(NOW)).hasMessageContaining("crash");
      Path mergeDirs = new Path(usualDir(w.table, "cat=plain/bucket=0"), MergeRound.MERGE_DIR);
      assertThat(fs().listStatus(mergeDirs)).hasSize(1);
      assertThat(fixture.contents(w.table).ids()).containsExactlyInAnyOrderElementsOf(ids(0, 30));

      HiveMaintenance.Result next = w.sink.maintenance().merge(NOW);
      assertThat(next.leftoversDeleted()).as("%s", next).isEqualTo(1);
      assertThat(next.merged()).isEqualTo(1);
      assertThat(fs().listStatus(mergeDirs)).hasSize(1);
      assertThat(fixture.contents(w.table).ids()).containsExactlyInAnyOrderElementsOf(ids(0, 30));
    }
  }

  /** Crash right after the switch: rows exact; the next round deletes the replaced files. */
  @Test
  void crashAfterTheSwitch() throws Exception {
    try (Writer w = new Writer(s -> s)) {
      for (int c = 0; c < 3; c++) {
        w.commit(c * 10L, c * 10L + 10, ONE_PARTITION);
      }
      HiveMaintenance crashing = w.sink.maintenance().hook(crashAt(MergeHook.SWITCHED, 1));
      assertThatThrownBy(() -> crashing.merge(NOW)).hasMessageContaining("crash");
      assertThat(fixture.contents(w.table).ids()).containsExactlyInAnyOrderElementsOf(ids(0, 30));
      assertThat(fixture.contents(w.table).files()).hasSize(1);

      HiveMaintenance.Result next = w.sink.maintenance().merge(NOW);
      assertThat(next.filesDeleted()).as("%s", next).isEqualTo(3);
      assertThat(visibleFiles(usualDir(w.table, "cat=plain/bucket=0"))).isEmpty();
      assertThat(fixture.contents(w.table).ids()).containsExactlyInAnyOrderElementsOf(ids(0, 30));
    }
  }

  /** Crash while deleting the replaced files: the next round deletes the rest, and only them. */
  @Test
  void crashWhileDeletingReplacedFiles() throws Exception {
    try (Writer w = new Writer(s -> s)) {
      for (int c = 0; c < 4; c++) {
        w.commit(c * 10L, c * 10L + 10, ONE_PARTITION);
      }
      assertThat(w.sink.maintenance().merge(NOW).merged()).isEqualTo(1);
      w.commit(40, 50, ONE_PARTITION);
      HiveMaintenance crashing = w.sink.maintenance().hook(crashAt(MergeHook.FILE_DELETED, 2));
      assertThatThrownBy(() -> crashing.merge(NOW)).hasMessageContaining("crash");
      assertThat(visibleFiles(usualDir(w.table, "cat=plain/bucket=0"))).hasSize(2);
      assertThat(fixture.contents(w.table).ids()).containsExactlyInAnyOrderElementsOf(ids(0, 50));

      HiveMaintenance.Result next = w.sink.maintenance().merge(NOW);
      assertThat(next.filesDeleted()).as("%s", next).isEqualTo(2);
      assertThat(visibleFiles(usualDir(w.table, "cat=plain/bucket=0"))).isEmpty();
      assertThat(fixture.contents(w.table).ids()).containsExactlyInAnyOrderElementsOf(ids(0, 50));
    }
  }

  /** The hook that throws the {@code n}th time {@code point} is reached, as a crash there would stop the round. */
  private static MergeHook crashAt(String point, int n) {
    AtomicInteger reached = new AtomicInteger();
    return (at, partition) -> {
      if (at.equals(point) && reached.incrementAndGet() == n) {
        throw new IOException("crash at " + point + " in " + partition);
      }
    };
  }

  private static final class AtomicReferenceOf<T> {
    volatile T value;
  }

  private static void await(CountDownLatch latch) {
    try {
      assertThat(latch.await(1, TimeUnit.MINUTES)).as("the other side came").isTrue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private FileSystem fs() throws IOException {
    return new Path(fixture.warehouse()).getFileSystem(fixture.conf());
  }

  private Path usualDir(String table, String partition) throws Exception {
    Table t = fixture.client().getTable(HiveFixture.DB, table);
    return new Path(t.getSd().getLocation(), partition);
  }

  private List<String> visibleFiles(Path dir) throws IOException {
    List<String> names = new ArrayList<>();
    for (FileStatus status : fs().listStatus(dir)) {
      if (status.isFile() && !HivePaths.isHidden(status.getPath().getName())) {
        names.add(status.getPath().getName());
      }
    }
    return names;
  }

  private static List<Long> ids(long from, long to) {
    List<Long> ids = new ArrayList<>();
    for (long id = from; id < to; id++) {
      ids.add(id);
    }
    return ids;
  }
}
