package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Compaction while a writer commits every checkpoint without pausing, as a real job does: rounds run on a thread of
 * their own beside the commits and nothing waits for them, so each maintenance commit races checkpoint commits.
 * Appends never conflict with a rewrite of older files, so every compaction must land however many races it loses
 * (before the fix a rewrite that lost Iceberg's few retries, or whose table object had gone stale, was dropped, and
 * a maintained table kept all its small files: #18's 1,000-checkpoint benchmark). Its Hadoop table keeps few metadata
 * files, so a slow compaction attempt can outlive them: the sink's {@link GuardedHadoopCatalog} must then refuse the
 * attempt rather than fork the history (without it, a compaction reported committed was lost).
 */
class CompactionUnderLoadTest {
  private static final JobId JOB = JobId.of("load-job");
  private static final int WRITERS = 2;
  private static final int PARTITIONS = 2;
  private static final int FILES_PER_CHECKPOINT = WRITERS * PARTITIONS;
  private static final int KEEP = 1;
  /**
   * Metadata files a Hadoop table keeps (Lakecommit's default is 100; fewer here, so that a waiting compaction
   * outlives them quickly).
   */
  private static final int PREVIOUS_VERSIONS = 40;

  @TempDir Path dir;

  /**
   * The writer commits checkpoints back to back; after every {@code every}-th a round (manifest rewrite,
   * compaction of all but the newest checkpoint, expiry) starts unless one still runs, and the writer keeps
   * committing until the last round it started has ended, so every round runs beside commits. The first
   * compaction, once its files are written, waits for more checkpoint commits than the table keeps metadata files,
   * as a long compaction of a busy table does (the table object it planned with can no longer refresh). Every round's
   * compaction lands (some after lost races: the race was real), the small files left are at most those committed
   * since the last round began, and every row is in the table once.
   */
  @Test
  void compactionLandsWhileAWriterCommitsEveryCheckpoint() throws Exception {
    int minCheckpoints = TestScale.pick(120, 1000);
    int every = TestScale.pick(20, 50);
    IcebergSinkConfig config = IcebergSinkConfig.builder()
        .catalogProperties(Map.of("type", "hadoop", "warehouse", dir.resolve("warehouse").toUri().toString(),
            "fs.file.impl", FastLocalFileSystem.class.getName(), "fs.file.impl.disable.cache", "true"))
        .catalogName("hadoop")
        .table("db.events")
        .createTable(TestTables.SCHEMA, List.of("bucket(" + PARTITIONS + ", id)"))
        .tableProperties(Map.of("format-version", "2", TableProperties.METADATA_PREVIOUS_VERSIONS_MAX,
            Integer.toString(PREVIOUS_VERSIONS)))
        .build();
    MaintenanceOptions options = MaintenanceOptions.builder().keepCheckpoints(KEEP).expire(every, Duration.ZERO)
        .build();
    ExecutorService writerThreads = Executors.newFixedThreadPool(WRITERS);
    ExecutorService roundThread = Executors.newSingleThreadExecutor();
    List<MaintenanceRound.Result> rounds = new ArrayList<>();
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config)) {
      SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committer = sink.createAggregatedCommitter();
      List<SinkWriter<Record, StagingManifest, StagingWriterState>> writers = new ArrayList<>();
      for (int w = 0; w < WRITERS; w++) {
        writers.add(sink.createWriter(new WriterContext(JOB, w, WRITERS, 0, 0)));
      }
      Object monitor = new Object();
      long[] commits = {0};
      AtomicBoolean waited = new AtomicBoolean();
      IcebergMaintenance maintenance = sink.maintenance().beforeCompactionCommit(() -> {
        if (waited.getAndSet(true)) {
          return;
        }
        synchronized (monitor) {
          long until = commits[0] + PREVIOUS_VERSIONS + 1;
          while (commits[0] < until) {
            try {
              monitor.wait();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new IllegalStateException(e);
            }
          }
        }
      });
      Future<MaintenanceRound.Result> round = null;
      long roundStartedAt = 0;
      int perWriter = 40; // both buckets get rows of every writer at every checkpoint
      long key = 0;
      long checkpoint = 0;
      // At least two rounds, however fast the writer is beside them (the first one waits for the writer).
      while (checkpoint < minCheckpoints || round != null || rounds.size() < 2) {
        checkpoint++;
        List<Future<Optional<StagingManifest>>> prepared = new ArrayList<>();
        for (int w = 0; w < WRITERS; w++) {
          SinkWriter<Record, StagingManifest, StagingWriterState> writer = writers.get(w);
          long first = key;
          long id = checkpoint;
          prepared.add(writerThreads.submit(() -> {
            for (long k = first; k < first + perWriter; k++) {
              writer.write(record(k));
            }
            return writer.prepareCommit(id);
          }));
          key += perWriter;
        }
        List<StagingManifest> manifests = new ArrayList<>();
        for (Future<Optional<StagingManifest>> manifest : prepared) {
          manifest.get().ifPresent(manifests::add);
        }
        CommitOutcome outcome = committer.commit(committer.combine(new CommitId(JOB, checkpoint), manifests));
        assertThat(outcome).as("checkpoint %s", checkpoint).isInstanceOf(CommitOutcome.Committed.class);
        synchronized (monitor) {
          commits[0]++;
          monitor.notifyAll();
        }
        if (round != null && round.isDone()) {
          rounds.add(round.get());
          round = null;
        }
        if (round == null && checkpoint % every == 0 && (checkpoint < minCheckpoints || rounds.size() < 2)) {
          roundStartedAt = checkpoint;
          round = roundThread.submit(() -> maintenance.round(options, "under-load-test"));
        }
      }
      long commitsSinceLastRound = checkpoint - roundStartedAt;
      for (var writer : writers) {
        writer.close();
      }
      committer.close();

      assertThat(rounds).hasSizeGreaterThanOrEqualTo(2).allSatisfy(r -> assertThat(r.ran()).isTrue());
      List<Compaction.Result> compactions = rounds.stream().map(MaintenanceRound.Result::compaction).toList();
      assertThat(compactions).as("%s", rounds).allSatisfy(c -> assertThat(c.outcome())
          .isEqualTo(Compaction.Outcome.COMMITTED));
      assertThat(compactions.stream().mapToInt(Compaction.Result::lostRaces).sum())
          .as("catalog attempts lost to checkpoint commits (the race this test is about)").isPositive();
      Table table = maintenance.table();
      // The last round compacted everything before its plan but the newest KEEP checkpoints, per partition into
      // one file (far below the target size); everything since is small files.
      assertThat(liveFiles(table)).as("%s", rounds)
          .isLessThanOrEqualTo((int) (commitsSinceLastRound + KEEP) * FILES_PER_CHECKPOINT + PARTITIONS);
      assertThat(TestTables.keyCounts(table)).hasSize((int) key).allSatisfy((k, count) -> assertThat(count)
          .isEqualTo(1));
    } finally {
      writerThreads.shutdownNow();
      roundThread.shutdownNow();
    }
  }

  private static Record record(long key) {
    GenericRecord record = GenericRecord.create(TestTables.SCHEMA);
    record.setField("id", key);
    record.setField("payload", "row-" + key);
    return record;
  }

  private static int liveFiles(Table table) {
    table.refresh();
    int files = 0;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask ignored : tasks) {
        files++;
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return files;
  }
}
