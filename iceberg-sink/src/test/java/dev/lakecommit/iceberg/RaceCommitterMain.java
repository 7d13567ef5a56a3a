package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitOutcome;
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
    Properties file = new Properties();
    try (InputStream in = new FileInputStream(args[0])) {
      file.load(in);
    }
    Map<String, String> properties = new HashMap<>();
    file.stringPropertyNames().forEach(k -> properties.put(k, file.getProperty(k)));
    long checkpoint = Long.parseLong(args[1]);
    long from = Long.parseLong(args[2]);
    long to = Long.parseLong(args[3]);
    Path barrier = Path.of(args[4]);

    Catalog catalog = org.apache.iceberg.CatalogUtil.buildIcebergCatalog(properties.remove("catalog-name"),
        properties, new org.apache.hadoop.conf.Configuration());
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
