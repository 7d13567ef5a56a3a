package dev.lakecommit.ingest.verify;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.iceberg.Accessor;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.IncrementalAppendScan;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.avro.Avro;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.avro.PlannedDataReader;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.mapping.NameMappingParser;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * Rows committed late: walks the snapshots of the main branch in commit order, reads the rows each one appended
 * (an incremental append scan from its parent), and counts the rows whose event time is lower than the largest
 * event time committed by an earlier snapshot. Snapshots that only rewrite or delete add nothing here.
 */
final class OutOfOrder {
  private OutOfOrder() {}

  @SuppressWarnings({"unchecked", "rawtypes"})
  static long count(Table table, String eventTimeColumn) throws IOException {
    return count(table, null, eventTimeColumn);
  }

  /** As {@link #count(Table, String)}, over the snapshots up to {@code snapshotId} (null: the current one). */
  static long count(Table table, Long snapshotId, String eventTimeColumn) throws IOException {
    Snapshot current = snapshotId == null ? table.currentSnapshot() : table.snapshot(snapshotId);
    if (current == null) {
      return 0;
    }
    List<Snapshot> chain = new ArrayList<>();
    SnapshotUtil.ancestorsOf(current.snapshotId(), table::snapshot).forEach(chain::add);
    Collections.reverse(chain);

    Schema projection = table.schema().select(eventTimeColumn);
    Accessor<StructLike> eventTime = Audit.accessor(projection, eventTimeColumn, "table " + table.name());
    boolean topLevel = projection.asStruct().field(eventTimeColumn) != null;
    Comparable committedMax = null;
    long late = 0;
    Long parent = null;
    for (Snapshot snapshot : chain) {
      IncrementalAppendScan scan = table.newIncrementalAppendScan().toSnapshot(snapshot.snapshotId())
          .project(projection);
      if (parent != null) {
        scan = scan.fromSnapshotExclusive(parent);
      }
      Comparable snapshotMax = null;
      try (CloseableIterable<FileScanTask> tasks = scan.planFiles()) {
        for (FileScanTask task : tasks) {
          try (CloseableIterable<Record> rows = read(table, task, projection)) {
            for (Record row : rows) {
              // Records hold dates and times as java.time values; accessors expect Iceberg's internal longs.
              Comparable value = (Comparable) (topLevel ? row.getField(eventTimeColumn) : eventTime.get(row));
              if (value == null) {
                continue;
              }
              if (committedMax != null && value.compareTo(committedMax) < 0) {
                late++;
              }
              if (snapshotMax == null || value.compareTo(snapshotMax) > 0) {
                snapshotMax = value;
              }
            }
          }
        }
      }
      if (snapshotMax != null && (committedMax == null || snapshotMax.compareTo(committedMax) > 0)) {
        committedMax = snapshotMax;
      }
      parent = snapshot.snapshotId();
    }
    return late;
  }

  private static CloseableIterable<Record> read(Table table, FileScanTask task, Schema projection) {
    InputFile input = table.io().newInputFile(task.file().location());
    String mapping = table.properties().get(TableProperties.DEFAULT_NAME_MAPPING);
    switch (task.file().format()) {
      case PARQUET: {
        Parquet.ReadBuilder builder = Parquet.read(input)
            .project(projection)
            .split(task.start(), task.length())
            .createReaderFunc(type -> GenericParquetReaders.buildReader(projection, type));
        if (mapping != null) {
          builder.withNameMapping(NameMappingParser.fromJson(mapping));
        }
        return builder.build();
      }
      case AVRO: {
        Avro.ReadBuilder builder = Avro.read(input)
            .project(projection)
            .split(task.start(), task.length())
            .createResolvingReader(PlannedDataReader::create);
        if (mapping != null) {
          builder.withNameMapping(NameMappingParser.fromJson(mapping));
        }
        return builder.build();
      }
      default:
        throw new UnsupportedOperationException("Cannot read " + task.file().format() + " data file "
            + task.file().location() + " of table " + table.name() + " for the out-of-order audit");
    }
  }
}
