package dev.lakecommit.core.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointStoreTest {
  private static final JobId JOB = JobId.of("job-1");

  @TempDir Path dir;

  static CheckpointRecord record(long id) {
    TreeMap<Long, byte[]> pending = new TreeMap<>();
    pending.put(id - 1, new byte[] {1, 2, 3});
    pending.put(id, new byte[] {4, 5});
    return new CheckpointRecord(JOB, id, 2, 100 * id, new byte[] {9, 9, (byte) id},
        List.of(new byte[] {7}, new byte[0]), pending);
  }

  @Test
  void persistsAndLoadsCheckpoints() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir), 3);
    store.persist(record(1));
    store.persist(record(2));

    assertThat(store.checkpointIds()).containsExactly(2L, 1L);
    assertThat(store.load(JOB, 2)).isEqualTo(record(2));
    assertThat(store.load(JOB, 1)).isEqualTo(record(1));
  }

  @Test
  void keepsOnlyTheNewestCheckpoints() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir), 2);
    for (long id = 1; id <= 5; id++) {
      store.persist(record(id));
    }
    assertThat(store.checkpointIds()).containsExactly(5L, 4L);
  }

  @Test
  void neverOverwritesACheckpoint() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir));
    store.persist(record(1));
    assertThatThrownBy(() -> store.persist(record(1)))
        .isInstanceOf(java.nio.file.FileAlreadyExistsException.class);
    assertThat(store.load(JOB, 1)).isEqualTo(record(1));
  }

  @Test
  void countsAttempts() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir));
    assertThat(store.startAttempt()).isZero();
    assertThat(store.startAttempt()).isOne();
    assertThat(new CheckpointStore(new LocalBlobStore(dir)).startAttempt()).isEqualTo(2);
  }

  @Test
  void detectsTruncatedFiles() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir));
    store.persist(record(1));
    Path file = dir.resolve(CheckpointStore.checkpointName(1, 2));
    byte[] bytes = Files.readAllBytes(file);
    for (int length : new int[] {0, 3, 11, 12, bytes.length / 2, bytes.length - 1}) {
      Files.write(file, Arrays.copyOf(bytes, length));
      assertThatThrownBy(() -> store.load(JOB, 1))
          .as("truncated to %s bytes", length)
          .isInstanceOf(CorruptCheckpointException.class)
          .hasMessageContaining(file.toString());
    }
  }

  @Test
  void detectsEveryFlippedByte() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir));
    store.persist(record(1));
    Path file = dir.resolve(CheckpointStore.checkpointName(1, 2));
    byte[] bytes = Files.readAllBytes(file);
    for (int i = 0; i < bytes.length; i++) {
      byte[] corrupt = bytes.clone();
      corrupt[i] ^= 0x10;
      Files.write(file, corrupt);
      assertThatThrownBy(() -> store.load(JOB, 1))
          .as("byte %s flipped", i)
          .isInstanceOf(CorruptCheckpointException.class)
          .hasMessageContaining(CheckpointStore.checkpointName(1, 2));
    }
  }

  @Test
  void refusesACheckpointOfAnotherJob() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir));
    store.persist(record(1));
    assertThatThrownBy(() -> store.load(JobId.of("other"), 1))
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining("belongs to job job-1")
        .hasMessageContaining("is its checkpoint 1), not to job other");
  }

  @Test
  void ignoresUnpublishedTemporaryFiles() throws IOException {
    Files.write(dir.resolve(".tmp-checkpoint-00000000000000000007.ckpt-1-2"), new byte[] {1});
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir));
    assertThat(store.checkpointIds()).isEmpty();
  }

  @Test
  void checksArguments() {
    assertThatThrownBy(() -> new CheckpointStore(new LocalBlobStore(dir), 1))
        .hasMessage("Invalid checkpoint retention: 1 (must be >= 2)");
  }

  private static CheckpointRecord record(long id, int epoch) {
    CheckpointRecord r = record(id);
    return new CheckpointRecord(JOB, id, epoch, r.recordCount(), r.sourcePosition(), r.writerStates(),
        r.pendingCommits());
  }

  @Test
  void checkpointsOfTwoRunsWithTheSameIdLiveSideBySideNewestEpochFirst() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir));
    store.persist(record(4, 1));
    store.persist(record(4, 2));
    store.persist(record(3, 1));

    assertThat(store.checkpoints()).extracting(CheckpointStore.Stored::checkpointId, CheckpointStore.Stored::epoch)
        .containsExactly(org.assertj.core.groups.Tuple.tuple(4L, 2L), org.assertj.core.groups.Tuple.tuple(4L, 1L),
            org.assertj.core.groups.Tuple.tuple(3L, 1L));
    assertThat(store.checkpointIds()).containsExactly(4L, 3L);
    assertThat(store.load(JOB, 4).attempt()).as("the newest epoch's file of an id").isEqualTo(2);
  }

  @Test
  void aCheckpointAnOlderRunPersistedAboveWhereANewerRunStartedIsFencedOut() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir));
    store.persist(record(2, 1));
    store.markEpochStart(2, 2, ""); // run 2 started from checkpoint 2 ...
    store.persist(record(3, 1)); // ... while run 1 went on: its checkpoint 3 can never be committed
    store.persist(record(3, 2));

    var starts = store.epochStarts("");
    assertThat(starts).containsEntry(2L, 2L);
    List<CheckpointStore.Stored> stored = store.checkpoints();
    assertThat(stored).filteredOn(s -> CheckpointStore.fencedOut(s, starts))
        .extracting(CheckpointStore.Stored::checkpointId, CheckpointStore.Stored::epoch)
        .containsExactly(org.assertj.core.groups.Tuple.tuple(3L, 1L));
    assertThat(stored).filteredOn(s -> !CheckpointStore.fencedOut(s, starts)).hasSize(2);
  }

  @Test
  void aRunPrunesItsOwnOldCheckpointsAndOlderRunsBelowThemButNeverANewerRunsFiles() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir), 2);
    store.persist(record(1, 1));
    store.persist(record(2, 1));
    store.persist(record(9, 3)); // a newer run
    store.persist(record(3, 2));
    store.persist(record(4, 2));
    store.persist(record(5, 2));

    assertThat(store.checkpoints()).extracting(CheckpointStore.Stored::checkpointId, CheckpointStore.Stored::epoch)
        .containsExactly(org.assertj.core.groups.Tuple.tuple(9L, 3L), org.assertj.core.groups.Tuple.tuple(5L, 2L),
            org.assertj.core.groups.Tuple.tuple(4L, 2L));
  }

  @Test
  void aFencedRunDoesNotPruneOlderRunsCheckpoints() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir), 2);
    store.persist(record(2, 1));
    store.markEpochStart(3, 2, ""); // a newer run started from checkpoint 2 of run 1
    store.persist(record(3, 2));
    store.persist(record(4, 2));
    store.persist(record(5, 2));

    assertThat(store.checkpoints()).extracting(CheckpointStore.Stored::checkpointId)
        .as("run 2 keeps its newest two and leaves run 1's checkpoint the newer run started from")
        .containsExactly(5L, 4L, 2L);
  }

  @Test
  void readsCheckpointFilesOfEarlierVersionsWithoutEpochInTheirName() throws IOException {
    Files.write(dir.resolve("checkpoint-00000000000000000007.ckpt"), CheckpointFormat.encode(record(7), 1));
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir));

    assertThat(store.checkpoints()).extracting(CheckpointStore.Stored::epoch).containsExactly(-1L);
    assertThat(store.load(JOB, 7)).isEqualTo(record(7));
  }

  @Test
  void epochMarkersOfARecreatedTableAreReplacedAndIgnored() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir));
    store.markEpochStart(1, 0, "table-a");
    store.markEpochStart(5, 3, "table-a");
    store.markEpochStart(1, 4, "table-b"); // the table dropped and created again: its epochs start over

    assertThat(store.epochStarts("table-b")).containsExactly(java.util.Map.entry(1L, 4L));
    assertThat(store.epochStarts("table-a")).containsExactly(java.util.Map.entry(5L, 3L));
    assertThatThrownBy(() -> store.markEpochStart(1, 4, "table-b")).hasMessageContaining("started twice");
  }
}
