package dev.lakecommit.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.stream.LongStream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Types;

/**
 * The check after each Flink job of {@link FlinkSinkBenchmark}: reads the table back and compares its ids with the
 * source ids {@code 1..rows}, and measures each snapshot's commit latency from the {@code made_at_ms} column
 * bounds of the files it added. Counts, never throws on a mismatch: a lossy run must show in the output, not end
 * the trial.
 */
final class FlinkRunCheck {
  /** Field id of the column holding the wall-clock time each row was made. */
  static final int MADE_AT_FIELD_ID = 3;

  private FlinkRunCheck() {}

  /**
   * One job's result: rows read back, losses, duplicates, committed snapshots, submit → first commit, and per
   * snapshot the commit latency: its commit time minus its newest row's time, and minus its oldest row's time.
   */
  record Outcome(String variant, String table, long expected, long readBack, long losses, long duplicates,
      int snapshots, long firstCommitMillis, List<Long> newestRowLags, List<Long> oldestRowLags) {
    @Override
    public String toString() {
      return String.format("[flink-check] %s %s: expected %d rows, read back %d, losses %d, duplicates %d, "
              + "%d committed snapshots, first commit %d ms after submit, commit latency (ms) from the newest "
              + "row %s, from the oldest row %s%s",
          variant, table, expected, readBack, losses, duplicates, snapshots, firstCommitMillis, newestRowLags,
          oldestRowLags,
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
    List<Long> newestLags = new ArrayList<>();
    List<Long> oldestLags = new ArrayList<>();
    for (Snapshot snapshot : table.snapshots()) {
      snapshots++;
      firstCommit = Math.min(firstCommit, snapshot.timestampMillis());
      long oldest = Long.MAX_VALUE;
      long newest = Long.MIN_VALUE;
      for (DataFile file : snapshot.addedDataFiles(table.io())) {
        oldest = Math.min(oldest, bound(file.lowerBounds() == null ? null : file.lowerBounds().get(MADE_AT_FIELD_ID),
            Long.MAX_VALUE));
        newest = Math.max(newest, bound(file.upperBounds() == null ? null : file.upperBounds().get(MADE_AT_FIELD_ID),
            Long.MIN_VALUE));
      }
      if (oldest != Long.MAX_VALUE && newest != Long.MIN_VALUE) {
        newestLags.add(snapshot.timestampMillis() - newest);
        oldestLags.add(snapshot.timestampMillis() - oldest);
      }
    }
    long firstCommitMillis = snapshots == 0 ? -1 : firstCommit - submittedMillis;
    return new Outcome(variant, table.name(), rows, readBack, losses, duplicates + outOfRange, snapshots,
        firstCommitMillis, newestLags, oldestLags);
  }

  private static long bound(ByteBuffer bytes, long missing) {
    return bytes == null ? missing : Conversions.<Long>fromByteBuffer(Types.LongType.get(), bytes);
  }

  /** Totals per variant over a trial, with the commit latencies of all its snapshots (p50, p99 and maximum). */
  static String summary(List<Outcome> outcomes) {
    List<String> lines = new ArrayList<>();
    outcomes.stream().map(Outcome::variant).distinct().forEach(variant -> {
      List<Outcome> runs = outcomes.stream().filter(o -> o.variant().equals(variant)).toList();
      long losses = runs.stream().mapToLong(Outcome::losses).sum();
      long duplicates = runs.stream().mapToLong(Outcome::duplicates).sum();
      double snapshots = runs.stream().mapToInt(Outcome::snapshots).average().orElse(0);
      long[] newest = runs.stream().flatMap(o -> o.newestRowLags().stream()).mapToLong(Long::longValue).sorted()
          .toArray();
      long[] oldest = runs.stream().flatMap(o -> o.oldestRowLags().stream()).mapToLong(Long::longValue).sorted()
          .toArray();
      lines.add(String.format("[flink-check] %s: %d jobs, total losses %d, total duplicates %d, "
              + "%.1f committed snapshots per job, commit latency over %d snapshots: from the newest row p50 %d ms, "
              + "p99 %d ms (max %d), from the oldest row p50 %d ms, p99 %d ms (max %d)",
          variant, runs.size(), losses, duplicates, snapshots, newest.length, percentile(newest, 50),
          percentile(newest, 99), max(newest), percentile(oldest, 50), percentile(oldest, 99), max(oldest)));
    });
    return String.join(System.lineSeparator(), lines);
  }

  /** The nearest-rank percentile of sorted values (-1 if there are none). */
  static long percentile(long[] sorted, int percent) {
    if (sorted.length == 0) {
      return -1;
    }
    int rank = (int) Math.ceil(percent / 100.0 * sorted.length);
    return sorted[Math.max(0, rank - 1)];
  }

  private static long max(long[] values) {
    return LongStream.of(values).max().orElse(-1);
  }
}
