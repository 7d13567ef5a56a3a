package dev.lakecommit.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/** Setup and teardown helpers shared by the benchmarks; nothing here runs inside a measurement. */
final class BenchFiles {
  private BenchFiles() {}

  /** Deletes {@code dir} and everything under it; nothing if it does not exist. */
  static void deleteRecursively(Path dir) throws IOException {
    if (dir == null || !Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(BenchFiles::delete);
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  /** Daemon threads named {@code <prefix>-<n>}, so a failed trial cannot keep the forked JVM alive. */
  static ThreadFactory daemonThreads(String prefix) {
    AtomicInteger count = new AtomicInteger();
    return runnable -> {
      Thread thread = new Thread(runnable, prefix + "-" + count.getAndIncrement());
      thread.setDaemon(true);
      return thread;
    };
  }

  private static void delete(Path path) {
    try {
      Files.delete(path);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
