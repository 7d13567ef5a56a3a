package dev.lakecommit.ingest.verify;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.io.CloseableIterable;

/**
 * The tables a routed job writes (a table per record: {@code ingest --route-by}), audited as one: the rows of all of
 * them against the source, each source record in exactly one of them.
 */
public final class RoutedTableRows implements TableRows {
  private final String name;
  private final List<TableRows> tables;

  /**
   * @param name the tables' pattern, for reports
   * @param tables at least one
   */
  public RoutedTableRows(String name, List<? extends TableRows> tables) {
    if (tables.isEmpty()) {
      throw new IllegalArgumentException("No table matches " + name);
    }
    this.name = name;
    this.tables = List.copyOf(tables);
  }

  @Override
  public String name() {
    return name + " (" + tables.size() + " tables)";
  }

  @Override
  public void checkColumn(String column) {
    tables.forEach(table -> table.checkColumn(column));
  }

  @Override
  public CloseableIterable<Object> values(String column) throws IOException {
    List<CloseableIterable<Object>> values = new ArrayList<>();
    for (TableRows table : tables) {
      values.add(table.values(column));
    }
    return CloseableIterable.concat(values);
  }

  /** Rows committed later than rows of a higher event time, table by table (each table keeps its own order). */
  @Override
  public long outOfOrderRows(String eventTimeColumn) throws IOException {
    long rows = 0;
    for (TableRows table : tables) {
      rows += table.outOfOrderRows(eventTimeColumn);
    }
    return rows;
  }
}
