package dev.lakecommit.iceberg;

import dev.lakecommit.staging.InputConverter;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * Lays records of the staged schema out as the table's schema, by column name: writers write positionally, and a
 * table may order its columns differently or hold more optional ones.
 */
final class RecordProjection implements InputConverter<Record> {
  private final Types.StructType target;
  private final int[] sourcePositions;

  private RecordProjection(Types.StructType source, Types.StructType target) {
    this.target = target;
    List<Types.NestedField> fields = target.fields();
    this.sourcePositions = new int[fields.size()];
    for (int i = 0; i < fields.size(); i++) {
      sourcePositions[i] = source.fields().indexOf(source.field(fields.get(i).name()));
    }
  }

  /** Records as they are when the layouts agree, otherwise a projection by name. */
  static InputConverter<Record> of(Schema staged, Schema table) {
    if (sameLayout(staged.asStruct(), table.asStruct())) {
      return InputConverter.records();
    }
    return new RecordProjection(staged.asStruct(), table.asStruct());
  }

  private static boolean sameLayout(Types.StructType a, Types.StructType b) {
    return a.fields().size() == b.fields().size() && TypeWidening.sameShape(a, b);
  }

  @Override
  public Record convert(Record input) {
    GenericRecord out = GenericRecord.create(target);
    for (int i = 0; i < sourcePositions.length; i++) {
      int from = sourcePositions[i];
      out.set(i, from < 0 ? null : input.get(from, Object.class));
    }
    return out;
  }
}
