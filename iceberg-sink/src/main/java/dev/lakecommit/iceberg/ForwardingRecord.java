package dev.lakecommit.iceberg;

import java.util.Map;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * A {@link Record} that reads and writes through another and says something more about it (a delete, a source
 * table): its copies are made by {@link #wrap}, so they say the same.
 */
public abstract class ForwardingRecord implements Record {
  private final Record row;

  protected ForwardingRecord(Record row) {
    this.row = row;
  }

  /** The record read and written through. */
  public Record row() {
    return row;
  }

  /** This record's kind around {@code copy}, a copy of {@link #row}. */
  protected abstract Record wrap(Record copy);

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
    return wrap(row.copy());
  }

  @Override
  public Record copy(Map<String, Object> overwriteValues) {
    return wrap(row.copy(overwriteValues));
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
}
