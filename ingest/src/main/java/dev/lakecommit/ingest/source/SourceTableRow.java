package dev.lakecommit.ingest.source;

import java.util.Map;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * A row of a Debezium change event, of the schema of its source table, with the table's name ({@code source.table}
 * of the event): what routes it to its lake table.
 */
public final class SourceTableRow implements Record {
  private final String table;
  private final Record row;

  public SourceTableRow(String table, Record row) {
    this.table = table;
    this.row = row;
  }

  /** The source table's name. */
  public String table() {
    return table;
  }

  /** The source table of a record of a Debezium source that reads source tables, a delete's too; else null. */
  public static String tableOf(Record record) {
    Record row = record instanceof dev.lakecommit.iceberg.DeletedRecord deleted ? deleted.row() : record;
    return row instanceof SourceTableRow source ? source.table : null;
  }

  @Override
  public Types.StructType struct() {
    return row.struct();
  }

  @Override
  public Object getField(String name) {
    return row.getField(name);
  }

  @Override
  public void setField(String name, Object value) {
    row.setField(name, value);
  }

  @Override
  public Object get(int pos) {
    return row.get(pos);
  }

  @Override
  public Record copy() {
    return new SourceTableRow(table, row.copy());
  }

  @Override
  public Record copy(Map<String, Object> overwriteValues) {
    return new SourceTableRow(table, row.copy(overwriteValues));
  }

  @Override
  public int size() {
    return row.size();
  }

  @Override
  public <T> T get(int pos, Class<T> javaClass) {
    return row.get(pos, javaClass);
  }

  @Override
  public <T> void set(int pos, T value) {
    row.set(pos, value);
  }

  @Override
  public String toString() {
    return table + " " + row;
  }
}
