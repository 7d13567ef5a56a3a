package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.iceberg.ForwardingTableOperations;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two {@code ingest --add-new-columns} runs adding different columns to one table at once: run B plans its column
 * when it starts, and run A adds its own column (the same field id) in between B's staging and B's first data
 * commit. Both runs end with exit 0, and the table holds every row once with its value in its column.
 */
class ConcurrentColumnsIngestTest {
  /** Runs once, on the thread of the first catalog commit that adds a snapshot of job {@code b}. */
  private static final AtomicReference<Runnable> BEFORE_B_COMMITS = new AtomicReference<>();

  @TempDir Path dir;

  @AfterEach
  void clear() {
    BEFORE_B_COMMITS.set(null);
  }

  /** The embedded JDBC catalog, whose table operations run {@link #BEFORE_B_COMMITS} before job b's first commit. */
  public static final class InterleavingCatalog extends JdbcCatalog {
    @Override
    protected TableOperations newTableOps(TableIdentifier identifier) {
      return new ForwardingTableOperations(super.newTableOps(identifier)) {
        @Override
        public void commit(TableMetadata base, TableMetadata metadata) {
          Snapshot snapshot = metadata.currentSnapshot();
          if (snapshot != null && (base == null || base.currentSnapshot() == null
              || base.currentSnapshot().snapshotId() != snapshot.snapshotId())
              && "b".equals(snapshot.summary().get(CommitId.JOB_ID_KEY))) {
            Runnable first = BEFORE_B_COMMITS.getAndSet(null);
            if (first != null) {
              first.run();
            }
          }
          super.commit(base, metadata);
        }
      };
    }
  }

  private List<String> ingest(Path input, String job, boolean interleaving) {
    Path wh = dir.resolve("wh").toAbsolutePath();
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString(), "--table", "drift.events",
        "--job-id", job, "--add-new-columns", "--checkpoint-dir", dir.resolve("ckpt-" + job).toString()));
    if (interleaving) {
      args.addAll(List.of("-C", "catalog-impl=" + InterleavingCatalog.class.getName(), "-C",
          "uri=jdbc:sqlite:" + wh.resolve("catalog.db"), "-C", "warehouse=" + wh.toUri(), "-C",
          "jdbc.schema-version=V1"));
    } else {
      args.addAll(List.of("--warehouse", wh.toString()));
    }
    return args;
  }

  private Table table() {
    Path wh = dir.resolve("wh").toAbsolutePath();
    return CatalogUtil.buildIcebergCatalog("lakecommit", Map.of("type", "jdbc",
        "uri", "jdbc:sqlite:" + wh.resolve("catalog.db"), "warehouse", wh.toUri().toString(),
        "jdbc.schema-version", "V1"), new org.apache.hadoop.conf.Configuration())
        .loadTable(TableIdentifier.of("drift", "events"));
  }

  @Test
  void twoRunsAddingDifferentColumnsAtOnceBothEndWithEveryRowAndValue() throws Exception {
    Path day1 = SchemaDriftTest.jsonLines(dir.resolve("day1/a.jsonl"), 0, 1_000, i -> "{\"id\": " + i + "}");
    CliRun first = CliRun.of(ingest(day1, "day1", false).toArray(String[]::new));
    assertThat(first.exitCode()).as(first.toString()).isZero();
    Path inA = SchemaDriftTest.jsonLines(dir.resolve("a/a.jsonl"), 1_000, 3_000,
        i -> "{\"id\": " + i + ", \"x\": \"x" + i + "\"}");
    Path inB = SchemaDriftTest.jsonLines(dir.resolve("b/b.jsonl"), 3_000, 5_000,
        i -> "{\"id\": " + i + ", \"y\": " + (i * 7) + "}");
    AtomicReference<CliRun> runA = new AtomicReference<>();
    BEFORE_B_COMMITS.set(() -> runA.set(CliRun.of(ingest(inA, "a", false).toArray(String[]::new))));

    CliRun runB = CliRun.of(ingest(inB, "b", true).toArray(String[]::new));

    assertThat(runA.get()).as("run A ran inside run B's first commit").isNotNull();
    assertThat(runA.get().exitCode()).as(runA.get().toString()).isZero();
    assertThat(runB.exitCode()).as(runB.toString()).isZero();
    Table table = table();
    assertThat(table.schema().findField("x").fieldId()).isNotEqualTo(table.schema().findField("y").fieldId());
    List<String> filesOfB = new ArrayList<>();
    for (Snapshot snapshot : table.snapshots()) {
      if ("b".equals(snapshot.summary().get(CommitId.JOB_ID_KEY))) {
        snapshot.addedDataFiles(table.io()).forEach(file -> filesOfB.add(file.location()));
      }
    }
    assertThat(filesOfB).as("B's files were written with the id A's column took, and rewritten").isNotEmpty()
        .allMatch(path -> path.matches(".*-r\\d+-[0-9a-f]{12}\\.parquet"));
    Map<Long, Object[]> rows = new HashMap<>();
    List<Long> duplicates = new ArrayList<>();
    try (CloseableIterable<Record> read = IcebergGenerics.read(table).build()) {
      for (Record row : read) {
        if (rows.put((Long) row.getField("id"), new Object[] {row.getField("x"), row.getField("y")}) != null) {
          duplicates.add((Long) row.getField("id"));
        }
      }
    }
    assertThat(duplicates).isEmpty();
    assertThat(rows).hasSize(5_000);
    List<String> wrong = new ArrayList<>();
    rows.forEach((id, values) -> {
      Object x = id >= 1_000 && id < 3_000 ? "x" + id : null;
      Object y = id >= 3_000 ? id * 7 : null;
      if (!java.util.Objects.equals(values[0], x) || !java.util.Objects.equals(values[1], y)) {
        wrong.add(id + ": x=" + values[0] + ", y=" + values[1]);
      }
    });
    assertThat(wrong).as("rows without their values").isEmpty();
  }
}
