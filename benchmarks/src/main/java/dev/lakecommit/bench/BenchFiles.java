package dev.lakecommit.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
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

  /** An executor that runs each task on the submitting thread, before {@code submit} returns. */
  static ExecutorService directExecutor() {
    return new AbstractExecutorService() {
      private volatile boolean shutdown;

      @Override
      public void execute(Runnable command) {
        command.run();
      }

      @Override
      public void shutdown() {
        shutdown = true;
      }

      @Override
      public List<Runnable> shutdownNow() {
        shutdown = true;
        return List.of();
      }

      @Override
      public boolean isShutdown() {
        return shutdown;
      }

      @Override
      public boolean isTerminated() {
        return shutdown;
      }

      @Override
      public boolean awaitTermination(long timeout, TimeUnit unit) {
        return true;
      }
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
