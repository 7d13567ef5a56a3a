package dev.lakecommit.iceberg;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.apache.hadoop.fs.LocalFileSystem;

/**
 * Hadoop's local file system, except that a rename onto a table version ({@code v<n>.metadata.json}) first waits,
 * up to 150 ms, for another process to be renaming onto the same version — after Iceberg checked that the version
 * does not exist yet and before the rename that commits it. Where the commit lock does not keep processes apart,
 * two that meet there both rename onto the version, and the second replaces the first's commit; a race of two
 * commits seldom lines up so exactly by itself, but given weeks of commits it does.
 *
 * <p>Set as {@code fs.file.impl} (with {@code fs.file.impl.disable.cache}); {@value #MEET_DIR} names the directory
 * where processes say where they are, {@value #WHO} this process.
 */
public final class MeetingLocalFileSystem extends LocalFileSystem {
  static final String MEET_DIR = "lakecommit.test.meet-dir";
  static final String WHO = "lakecommit.test.meet-who";

  @Override
  public boolean rename(org.apache.hadoop.fs.Path src, org.apache.hadoop.fs.Path dst) throws IOException {
    String name = dst.getName();
    if (name.matches("v\\d+\\.metadata\\.json") && getConf().get(MEET_DIR) != null) {
      meet(Path.of(getConf().get(MEET_DIR)), name, getConf().get(WHO));
    }
    return super.rename(src, dst);
  }

  private static void meet(Path dir, String version, String who) throws IOException {
    try {
      Files.createFile(dir.resolve("at-" + version + "-" + who));
    } catch (FileAlreadyExistsException e) {
      return; // this process's earlier attempt at the version: no waiting again
    }
    long deadline = System.nanoTime() + 150_000_000L;
    while (System.nanoTime() < deadline) {
      try (Stream<Path> files = Files.list(dir)) {
        if (files.map(f -> f.getFileName().toString())
            .anyMatch(n -> n.startsWith("at-" + version + "-") && !n.equals("at-" + version + "-" + who))) {
          return;
        }
      }
      Thread.onSpinWait();
    }
  }
}
