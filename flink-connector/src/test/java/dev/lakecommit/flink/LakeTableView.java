package dev.lakecommit.flink;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.parquet.Parquet;

/**
 * The test's own view of a job's Iceberg table, through a catalog instance of its own (the TaskManagers have
 * theirs): rows committed so far, the job's watermark, and the {@link Audit} against the topic.
 */
final class LakeTableView implements CommittedTable {
  private final Catalog catalog;
  private final TableIdentifier table;

  /** The table the sink's configuration names, through a catalog of the same name and properties as the sink's. */
  LakeTableView(IcebergSinkConfig sink) {
    // the same name: a JDBC catalog keeps the tables of each catalog name apart
    this.catalog = CatalogUtil.buildIcebergCatalog(sink.catalogName(), sink.catalogProperties(),
        new org.apache.hadoop.conf.Configuration());
    this.table = sink.table();
  }

  Table load() {
    return catalog.loadTable(table);
  }

  /** Rows in the table's current snapshot; 0 before the table or its first snapshot exists. */
  @Override
  public long committedRows() {
    if (!catalog.tableExists(table)) {
      return 0;
    }
    Snapshot current = load().currentSnapshot();
    return current == null ? 0 : Long.parseLong(current.summary().getOrDefault("total-records", "0"));
  }

  /** The last checkpoint of {@code jobId} the table holds (its watermark property); 0 if none. */
  @Override
  public long watermark(String jobId) {
    if (!catalog.tableExists(table)) {
      return 0;
    }
    String value = load().properties().get(CommitId.WATERMARK_KEY_PREFIX + jobId);
    return value == null ? 0 : Long.parseLong(value);
  }

  /** Creates the table, unpartitioned, for a sink that writes only into an existing one (Iceberg's own). */
  void create(org.apache.iceberg.Schema schema, Map<String, String> properties) {
    catalog.createTable(table, schema, org.apache.iceberg.PartitionSpec.unpartitioned(), properties);
  }

  /**
   * The last Flink checkpoint Iceberg's own Flink sink committed, from its current snapshot's summary ({@code
   * flink.max-committed-checkpoint-id}); 0 if none.
   */
  long icebergFlinkCheckpoint() {
    if (!catalog.tableExists(table)) {
      return 0;
    }
    Snapshot current = load().currentSnapshot();
    return current == null ? 0
        : Long.parseLong(current.summary().getOrDefault("flink.max-committed-checkpoint-id", "0"));
  }

  @Override
  public void close() throws IOException {
    if (catalog instanceof Closeable closeable) {
      closeable.close();
    }
  }

  /**
   * The table against the topic: duplicates (rows beyond the first of an id), losses (ids of the topic not in the
   * table), rows of ids the topic never held, and out-of-order rows (event time below the largest event time that
   * an earlier snapshot of the job committed) — each snapshot's added data files read in commit order. Snapshots
   * that add out-of-order rows are printed.
   *
   * @param snapshots the commits the rows came in (Iceberg snapshots; for a Hive table, checkpoints)
   * @param commitUnit what {@code snapshots} counts, as printed
   */
  record Audit(long rows, long snapshots, long duplicates, long losses, long unknown, long outOfOrder,
      long maxLatenessMs, String commitUnit) {
    /** The audit of an Iceberg table: its commits are snapshots. */
    Audit(long rows, long snapshots, long duplicates, long losses, long unknown, long outOfOrder,
        long maxLatenessMs) {
      this(rows, snapshots, duplicates, losses, unknown, outOfOrder, maxLatenessMs, "snapshots");
    }

    double outOfOrderRate() {
      return rows == 0 ? 0 : (double) outOfOrder / rows;
    }

    @Override
    public String toString() {
      return String.format("rows %d in %d %s; duplicates %d (rate %.6f), losses %d (rate %.6f), unknown %d,"
              + " out of order %d (rate %.6f, at most %d ms behind)", rows, snapshots, commitUnit, duplicates,
          rows == 0 ? 0.0 : (double) duplicates / rows, losses, (double) losses / Math.max(1, rows - duplicates
              + losses), unknown, outOfOrder, outOfOrderRate(), maxLatenessMs);
    }

    /** The audit of the snapshots of job {@code jobId} (Lakecommit's summary key), or of every snapshot if null. */
    static Audit of(Table table, String jobId, Map<Long, Long> topic) throws IOException {
      List<Snapshot> order = new ArrayList<>();
      for (Snapshot s = table.currentSnapshot(); s != null;
          s = s.parentId() == null ? null : table.snapshot(s.parentId())) {
        order.add(0, s);
      }
      Map<Long, Integer> seen = new HashMap<>();
      long rows = 0;
      long outOfOrder = 0;
      long unknown = 0;
      long committedMax = Long.MIN_VALUE;
      long snapshots = 0;
      long maxLateness = 0;
      for (Snapshot snapshot : order) {
        if (jobId != null && !jobId.equals(snapshot.summary().get(CommitId.JOB_ID_KEY))) {
          continue;
        }
        snapshots++;
        long snapshotMax = committedMax;
        long lateBefore = outOfOrder;
        for (DataFile file : snapshot.addedDataFiles(table.io())) {
          try (CloseableIterable<Record> records = Parquet.read(table.io().newInputFile(file.location()))
              .project(table.schema())
              .createReaderFunc(fileSchema -> GenericParquetReaders.buildReader(table.schema(), fileSchema))
              .build()) {
            for (Record record : records) {
              rows++;
              long id = (Long) record.getField("id");
              long eventTime = (Long) record.getField("event_time");
              seen.merge(id, 1, Integer::sum);
              if (!topic.containsKey(id)) {
                unknown++;
              }
              if (eventTime < committedMax) {
                outOfOrder++;
                maxLateness = Math.max(maxLateness, committedMax - eventTime);
              }
              snapshotMax = Math.max(snapshotMax, eventTime);
            }
          }
        }
        if (outOfOrder > lateBefore) {
          System.out.printf("audit of %s: snapshot %d (checkpoint %s) adds %d rows out of order, event times up to"
                  + " %d%n", table.name(), snapshot.snapshotId(), snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY),
              outOfOrder - lateBefore, snapshotMax);
        }
        committedMax = snapshotMax;
      }
      long duplicates = seen.values().stream().mapToLong(n -> n - 1).sum();
      long losses = topic.keySet().stream().filter(id -> !seen.containsKey(id)).count();
      return new Audit(rows, snapshots, duplicates, losses, unknown, outOfOrder, maxLateness);
    }
  }
}
