package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Moving, marking and replacing files on the local file system: every operation can be repeated. */
class TableStorageTest {
  @TempDir Path dir;
  private FileSystem fs;
  private TableStorage storage;

  @BeforeEach
  void open() throws IOException {
    fs = FileSystem.getLocal(new Configuration());
    storage = new TableStorage(fs, 4, true);
  }

  @AfterEach
  void close() {
    storage.close();
  }

  @Test
  void movesAreIdempotentAndFinishHalfDoneCopies() throws Exception {
    List<TableStorage.Move> moves = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      moves.add(move("f" + i + ".parquet", "p=" + (i % 3), 100 + i));
    }
    // File 0 was copied by a rename that stopped before deleting its source (S3A's copy-then-delete).
    Path target0 = Path.of(moves.get(0).target().toUri().getPath());
    Files.createDirectories(target0.getParent());
    Files.copy(Path.of(moves.get(0).source().toUri().getPath()), target0);
    AtomicInteger reached = new AtomicInteger();

    assertThat(storage.moveAll(moves, reached::incrementAndGet)).isEqualTo(19);
    assertThat(reached).hasValue(20);
    for (TableStorage.Move move : moves) {
      assertThat(fs.exists(move.source())).isFalse();
      assertThat(fs.getFileStatus(move.target()).getLen()).isEqualTo(move.size());
    }
    assertThat(storage.moveAll(moves, () -> {})).as("a replay moves nothing").isZero();
  }

  @Test
  void neverOverwritesADifferentFileAndReportsLostOnes() throws Exception {
    TableStorage.Move clash = move("a.parquet", "p=1", 10);
    Path target = Path.of(clash.target().toUri().getPath());
    Files.createDirectories(target.getParent());
    Files.write(target, new byte[3]);
    assertThatThrownBy(() -> storage.moveAll(List.of(clash), () -> {}))
        .isInstanceOf(FatalCommitException.class)
        .hasMessageContaining("Refusing to overwrite").hasMessageContaining("a.parquet");
    assertThat(Files.size(target)).isEqualTo(3);

    TableStorage.Move lost = move("b.parquet", "p=1", 10);
    fs.delete(lost.source(), false);
    assertThatThrownBy(() -> storage.moveAll(List.of(lost), () -> {}))
        .isInstanceOf(FatalCommitException.class).hasMessageContaining("is lost");
  }

  @Test
  void replacedLocationsLoseTheirVisibleFilesOnly() throws Exception {
    org.apache.hadoop.fs.Path usual = new org.apache.hadoop.fs.Path(dir.resolve("t/p=1").toUri());
    org.apache.hadoop.fs.Path fresh = HivePaths.overwriteDir(usual, "job", 2);
    write(usual, "old.parquet");
    write(usual, "_SUCCESS");
    write(usual, ".hidden");
    write(fresh, "new.parquet");

    assertThat(storage.deleteReplaced(usual, fresh)).isEqualTo(2);
    assertThat(fs.exists(new org.apache.hadoop.fs.Path(usual, "old.parquet"))).isFalse();
    assertThat(fs.exists(new org.apache.hadoop.fs.Path(usual, ".hidden"))).isTrue();
    assertThat(fs.exists(new org.apache.hadoop.fs.Path(fresh, "new.parquet"))).isTrue();
    assertThat(storage.deleteReplaced(usual, fresh)).as("again").isZero();

    org.apache.hadoop.fs.Path next = HivePaths.overwriteDir(usual, "job", 3);
    assertThat(storage.deleteReplaced(fresh, next)).isEqualTo(1);
    assertThat(fs.exists(fresh)).as("an earlier overwrite directory goes whole").isFalse();

    storage.writeSuccessFiles(Set.of(next));
    assertThat(fs.exists(new org.apache.hadoop.fs.Path(next, "_SUCCESS"))).isTrue();
  }

  private TableStorage.Move move(String name, String partition, int size) throws IOException {
    Path source = dir.resolve("staging").resolve(name);
    Files.createDirectories(source.getParent());
    Files.write(source, new byte[size]);
    org.apache.hadoop.fs.Path target =
        new org.apache.hadoop.fs.Path(dir.resolve("table").resolve(partition).resolve(name).toUri());
    return new TableStorage.Move(new org.apache.hadoop.fs.Path(source.toUri()), target, size);
  }

  /**
   * After a commit its checkpoint's staging directory is cleaned, but a Flink writer may have staged a file of the
   * next commit under it (files are named after a provisional checkpoint id): only empty directories go, bottom-up,
   * and the staged file survives, with its parents.
   */
  @Test
  void theCleanUpAfterACommitDeletesEmptyDirectoriesOnlyNeverAStagedFile() throws Exception {
    org.apache.hadoop.fs.Path checkpoint = new org.apache.hadoop.fs.Path(dir.resolve("staging/job/ckpt-7").toUri());
    fs.mkdirs(new org.apache.hadoop.fs.Path(checkpoint, "p=1"));
    fs.mkdirs(new org.apache.hadoop.fs.Path(checkpoint, "p=2/sub"));
    org.apache.hadoop.fs.Path next = new org.apache.hadoop.fs.Path(checkpoint, "p=3");
    write(next, "job-8-e1-0-0-0.parquet");

    storage.deleteEmptyDirectoriesQuietly(checkpoint);

    assertThat(fs.exists(new org.apache.hadoop.fs.Path(next, "job-8-e1-0-0-0.parquet")))
        .as("the next commit's staged file").isTrue();
    assertThat(fs.exists(new org.apache.hadoop.fs.Path(checkpoint, "p=1"))).isFalse();
    assertThat(fs.exists(new org.apache.hadoop.fs.Path(checkpoint, "p=2"))).isFalse();

    fs.delete(new org.apache.hadoop.fs.Path(next, "job-8-e1-0-0-0.parquet"), false);
    storage.deleteEmptyDirectoriesQuietly(checkpoint);
    assertThat(fs.exists(checkpoint)).as("emptied, the directory goes too").isFalse();
    storage.deleteEmptyDirectoriesQuietly(checkpoint);   // gone already: nothing to do, nothing thrown
  }

  private void write(org.apache.hadoop.fs.Path dir, String name) throws IOException {
    fs.create(new org.apache.hadoop.fs.Path(dir, name)).close();
  }
}
