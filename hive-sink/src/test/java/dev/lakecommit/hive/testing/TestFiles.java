package dev.lakecommit.hive.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Best-effort cleanup of the servers' temporary directories. */
final class TestFiles {
  private static final Logger LOG = LoggerFactory.getLogger(TestFiles.class);

  private TestFiles() {}

  static void deleteRecursively(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(TestFiles::deleteQuietly);
    } catch (IOException e) {
      LOG.warn("Cannot delete temporary directory {}", dir, e);
    }
  }

  private static void deleteQuietly(Path path) {
    try {
      Files.deleteIfExists(path);
    } catch (IOException e) {
      LOG.warn("Cannot delete {}", path, e);
    }
  }
}
