package dev.lakecommit.ingest.verify;

import dev.lakecommit.core.runtime.CheckpointedSource.SourceReader;
import dev.lakecommit.ingest.source.BadRecordSink;
import dev.lakecommit.ingest.source.FileSource;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;
import org.apache.iceberg.Accessor;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;

/**
 * The exactly-once audit (DESIGN.md, "The exactly-once audit"): every source record has a unique key; the table
 * is compared with the source by key. Duplicates and losses come from the table's current snapshot (deletes
 * applied); the out-of-order rate from the rows each snapshot of the main branch appended, in commit order.
 *
 * <p>Keys of any primitive type are compared by their string form. At most {@code maxKeysInMemory} keys are held
 * in memory; beyond that they are hash-partitioned into spill files under the spill directory and compared
 * partition by partition.
 */
public final class Audit {
  /** Keys held in memory before the comparison spills to disk. */
  public static final int DEFAULT_MAX_KEYS_IN_MEMORY = 1_000_000;

  private Audit() {}

  /**
   * Audits a table against its source, holding at most {@value #DEFAULT_MAX_KEYS_IN_MEMORY} keys in memory.
   *
   * @see #run(FileSource, Table, String, String, Path, int)
   */
  public static AuditReport run(FileSource source, Table table, String keyColumn, String eventTimeColumnOrNull,
      Path spillDir) throws IOException {
    return run(source, table, keyColumn, eventTimeColumnOrNull, spillDir, DEFAULT_MAX_KEYS_IN_MEMORY);
  }

  /**
   * Audits a table against its source. Reads the whole source from its beginning and the table's current
   * snapshot; writes nothing but spill files, which it deletes. Source records that do not parse or do not fit
   * the schema are counted as {@linkplain AuditReport#unparseableSourceRows() unparseable} and left out (the
   * source's bad-record sink is replaced by the counter); a file that cannot be read fails the audit.
   *
   * @param keyColumn the unique key, a column (dotted for a nested field) of both the source and the table
   * @param eventTimeColumnOrNull an event-time column of the table, to measure the out-of-order rate; or null
   * @param spillDir where spill files go (a subdirectory is made and removed)
   * @param maxKeysInMemory keys held in memory before spilling
   * @throws IllegalArgumentException if a column is missing, naming it and the columns there are
   * @throws IOException if the source or the table cannot be read
   */
  public static AuditReport run(FileSource source, Table table, String keyColumn, String eventTimeColumnOrNull,
      Path spillDir, int maxKeysInMemory) throws IOException {
    Objects.requireNonNull(table, "table");
    return run(source, new IcebergTableRows(table), keyColumn, eventTimeColumnOrNull, spillDir, maxKeysInMemory);
  }

  /**
   * Audits any table against its source: an Iceberg table, or a Hive table ({@link HiveTableRows}). Reads the
   * whole source from its beginning and the table's rows once; holds at most {@code maxKeysInMemory} keys in
   * memory and writes nothing but spill files, which it deletes.
   *
   * @see #run(FileSource, Table, String, String, Path, int)
   */
  public static AuditReport run(FileSource source, TableRows table, String keyColumn, String eventTimeColumnOrNull,
      Path spillDir, int maxKeysInMemory) throws IOException {
    Objects.requireNonNull(source, "source");
    long[] unparseable = {0};
    source.badRecords(counting(unparseable));
    return run(source, source.schema(), "source " + source.input(), unparseable, table, keyColumn,
        eventTimeColumnOrNull, spillDir, maxKeysInMemory);
  }

  /**
   * Audits a table against Kafka topics, read from their earliest offsets to the end offsets seen when the audit
   * starts (read_committed); messages that do not parse are counted apart, as unparseable source rows.
   */
  public static AuditReport run(dev.lakecommit.ingest.source.KafkaSource source, TableRows table, String keyColumn,
      String eventTimeColumnOrNull, Path spillDir, int maxKeysInMemory) throws IOException {
    Objects.requireNonNull(source, "source");
    long[] unparseable = {0};
    source.badRecords(counting(unparseable), Long.MAX_VALUE);
    return run(source, source.schema(), "source " + source.settings().input(), unparseable, table, keyColumn,
        eventTimeColumnOrNull, spillDir, maxKeysInMemory);
  }

  private static BadRecordSink counting(long[] unparseable) {
    return new BadRecordSink() {
      @Override
      public void reject(String file, long lineOrRecord, String reason, String rawText) {
        unparseable[0]++;
      }

      @Override
      public long count() {
        return unparseable[0];
      }

      @Override
      public void close() {}
    };
  }

  private static AuditReport run(dev.lakecommit.core.runtime.CheckpointedSource<Record> source, Schema schema,
      String sourceName, long[] unparseable, TableRows table, String keyColumn, String eventTimeColumnOrNull,
      Path spillDir, int maxKeysInMemory) throws IOException {
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(keyColumn, "keyColumn");
    Objects.requireNonNull(spillDir, "spillDir");
    Accessor<StructLike> sourceKey = accessor(schema, keyColumn, sourceName);
    table.checkColumn(keyColumn);
    if (eventTimeColumnOrNull != null) {
      table.checkColumn(eventTimeColumnOrNull);
    }

    long sourceRows = 0;
    long tableRows = 0;
    KeyComparison.Counts counts;
    try (KeyComparison keys = new KeyComparison(spillDir, maxKeysInMemory)) {
      try (SourceReader<Record> reader = source.open(null)) {
        for (Record record = reader.next(); record != null; record = reader.next()) {
          keys.addSource(Keys.text(sourceKey.get(record)));
          sourceRows++;
        }
      }
      try (CloseableIterable<Object> values = table.values(keyColumn)) {
        for (Object value : values) {
          keys.addTable(Keys.text(value));
          tableRows++;
        }
      }
      counts = keys.compare();
    }
    long outOfOrder = eventTimeColumnOrNull == null ? 0 : table.outOfOrderRows(eventTimeColumnOrNull);
    return new AuditReport(sourceRows, tableRows, counts.duplicateKeys(), counts.lostKeys(),
        counts.unexpectedKeys(), outOfOrder, eventTimeColumnOrNull, unparseable[0]);
  }

  static Accessor<StructLike> accessor(Schema schema, String column, String where) {
    Types.NestedField field = schema.findField(column);
    if (field == null) {
      List<String> columns = schema.columns().stream().map(Types.NestedField::name).collect(Collectors.toList());
      throw new IllegalArgumentException("The " + where + " has no column '" + column + "' (columns: "
          + String.join(", ", columns) + ")");
    }
    if (!field.type().isPrimitiveType()) {
      throw new IllegalArgumentException("Column '" + column + "' of the " + where + " is " + field.type()
          + ", not a primitive type");
    }
    return schema.accessorForField(field.fieldId());
  }
}
