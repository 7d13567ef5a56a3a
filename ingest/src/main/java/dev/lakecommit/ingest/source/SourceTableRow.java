package dev.lakecommit.ingest.source;

import dev.lakecommit.iceberg.DeletedRecord;
import dev.lakecommit.iceberg.ForwardingRecord;
import org.apache.iceberg.data.Record;

/**
 * A row of a Debezium change event, of the schema of its source table, with the table's name ({@code source.table}
 * of the event): what routes it to its lake table.
 */
public final class SourceTableRow extends ForwardingRecord {
  private final String table;

  public SourceTableRow(String table, Record row) {
    super(row);
    this.table = table;
  }

  /** The source table's name. */
  public String table() {
    return table;
  }

  /** The source table of a record of a Debezium source that reads source tables, a delete's too; else null. */
  public static String tableOf(Record record) {
    Record row = record instanceof DeletedRecord deleted ? deleted.row() : record;
    return row instanceof SourceTableRow source ? source.table : null;
  }

  @Override
  protected Record wrap(Record copy) {
    return new SourceTableRow(table, copy);
  }

  @Override
  public String toString() {
    return table + " " + row();
  }
}
