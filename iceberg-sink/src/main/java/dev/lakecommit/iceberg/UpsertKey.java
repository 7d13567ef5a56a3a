package dev.lakecommit.iceberg;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.StructLikeWrapper;

/**
 * The key of {@link CommitMode#UPSERT}: which columns identify a row, their values as a key record (what an
 * equality delete file holds), and which writer owns a key. Every record of a key must go to the same writer:
 * equality deletes of one checkpoint do not apply to rows added in that same checkpoint, so only the writer that
 * added a row earlier in the checkpoint can replace it (with a position delete).
 *
 * <p>Not thread-safe (reuses wrappers): one per writer or router thread.
 */
final class UpsertKey {
  private final List<String> columns;
  private final Schema keySchema;
  private final int[] fieldIds;
  private final InternalRecordWrapper keyWrapper;
  private final StructLikeWrapper hashWrapper;

  private UpsertKey(List<String> columns, Schema keySchema) {
    this.columns = List.copyOf(columns);
    this.keySchema = keySchema;
    this.fieldIds = keySchema.columns().stream().mapToInt(Types.NestedField::fieldId).toArray();
    this.keyWrapper = new InternalRecordWrapper(keySchema.asStruct());
    this.hashWrapper = StructLikeWrapper.forType(keySchema.asStruct());
  }

  /**
   * The key of {@code table}: the configured columns, or else the table's identifier fields.
   *
   * @throws IllegalArgumentException naming the option when there is no key, a key column is missing, optional,
   *     nested or not primitive, a partition source column is not part of the key, or the table is not format v2
   */
  static UpsertKey resolve(Table table, List<String> configured) {
    int formatVersion = ((org.apache.iceberg.HasTableOperations) table).operations().current().formatVersion();
    if (formatVersion != 2) {
      throw new IllegalArgumentException(String.format(
          "Invalid table for mode UPSERT: %s has format-version %s; upserts need format-version 2 (equality and"
              + " position delete files)", table.name(), formatVersion));
    }
    Schema schema = table.schema();
    List<String> columns = configured.isEmpty() ? List.copyOf(schema.identifierFieldNames()) : configured;
    if (columns.isEmpty()) {
      throw new IllegalArgumentException(String.format(
          "Missing upsertKey: mode UPSERT needs key columns, and table %s has no identifier fields", table.name()));
    }
    List<Types.NestedField> fields = new ArrayList<>();
    for (String column : columns) {
      Types.NestedField field = schema.asStruct().field(column);
      if (field == null) {
        throw new IllegalArgumentException(String.format(
            "Invalid upsertKey: table %s has no top-level column '%s'", table.name(), column));
      }
      if (!field.type().isPrimitiveType() || field.isOptional()) {
        throw new IllegalArgumentException(String.format(
            "Invalid upsertKey: column '%s' of table %s is %s %s; key columns must be required primitive columns",
            column, table.name(), field.isOptional() ? "optional" : "required", field.type()));
      }
      fields.add(field);
    }
    Set<Integer> keyIds = new HashSet<>();
    fields.forEach(f -> keyIds.add(f.fieldId()));
    for (PartitionField partition : table.spec().fields()) {
      if (!keyIds.contains(partition.sourceId())) {
        throw new IllegalArgumentException(String.format(
            "Invalid upsertKey %s: table %s is partitioned by column '%s', which must be part of the key (an equality"
                + " delete only applies within its partition)", columns, table.name(),
            schema.findColumnName(partition.sourceId())));
      }
    }
    return new UpsertKey(columns, new Schema(fields));
  }

  List<String> columns() {
    return columns;
  }

  /** The columns of an equality delete file: the key columns. */
  Schema keySchema() {
    return keySchema;
  }

  int[] fieldIds() {
    return fieldIds.clone();
  }

  /** The key of a record of the table schema, as a record of {@link #keySchema}. */
  Record keyOf(Record row) {
    GenericRecord key = GenericRecord.create(keySchema);
    for (int i = 0; i < columns.size(); i++) {
      key.set(i, row.getField(columns.get(i)));
    }
    return key;
  }

  /** The writer that owns the key of {@code row}, among {@code writers}; stable across processes. */
  int writerOf(Record row, int writers) {
    int hash = hashWrapper.set(keyWrapper.wrap(keyOf(row))).hashCode();
    return Math.floorMod(hash, writers);
  }
}
