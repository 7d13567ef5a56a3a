package dev.lakecommit.ingest.verify;

import java.io.IOException;
import org.apache.iceberg.Accessor;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/** An Iceberg table's current snapshot, or one given (deletes applied), read with Iceberg's generic reader. */
public final class IcebergTableRows implements TableRows {
  private final Table table;
  /** The snapshot read, or null for the current one. */
  private final Long snapshotId;

  public IcebergTableRows(Table table) {
    this(table, null);
  }

  /** The table as of {@code snapshotId} (null: as it is now). */
  public IcebergTableRows(Table table, Long snapshotId) {
    this.table = table;
    this.snapshotId = snapshotId;
    table.refresh();
  }

  @Override
  public String name() {
    return snapshotId == null ? table.name() : table.name() + " at snapshot " + snapshotId;
  }

  @Override
  public void checkColumn(String column) {
    Audit.accessor(table.schema(), column, "table " + table.name());
  }

  @Override
  public CloseableIterable<Object> values(String column) {
    Schema projection = table.schema().select(column);
    Accessor<StructLike> accessor = Audit.accessor(projection, column, "table " + table.name());
    // Records hold dates and times as java.time values; accessors expect Iceberg's internal longs.
    boolean topLevel = projection.asStruct().field(column) != null;
    IcebergGenerics.ScanBuilder scan = IcebergGenerics.read(table).select(column);
    CloseableIterable<Record> rows = (snapshotId == null ? scan : scan.useSnapshot(snapshotId)).build();
    return CloseableIterable.transform(rows, row -> topLevel ? row.getField(column) : accessor.get(row));
  }

  @Override
  public long outOfOrderRows(String eventTimeColumn) throws IOException {
    return OutOfOrder.count(table, snapshotId, eventTimeColumn);
  }
}
