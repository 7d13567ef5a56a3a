package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.CheckpointRecord;
import dev.lakecommit.core.runtime.CheckpointStore;
import java.io.FileNotFoundException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.List;
import java.util.TreeMap;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.Test;

/** {@link FileIOBlobStore} on one storage, directly and as the store of commit-core's checkpoint store. */
abstract class FileIOBlobStoreContract {

  protected abstract FileIO io();

  /** A fresh directory of {@link #io()}. */
  protected abstract String newDirectory();

  @Test
  void publishesReadsListsAndDeletesWholeObjects() throws Exception {
    FileIOBlobStore store = new FileIOBlobStore(io(), newDirectory());
    assertThat(store.list()).isEmpty();
    store.publish("a", "alpha".getBytes(StandardCharsets.UTF_8));
    store.publish("b", new byte[0]);
    assertThat(store.read("a")).asString(StandardCharsets.UTF_8).isEqualTo("alpha");
    assertThat(store.read("b")).isEmpty();
    assertThat(store.list()).containsExactlyInAnyOrder("a", "b");
    assertThatThrownBy(() -> store.publish("a", new byte[1]))
        .isInstanceOf(FileAlreadyExistsException.class);
    assertThat(store.read("a")).asString(StandardCharsets.UTF_8).isEqualTo("alpha");
    store.delete("a");
    store.delete("a");
    assertThat(store.list()).containsExactly("b");
    assertThatThrownBy(() -> store.read("a")).isInstanceOf(FileNotFoundException.class);
    assertThatThrownBy(() -> store.publish("x/y", new byte[0])).hasMessageContaining("Invalid blob name: 'x/y'");
  }

  @Test
  void holdsCheckpointsOfTheCheckpointStore() throws Exception {
    String directory = newDirectory();
    CheckpointStore checkpoints = new CheckpointStore(new FileIOBlobStore(io(), directory), 2);
    assertThat(checkpoints.startAttempt()).isZero();
    assertThat(checkpoints.startAttempt()).isEqualTo(1);
    JobId job = JobId.of("blob-job");
    for (long id = 1; id <= 3; id++) {
      checkpoints.persist(
          new CheckpointRecord(job, id, 1, id * 10, new byte[] {(byte) id}, List.of(new byte[] {1, 2}),
              new TreeMap<>()));
    }
    assertThat(checkpoints.checkpointIds()).containsExactly(3L, 2L);
    CheckpointStore reopened = new CheckpointStore(new FileIOBlobStore(io(), directory), 2);
    assertThat(reopened.load(job, 3).recordCount()).isEqualTo(30);
    assertThat(reopened.startAttempt()).isEqualTo(2);
  }
}
