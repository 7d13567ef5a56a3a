package dev.lakecommit.staging;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * Checks a generic record against the table schema before a single byte of it is written: a record that fails
 * half-way through Parquet's column writers would leave the open file with columns of different lengths.
 * Checks required fields, Java types of Iceberg's generic data model, fixed lengths and decimal precision/scale.
 * Public for writers outside this package that write through Iceberg's own file writers (the Iceberg sink's
 * upsert writer); not thread-safe, one per writer.
 */
public final class RecordValidator {
  private final Types.StructType struct;
  private final List<Types.NestedField> fields;
  /**
   * Per top-level field, the Java class a value must have when that is all there is to check (primitive types
   * but decimal and fixed); null for types with more to check.
   */
  private final Class<?>[] plainClasses;
  private Types.StructType lastAccepted;

  public RecordValidator(Schema schema) {
    this.struct = schema.asStruct();
    this.fields = struct.fields();
    this.plainClasses = new Class<?>[fields.size()];
    for (int i = 0; i < plainClasses.length; i++) {
      plainClasses[i] = plainClass(fields.get(i).type());
    }
  }

  /**
   * Checks one record; nothing is written.
   *
   * @throws InvalidRecordException naming the first field that does not fit
   */
  public void validate(Record record) {
    if (record == null) {
      throw new InvalidRecordException("<record>", "null record");
    }
    checkStructType(record.struct(), "<record>");
    if (record.size() < fields.size()) {
      checkStruct(struct, record, null);
    }
    for (int i = 0; i < plainClasses.length; i++) {
      Object value = record.get(i, Object.class);
      Class<?> plain = plainClasses[i];
      if (value == null || plain == null || !plain.isInstance(value)) {
        // the full check: nulls, wrong classes, and the types with more to check than the class
        Types.NestedField field = fields.get(i);
        checkValue(field.type(), field.isRequired(), value, null, field.name());
      }
    }
  }

  private static Class<?> plainClass(Type type) {
    return switch (type.typeId()) {
      case BOOLEAN -> Boolean.class;
      case INTEGER -> Integer.class;
      case LONG -> Long.class;
      case FLOAT -> Float.class;
      case DOUBLE -> Double.class;
      case DATE -> LocalDate.class;
      case TIME -> LocalTime.class;
      case TIMESTAMP, TIMESTAMP_NANO -> timestampWithZone(type) ? OffsetDateTime.class : LocalDateTime.class;
      case STRING -> CharSequence.class;
      case UUID -> UUID.class;
      case BINARY -> ByteBuffer.class;
      default -> null;
    };
  }

  private void checkStructType(Types.StructType actual, String field) {
    // Values are written by position, so a record of another struct type would land in the wrong columns.
    if (actual == struct || actual == lastAccepted) {
      return;
    }
    if (!struct.equals(actual)) {
      throw new InvalidRecordException(
          field, "record type " + actual + " is not the table schema " + struct);
    }
    lastAccepted = actual;
  }

  /**
   * A field's place in the record, as a chain to its parent: the dotted name is built only for an error, so a
   * valid record costs no string work.
   */
  private record FieldPath(FieldPath parent, String name) {
    @Override
    public String toString() {
      return parent == null ? name : parent + "." + name;
    }
  }

  private void checkStruct(Types.StructType type, StructLike value, FieldPath parent) {
    List<Types.NestedField> fields = type.fields();
    if (value.size() < fields.size()) {
      throw new InvalidRecordException(
          parent == null ? "<record>" : parent.toString(),
          "struct has " + value.size() + " values, schema has " + fields.size() + " fields");
    }
    for (int i = 0; i < fields.size(); i++) {
      Types.NestedField field = fields.get(i);
      Object fieldValue = value.get(i, Object.class);
      checkValue(field.type(), field.isRequired(), fieldValue, parent, field.name());
    }
  }

