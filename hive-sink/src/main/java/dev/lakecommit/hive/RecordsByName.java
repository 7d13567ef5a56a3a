package dev.lakecommit.hive;

import dev.lakecommit.staging.InputConverter;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * Lays Iceberg records out as the staged schema, by column name (case-insensitive, as Hive): a record built for a
 * schema of other field ids, nullability or column order still fits. Records of the staged schema pass as they
 * are; the writer validates the values. One per writer: it remembers the last record layout it saw.
 */
final class RecordsByName implements InputConverter<Record> {
  private final Types.StructType target;
  private Types.StructType lastSource;
  private int[] positions;

  RecordsByName(Schema staged) {
    this.target = staged.asStruct();
  }

  @Override
  public Record convert(Record input) {
    Types.StructType source = input.struct();
    if (source == target) {
      return input;
    }
    if (source != lastSource) {
      positions = source.equals(target) ? null : positions(source);
      lastSource = source;
    }
    if (positions == null) {
      return input;
    }
    GenericRecord out = GenericRecord.create(target);
    for (int i = 0; i < positions.length; i++) {
      out.set(i, positions[i] < 0 ? null : input.get(positions[i], Object.class));
    }
    return out;
  }

  private int[] positions(Types.StructType source) {
    List<Types.NestedField> fields = target.fields();
    int[] result = new int[fields.size()];
    List<Types.NestedField> sourceFields = source.fields();
    for (int i = 0; i < fields.size(); i++) {
      result[i] = -1;
      for (int j = 0; j < sourceFields.size(); j++) {
        if (sourceFields.get(j).name().equalsIgnoreCase(fields.get(i).name())) {
          result[i] = j;
          break;
        }
      }
    }
    return result;
  }
}
