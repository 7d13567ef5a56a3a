package dev.lakecommit.ingest.cli;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where Iceberg's S3FileIO buffers uploads on local disk ({@code s3.staging-dir}): one directory per process under
 * the temp directory, so that what a killed process left ({@code s3fileio-*.tmp}) can be told from what a live one
 * writes, and removed by the next run.
 */
final class S3Staging {
  static final String PROPERTY = "s3.staging-dir";
  private static final Logger LOG = LoggerFactory.getLogger(S3Staging.class);

  private S3Staging() {}

  /** Names the parent of every process's directory instead of {@code <tmp>/lakecommit-s3}. */
  static final String ROOT_PROPERTY = "lakecommit.s3.buffer-root";

  /**
   * The parent of every process's directory: {@code <tmp>/lakecommit-s3}, or the system property
   * {@value #ROOT_PROPERTY} (processes that share it sweep each other's leftovers).
   */
  static Path root() {
    String root = System.getProperty(ROOT_PROPERTY);
    return root != null ? Path.of(root) : Path.of(System.getProperty("java.io.tmpdir"), "lakecommit-s3");
  }

  /** This process's directory. */
  static Path ofThisProcess() {
    return root().resolve(Long.toString(ProcessHandle.current().pid()));
  }

  /** The files ({@code s3fileio-*.tmp}) in the directories of processes that no longer run: killed runs'. */
  static java.util.List<Path> deadProcessFiles() {
    java.util.List<Path> files = new java.util.ArrayList<>();
    for (Path dir : deadProcessDirs()) {
      try (Stream<Path> walk = Files.walk(dir)) {
        walk.filter(Files::isRegularFile).sorted().forEach(files::add);
      } catch (IOException | java.io.UncheckedIOException e) {
        LOG.debug("Could not list {}: {}", dir, e.toString());
      }
    }
    return files;
  }

  private static java.util.List<Path> deadProcessDirs() {
    Path root = root();
    java.util.List<Path> dead = new java.util.ArrayList<>();
    if (!Files.isDirectory(root)) {
      return dead;
    }
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root)) {
      for (Path dir : dirs) {
        long pid;
        try {
          pid = Long.parseLong(dir.getFileName().toString());
        } catch (NumberFormatException e) {
          continue;
        }
        if (pid != ProcessHandle.current().pid() && ProcessHandle.of(pid).isEmpty()) {
          dead.add(dir);
        }
      }
    } catch (IOException e) {
      LOG.debug("Could not list {}: {}", root, e.toString());
    }
    return dead;
  }

  /**
   * Deletes the directories of processes that no longer run (best effort).
   *
   * @return the number of files deleted
   */
  static long sweepDeadProcesses() {
    Path root = root();
    long deleted = 0;
    for (Path dir : deadProcessDirs()) {
      try {
        deleted += deleteTree(dir);
      } catch (IOException | java.io.UncheckedIOException e) {
        LOG.debug("Could not sweep {}: {}", dir, e.toString());
      }
    }
    if (deleted > 0) {
      LOG.info("Deleted {} upload buffer file(s) that killed runs left under {}", deleted, root);
    }
    return deleted;
  }

  private static long deleteTree(Path dir) throws IOException {
    long files = 0;
    try (Stream<Path> walk = Files.walk(dir)) {
      for (Path path : walk.sorted(Comparator.reverseOrder()).toList()) {
        files += Files.isRegularFile(path) ? 1 : 0;
        Files.deleteIfExists(path);
      }
    }
    return files;
  }
}