  private void checkValue(Type type, boolean required, Object value, FieldPath parent, String name) {
    if (value == null) {
      if (required) {
        throw new InvalidRecordException(
            new FieldPath(parent, name).toString(), "required " + type + " is missing (null)");
      }
      return;
    }
    switch (type.typeId()) {
      case BOOLEAN -> expect(value, Boolean.class, type, parent, name);
      case INTEGER -> expect(value, Integer.class, type, parent, name);
      case LONG -> expect(value, Long.class, type, parent, name);
      case FLOAT -> expect(value, Float.class, type, parent, name);
      case DOUBLE -> expect(value, Double.class, type, parent, name);
      case DATE -> expect(value, LocalDate.class, type, parent, name);
      case TIME -> expect(value, LocalTime.class, type, parent, name);
      case TIMESTAMP, TIMESTAMP_NANO -> expect(
          value, timestampWithZone(type) ? OffsetDateTime.class : LocalDateTime.class, type, parent, name);
      case STRING -> expect(value, CharSequence.class, type, parent, name);
      case UUID -> expect(value, UUID.class, type, parent, name);
      case BINARY -> expect(value, ByteBuffer.class, type, parent, name);
      case FIXED -> checkFixed((Types.FixedType) type, value, parent, name);
      case DECIMAL -> checkDecimal((Types.DecimalType) type, value, parent, name);
      case STRUCT -> {
        expect(value, StructLike.class, type, parent, name);
        checkStruct(type.asStructType(), (StructLike) value, new FieldPath(parent, name));
      }
      case LIST -> {
        expect(value, List.class, type, parent, name);
        Types.ListType list = type.asListType();
        FieldPath path = new FieldPath(parent, name);
        for (Object element : (List<?>) value) {
          checkValue(list.elementType(), list.isElementRequired(), element, path, "element");
        }
      }
      case MAP -> {
        expect(value, Map.class, type, parent, name);
        Types.MapType map = type.asMapType();
        FieldPath path = new FieldPath(parent, name);
        for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
          checkValue(map.keyType(), true, entry.getKey(), path, "key");
          checkValue(map.valueType(), map.isValueRequired(), entry.getValue(), path, "value");
        }
      }
      default -> {
        // Types without a fixed Java class in the generic model (variant, geometry, unknown): the writer decides.
      }
    }
  }

  private static boolean timestampWithZone(Type type) {
    return type instanceof Types.TimestampType ts
        ? ts.shouldAdjustToUTC()
        : ((Types.TimestampNanoType) type).shouldAdjustToUTC();
  }

  private static void expect(Object value, Class<?> javaClass, Type type, FieldPath parent, String name) {
    if (!javaClass.isInstance(value)) {
      throw new InvalidRecordException(
          new FieldPath(parent, name).toString(),
          "expected " + type + " as " + javaClass.getSimpleName() + ", got " + value.getClass().getName()
              + " (" + abbreviate(value) + ")");
    }
  }

  private static void checkFixed(Types.FixedType type, Object value, FieldPath parent, String name) {
    expect(value, byte[].class, type, parent, name);
    int length = ((byte[]) value).length;
    if (length != type.length()) {
      throw new InvalidRecordException(
          new FieldPath(parent, name).toString(), "expected " + type + ", got " + length + " bytes");
    }
  }

  private static void checkDecimal(Types.DecimalType type, Object value, FieldPath parent, String name) {
    expect(value, BigDecimal.class, type, parent, name);
    BigDecimal decimal = (BigDecimal) value;
    if (decimal.scale() != type.scale()) {
      throw new InvalidRecordException(
          new FieldPath(parent, name).toString(), "decimal " + decimal.toPlainString() + " has scale "
              + decimal.scale() + ", " + type + " needs scale " + type.scale() + " (rescale it with setScale)");
    }
    if (decimal.precision() > type.precision()) {
      throw new InvalidRecordException(
          new FieldPath(parent, name).toString(), "decimal " + decimal.toPlainString() + " overflows " + type
              + " (precision " + decimal.precision() + " > " + type.precision() + ")");
    }
  }

  private static String abbreviate(Object value) {
    String text = String.valueOf(value);
    return text.length() <= 64 ? text : text.substring(0, 61) + "...";
  }
}
