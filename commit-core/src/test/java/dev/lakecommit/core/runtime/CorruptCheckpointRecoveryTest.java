package dev.lakecommit.core.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.testing.Audit;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.DirectoryTable;
import dev.lakecommit.core.testing.DirectoryTableSink;
import dev.lakecommit.core.testing.RangeSource;
import dev.lakecommit.core.testing.SimulatedCrash;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A corrupt checkpoint file is never read as a checkpoint, and never silently replaced by a fresh start. */
class CorruptCheckpointRecoveryTest {
  private static final JobId JOB = JobId.of("corrupt-job");
  private static final long ROWS = 300;

  @TempDir Path dir;

  private DirectoryTable table() {
    return new DirectoryTable(dir.resolve("table"));
  }

  private StandaloneJob<Long> job(CrashSchedule crashes) throws Exception {
    return StandaloneJob.builder(new DirectoryTableSink(table(), crashes, 10), new RangeSource(ROWS))
        .jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints"))))
        .parallelism(2)
        .checkpointEveryRecords(50)
        .listener(new JobListener() {
          @Override
          public void onCheckpointPersisted(long checkpointId) {
            crashes.reach(CrashSchedule.PERSISTED, checkpointId);
          }
        })
        .build();
  }

  /** Runs until checkpoint 3 is durable but not committed, then corrupts its file. */
  private Path crashAfterPersistingThirdCheckpointAndCorruptIt() throws Exception {
    CrashSchedule crashes = CrashSchedule.at(CrashSchedule.PERSISTED, 3);
    crashes.newLife();
    StandaloneJob<Long> first = job(crashes);
    assertThatThrownBy(first::run).isInstanceOf(SimulatedCrash.class);
    Path file = dir.resolve("checkpoints").resolve(CheckpointStore.checkpointName(3, 1)); // epoch 1: the first run
    byte[] bytes = Files.readAllBytes(file);
    Files.write(file, java.util.Arrays.copyOf(bytes, bytes.length - 5));
    return file;
  }

  @Test
  void fallsBackToThePreviousCheckpointWhenTheCorruptOneWasNeverCommitted() throws Exception {
    crashAfterPersistingThirdCheckpointAndCorruptIt();
    assertThat(table().watermark(JOB)).hasValue(2);

    JobResult result = job(CrashSchedule.none()).run();

    assertThat(result.restoredCheckpointId()).isEqualTo(2);
    assertThat(Audit.of(ROWS, table().read().keys()).exact()).isTrue();
    // ids never reuse the corrupt checkpoint's id
    assertThat(table().entries()).extracting(DirectoryTable.Entry::checkpointId).doesNotContain(3L);
  }

  @Test
  void failsNamingTheFileWhenTheCorruptCheckpointIsCommitted() throws Exception {
    Path file = crashAfterPersistingThirdCheckpointAndCorruptIt();
    // Another process committed checkpoint 3 before the file was damaged.
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints")));
    CheckpointRecord two = store.load(JOB, 2);
    assertThat(two.pendingCommits()).isNotEmpty();
    new DirectoryTableSink(table(), CrashSchedule.none(), 10).createAggregatedCommitter()
        .commit(new dev.lakecommit.core.testing.RefManifest(JOB, 3, -1, java.util.List.of(), 0));

    assertThatThrownBy(() -> job(CrashSchedule.none()).run())
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining(file.toString())
        .hasMessageContaining("Checkpoint 3 is committed in the target");
  }

  @Test
  void failsWhenNoCheckpointIsReadable() throws Exception {
    job(CrashSchedule.none()).run();
    Path checkpoints = dir.resolve("checkpoints");
    try (var files = Files.list(checkpoints)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".ckpt")).toList()) {
        Files.write(file, new byte[] {0, 1, 2});
      }
    }

    assertThatThrownBy(() -> job(CrashSchedule.none()).run())
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining(checkpoints.toString());
  }
}
