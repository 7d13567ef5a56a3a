package dev.lakecommit.iceberg;

import dev.lakecommit.core.Deletion;
import org.apache.iceberg.data.Record;

/**
 * A delete of the row with this record's key, for a sink that writes by key ({@link CommitMode#UPSERT}, a
 * {@link MultiTableSink} table with an upsert key): a {@link Record} (its key and table route it like a row) marked
 * {@link Deletion}, which a standalone job hands to the writer's delete. A change stream's source returns one for a
 * delete event.
 */
public final class DeletedRecord extends ForwardingRecord implements Deletion {
  /** The delete of the row of {@code row}'s key: only its key columns are read. */
  public DeletedRecord(Record row) {
    super(row);
  }

  @Override
  protected Record wrap(Record copy) {
    return new DeletedRecord(copy);
  }

  @Override
  public String toString() {
    return "delete of " + row();
  }
}
