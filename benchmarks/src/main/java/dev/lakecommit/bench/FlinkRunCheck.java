package dev.lakecommit.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/**
 * The check after each Flink job of {@link FlinkSinkBenchmark}: reads the table back and compares its ids with the
 * source ids {@code 1..rows}. Counts, never throws on a mismatch: a lossy run must show in the output, not end
 * the trial.
 */
final class FlinkRunCheck {
  private FlinkRunCheck() {}

  /** One job's result: rows read back, losses, duplicates, committed snapshots, submit → first commit. */
  record Outcome(String variant, String table, long expected, long readBack, long losses, long duplicates,
      int snapshots, long firstCommitMillis) {
    @Override
    public String toString() {
      return String.format("[flink-check] %s %s: expected %d rows, read back %d, losses %d, duplicates %d, "
              + "%d committed snapshots, first commit %d ms after submit%s",
          variant, table, expected, readBack, losses, duplicates, snapshots, firstCommitMillis,
          losses == 0 && duplicates == 0 && readBack == expected ? "" : "  <-- NOT EXACTLY ONCE");
    }
  }

  static Outcome check(String variant, Table table, long rows, long submittedMillis) {
    BitSet seen = new BitSet((int) Math.min(Integer.MAX_VALUE, rows + 1));
    long readBack = 0;
    long duplicates = 0;
    long outOfRange = 0;
    try (CloseableIterable<Record> all = IcebergGenerics.read(table).select("id").build()) {
      for (Record record : all) {
        readBack++;
        long id = (Long) record.getField("id");
        if (id < 1 || id > rows) {
          outOfRange++;
        } else if (seen.get((int) id)) {
          duplicates++;
        } else {
          seen.set((int) id);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read table " + table.name() + " back", e);
    }
    long losses = rows - seen.cardinality();
    int snapshots = 0;
    long firstCommit = Long.MAX_VALUE;
    for (Snapshot snapshot : table.snapshots()) {
      snapshots++;
      firstCommit = Math.min(firstCommit, snapshot.timestampMillis());
    }
    long firstCommitMillis = snapshots == 0 ? -1 : firstCommit - submittedMillis;
    return new Outcome(variant, table.name(), rows, readBack, losses, duplicates + outOfRange, snapshots,
        firstCommitMillis);
  }

  /** Totals per variant over a trial. */
  static String summary(List<Outcome> outcomes) {
    List<String> lines = new ArrayList<>();
    outcomes.stream().map(Outcome::variant).distinct().forEach(variant -> {
      List<Outcome> runs = outcomes.stream().filter(o -> o.variant().equals(variant)).toList();
      long losses = runs.stream().mapToLong(Outcome::losses).sum();
      long duplicates = runs.stream().mapToLong(Outcome::duplicates).sum();
      double snapshots = runs.stream().mapToInt(Outcome::snapshots).average().orElse(0);
      lines.add(String.format("[flink-check] %s: %d jobs, total losses %d, total duplicates %d, "
          + "%.1f committed snapshots per job", variant, runs.size(), losses, duplicates, snapshots));
    });
    return String.join(System.lineSeparator(), lines);
  }
}
