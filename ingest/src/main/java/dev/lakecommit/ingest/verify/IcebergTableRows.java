package dev.lakecommit.ingest.verify;

import java.io.IOException;
import org.apache.iceberg.Accessor;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/** An Iceberg table's current snapshot (deletes applied), read with Iceberg's generic reader. */
public final class IcebergTableRows implements TableRows {
  private final Table table;

  public IcebergTableRows(Table table) {
    this.table = table;
    table.refresh();
  }

  @Override
  public String name() {
    return table.name();
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
    CloseableIterable<Record> rows = IcebergGenerics.read(table).select(column).build();
    return CloseableIterable.transform(rows, row -> topLevel ? row.getField(column) : accessor.get(row));
  }

  @Override
  public long outOfOrderRows(String eventTimeColumn) throws IOException {
    return OutOfOrder.count(table, eventTimeColumn);
  }
}
