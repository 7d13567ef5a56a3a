package dev.lakecommit.flink;

import dev.lakecommit.staging.InputConverter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * A read-only Iceberg {@link Record} view of the current Flink {@link RowData}: no record is built per row. The
 * staging writer reads each column up to three times (validation, partition key, Parquet), so a column is
 * converted once per row, on first read, into a reused slot; nested rows, arrays and maps are converted whole.
 *
 * <p>One view per writer, used by one thread; it is also the writer's {@link InputConverter}: {@code convert}
 * points the view at the next row.
 */
final class RowDataRecord implements Record, InputConverter<RowData> {
  private static final Object UNSET = new Object();

  private final Types.StructType struct;
  private final RowData.FieldGetter[] getters;
  private final List<Function<Object, Object>> converters;
  private final Object[] values;
  private RowData row;

  private RowDataRecord(Types.StructType struct, RowData.FieldGetter[] getters,
      List<Function<Object, Object>> converters) {
    this.struct = struct;
    this.getters = getters;
    this.converters = converters;
    this.values = new Object[getters.length];
  }

  /**
   * A view laying rows of {@code rowType} out as {@code schema}, matching columns by name.
   *
   * @throws IllegalArgumentException naming the column, if a required column is missing or a type cannot be
   *     written
   */
  static RowDataRecord of(RowType rowType, Schema schema, boolean ignoreCase) {
    Types.StructType struct = schema.asStruct();
    int[] positions = RowDataConversions.positions(rowType, struct, ignoreCase, "");
    RowData.FieldGetter[] getters = new RowData.FieldGetter[positions.length];
    List<Function<Object, Object>> converters = new ArrayList<>(positions.length);
    for (int i = 0; i < positions.length; i++) {
      Types.NestedField field = struct.fields().get(i);
      if (positions[i] < 0) {
        converters.add(null);
        continue;
      }
      LogicalType type = rowType.getTypeAt(positions[i]);
      getters[i] = RowData.createFieldGetter(type, positions[i]);
      converters.add(RowDataConversions.converter(type, field.type(), ignoreCase, field.name()));
    }
    return new RowDataRecord(struct, getters, converters);
  }

  @Override
  public Record convert(RowData input) {
    this.row = input;
    Arrays.fill(values, UNSET);
    return this;
  }

  private Object value(int pos) {
    Object value = values[pos];
    if (value == UNSET) {
      Object internal = getters[pos] == null ? null : getters[pos].getFieldOrNull(row);
      value = internal == null ? null : converters.get(pos).apply(internal);
      values[pos] = value;
    }
    return value;
  }

  @Override
  public Types.StructType struct() {
    return struct;
  }

  @Override
  public int size() {
    return getters.length;
  }

  @Override
  public <T> T get(int pos, Class<T> javaClass) {
    return javaClass.cast(value(pos));
  }

  @Override
  public Object get(int pos) {
    return value(pos);
  }

  @Override
  public Object getField(String name) {
    Types.NestedField field = struct.field(name);
    return field == null ? null : value(struct.fields().indexOf(field));
  }

  @Override
  public <T> void set(int pos, T value) {
    throw new UnsupportedOperationException("A RowData view is read-only");
  }

  @Override
  public void setField(String name, Object value) {
    throw new UnsupportedOperationException("A RowData view is read-only");
  }

  @Override
  public Record copy() {
    GenericRecord copy = GenericRecord.create(struct);
    for (int i = 0; i < getters.length; i++) {
      copy.set(i, value(i));
    }
    return copy;
  }

  @Override
  public Record copy(Map<String, Object> overwriteValues) {
    Record copy = copy();
    overwriteValues.forEach(copy::setField);
    return copy;
  }

  @Override
  public String toString() {
    return row == null ? "RowDataRecord(empty)" : "RowDataRecord(" + row + ")";
  }
}
