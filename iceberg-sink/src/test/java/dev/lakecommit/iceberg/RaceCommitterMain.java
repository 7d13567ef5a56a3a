package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.testing.ChildJvm;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;

/**
 * A second committer process for two-process races: commits one checkpoint of the test table and prints its
 * outcome. Before its first catalog attempt it says it is ready and waits for the other process to say go, so
 * both attempt from the same, stale table state.
 *
 * <p>Arguments: catalog-properties-file, checkpoint, first key, end key, barrier directory.
 */
public final class RaceCommitterMain {
  private RaceCommitterMain() {}

  public static void main(String[] args) throws Exception {
    Catalog catalog = catalogFrom(Path.of(args[0]));
    long checkpoint = Long.parseLong(args[1]);
    long from = Long.parseLong(args[2]);
    long to = Long.parseLong(args[3]);
    Path barrier = Path.of(args[4]);

    Table table = catalog.loadTable(TestTables.IDENT);
    CommitCounters counters = new CommitCounters();
    TableCommitter committer = new TableCommitter(catalog, TestTables.IDENT, CommitMode.APPEND, null, null, counters)
        .attemptHook(attempt -> {
          if (attempt == 1) {
            arrive(barrier);
          }
        });
    CommitOutcome outcome = committer.commit(TestTables.changes(checkpoint, List.of(TestTables.dataFile(table, from, to))));
    System.out.println("OUTCOME " + outcome.getClass().getSimpleName() + " CONFLICTS " + counters.conflicts());
    System.exit(0);
  }

  /** Writes the fixture's catalog properties to {@code base/catalog.properties}, for a child process. */
  static Path writeCatalog(CatalogFixture fixture, Path base) throws IOException {
    Properties properties = new Properties();
    properties.putAll(fixture.properties());
    properties.put("catalog-name", fixture.name());
    Path file = base.resolve("catalog.properties");
    try (java.io.OutputStream out = Files.newOutputStream(file)) {
      properties.store(out, null);
    }
    return file;
  }

  /** A new catalog from a file that {@link #writeCatalog} wrote. */
  static Catalog catalogFrom(Path file) throws IOException {
    Properties stored = new Properties();
    try (InputStream in = new FileInputStream(file.toFile())) {
      stored.load(in);
    }
    Map<String, String> properties = new HashMap<>();
    stored.stringPropertyNames().forEach(k -> properties.put(k, stored.getProperty(k)));
    return org.apache.iceberg.CatalogUtil.buildIcebergCatalog(properties.remove("catalog-name"), properties,
        new org.apache.hadoop.conf.Configuration());
  }

  /** Starts {@code main} in a child JVM on this test classpath, its output and errors merged. */
  static Process startJava(Class<?> main, String... args) throws IOException {
    List<String> command = ChildJvm.java("384m");
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
    command.addAll(List.of(args));
    return new ProcessBuilder(command).redirectErrorStream(true).start();
  }

  /** Says "ready" and waits (bounded) for "go". */
  static void arrive(Path barrier) {
    try {
      Files.createFile(barrier.resolve("child-ready"));
      awaitFile(barrier.resolve("go"));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** Polls for a file with a deadline: the other process is outside this JVM, so nothing else can signal. */
  static void awaitFile(Path file) {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!Files.exists(file)) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the other racing process never wrote " + file);
      }
      Thread.onSpinWait();
    }
  }
}
