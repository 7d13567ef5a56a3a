package dev.lakecommit.iceberg;

import dev.lakecommit.core.Deletion;
import java.util.Map;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * A delete of the row with this record's key, for a sink that writes by key ({@link CommitMode#UPSERT}, a
 * {@link MultiTableSink} table with an upsert key): a {@link Record} (its key and table route it like a row) marked
 * {@link Deletion}, which a standalone job hands to the writer's delete. A change stream's source returns one for a
 * delete event.
 */
public final class DeletedRecord implements Record, Deletion {
  private final Record row;

  /** The delete of the row of {@code row}'s key: only its key columns are read. */
  public DeletedRecord(Record row) {
    this.row = row;
  }

  /** The record whose key is deleted. */
  public Record row() {
    return row;
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
    return new DeletedRecord(row.copy());
  }

  @Override
  public Record copy(Map<String, Object> overwriteValues) {
    return new DeletedRecord(row.copy(overwriteValues));
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
    return "delete of " + row;
  }
}
