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
  private Types.StructType lastAccepted;

  public RecordValidator(Schema schema) {
    this.struct = schema.asStruct();
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
    checkStruct(struct, record, "");
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

  private void checkStruct(Types.StructType type, StructLike value, String prefix) {
    List<Types.NestedField> fields = type.fields();
    if (value.size() < fields.size()) {
      throw new InvalidRecordException(
          prefix.isEmpty() ? "<record>" : prefix.substring(0, prefix.length() - 1),
          "struct has " + value.size() + " values, schema has " + fields.size() + " fields");
    }
    for (int i = 0; i < fields.size(); i++) {
      Types.NestedField field = fields.get(i);
      Object fieldValue = value.get(i, Object.class);
      checkValue(field.type(), field.isRequired(), fieldValue, prefix + field.name());
    }
  }

  private void checkValue(Type type, boolean required, Object value, String path) {
    if (value == null) {
      if (required) {
        throw new InvalidRecordException(path, "required " + type + " is missing (null)");
      }
      return;
    }
    switch (type.typeId()) {
      case BOOLEAN -> expect(value, Boolean.class, type, path);
      case INTEGER -> expect(value, Integer.class, type, path);
      case LONG -> expect(value, Long.class, type, path);
      case FLOAT -> expect(value, Float.class, type, path);
      case DOUBLE -> expect(value, Double.class, type, path);
      case DATE -> expect(value, LocalDate.class, type, path);
      case TIME -> expect(value, LocalTime.class, type, path);
      case TIMESTAMP, TIMESTAMP_NANO -> expect(
          value, timestampWithZone(type) ? OffsetDateTime.class : LocalDateTime.class, type, path);
      case STRING -> expect(value, CharSequence.class, type, path);
      case UUID -> expect(value, UUID.class, type, path);
      case BINARY -> expect(value, ByteBuffer.class, type, path);
      case FIXED -> checkFixed((Types.FixedType) type, value, path);
      case DECIMAL -> checkDecimal((Types.DecimalType) type, value, path);
      case STRUCT -> {
        expect(value, StructLike.class, type, path);
        checkStruct(type.asStructType(), (StructLike) value, path + ".");
      }
      case LIST -> {
        expect(value, List.class, type, path);
        Types.ListType list = type.asListType();
        for (Object element : (List<?>) value) {
          checkValue(list.elementType(), list.isElementRequired(), element, path + ".element");
        }
      }
      case MAP -> {
        expect(value, Map.class, type, path);
        Types.MapType map = type.asMapType();
        for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
          checkValue(map.keyType(), true, entry.getKey(), path + ".key");
          checkValue(map.valueType(), map.isValueRequired(), entry.getValue(), path + ".value");
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

  private static void expect(Object value, Class<?> javaClass, Type type, String path) {
    if (!javaClass.isInstance(value)) {
      throw new InvalidRecordException(
          path,
          "expected " + type + " as " + javaClass.getSimpleName() + ", got " + value.getClass().getName()
              + " (" + abbreviate(value) + ")");
    }
  }

  private static void checkFixed(Types.FixedType type, Object value, String path) {
    expect(value, byte[].class, type, path);
    int length = ((byte[]) value).length;
    if (length != type.length()) {
      throw new InvalidRecordException(path, "expected " + type + ", got " + length + " bytes");
    }
  }

  private static void checkDecimal(Types.DecimalType type, Object value, String path) {
    expect(value, BigDecimal.class, type, path);
    BigDecimal decimal = (BigDecimal) value;
    if (decimal.scale() != type.scale()) {
      throw new InvalidRecordException(
          path, "decimal " + decimal.toPlainString() + " has scale " + decimal.scale() + ", " + type
              + " needs scale " + type.scale() + " (rescale it with setScale)");
    }
    if (decimal.precision() > type.precision()) {
      throw new InvalidRecordException(
          path, "decimal " + decimal.toPlainString() + " overflows " + type + " (precision "
              + decimal.precision() + " > " + type.precision() + ")");
    }
  }

  private static String abbreviate(Object value) {
    String text = String.valueOf(value);
    return text.length() <= 64 ? text : text.substring(0, 61) + "...";
  }
}
