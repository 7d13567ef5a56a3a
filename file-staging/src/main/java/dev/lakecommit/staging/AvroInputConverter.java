package dev.lakecommit.staging;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.avro.UnresolvedUnionException;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericFixed;
import org.apache.avro.generic.IndexedRecord;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.DateTimeUtil;

/**
 * Converts Avro generic records to Iceberg generic records of a table schema. Fields are matched by name (Avro
 * fields without a table field are ignored; table fields without an Avro field are null). Values may be Avro's
 * raw representation (Utf8, ByteBuffer/GenericFixed decimals, int dates, long micros/millis per logical type) or
 * the java.time / BigDecimal / UUID objects of Avro's logical-type conversions. A long timestamp without a
 * logical type is taken as microseconds, Iceberg's unit. Widening int→long and float→double is allowed, and a
 * boolean or number from an Avro union of primitives is its text in a string field (the union's widest type).
 */
public final class AvroInputConverter implements InputConverter<org.apache.avro.generic.GenericRecord> {
  private final Schema schema;
  private final Map<Types.StructType, GenericRecord> templates = new IdentityHashMap<>();

  public AvroInputConverter(Schema schema) {
    this.schema = Objects.requireNonNull(schema, "schema");
  }

  @Override
  public Record convert(org.apache.avro.generic.GenericRecord input) {
    if (input == null) {
      throw new InvalidRecordException("<record>", "null record");
    }
    return convertStruct(schema.asStruct(), input, "");
  }

  private Record convertStruct(Types.StructType type, IndexedRecord avro, String prefix) {
    GenericRecord result = templates.computeIfAbsent(type, GenericRecord::create).copy();
    org.apache.avro.Schema avroSchema = avro.getSchema();
    List<Types.NestedField> fields = type.fields();
    for (int i = 0; i < fields.size(); i++) {
      Types.NestedField field = fields.get(i);
      org.apache.avro.Schema.Field avroField = avroSchema.getField(field.name());
      if (avroField != null) {
        Object value = avro.get(avroField.pos());
        result.set(i, convert(field.type(), avroField.schema(), value, prefix + field.name()));
      }
    }
    return result;
  }

  private Object convert(Type type, org.apache.avro.Schema avroSchema, Object value, String path) {
    if (value == null) {
      return null;
    }
    org.apache.avro.Schema avro = branch(avroSchema, value, path);
    switch (type.typeId()) {
      case BOOLEAN:
        return expect(value, Boolean.class, type, path);
      case INTEGER:
        return expect(value, Integer.class, type, path);
      case LONG:
        return value instanceof Integer i ? Long.valueOf(i) : expect(value, Long.class, type, path);
      case FLOAT:
        return expect(value, Float.class, type, path);
      case DOUBLE:
        return value instanceof Float f ? Double.valueOf(f) : expect(value, Double.class, type, path);
      case STRING:
        if (value instanceof CharSequence || value instanceof GenericData.EnumSymbol) {
          return value.toString();
        }
        if (avroSchema.getType() == org.apache.avro.Schema.Type.UNION
            && (value instanceof Number || value instanceof Boolean)) {
          return value.toString(); // a union of primitives read as its widest type, string
        }
        throw mismatch(type, value, path);
      case UUID:
        return uuid(value, type, path);
      case BINARY:
        return ByteBuffer.wrap(bytes(value, type, path));
      case FIXED:
        return bytes(value, type, path);
      case DECIMAL:
        return decimal((Types.DecimalType) type, avro, value, path);
      case DATE:
        if (value instanceof Integer days) {
          return LocalDate.ofEpochDay(days);
        }
        return expect(value, LocalDate.class, type, path);
      case TIME:
        return time(avro, value, type, path);
      case TIMESTAMP:
        return timestamp(((Types.TimestampType) type).shouldAdjustToUTC(), avro, value, type, path);
      case STRUCT:
        if (value instanceof IndexedRecord nested) {
          return convertStruct(type.asStructType(), nested, path + ".");
        }
        throw mismatch(type, value, path);
      case LIST:
        return list(type.asListType(), avro, value, path);
      case MAP:
        return map(type.asMapType(), avro, value, path);
      default:
        return value;
    }
  }

  private static org.apache.avro.Schema branch(org.apache.avro.Schema schema, Object value, String path) {
    if (schema.getType() != org.apache.avro.Schema.Type.UNION) {
      return schema;
    }
    try {
      return schema.getTypes().get(GenericData.get().resolveUnion(schema, value));
    } catch (UnresolvedUnionException e) {
      throw new InvalidRecordException(
          path, "value " + abbreviate(value) + " (" + value.getClass().getName() + ") is none of the Avro union "
              + schema);
    }
  }

  private static UUID uuid(Object value, Type type, String path) {
    if (value instanceof UUID uuid) {
      return uuid;
    }
    if (value instanceof CharSequence text) {
      try {
        return UUID.fromString(text.toString());
      } catch (IllegalArgumentException e) {
        throw new InvalidRecordException(path, "'" + text + "' is not a UUID");
      }
    }
    byte[] bytes = bytes(value, type, path);
    if (bytes.length != 16) {
      throw new InvalidRecordException(path, "expected 16 bytes for a UUID, got " + bytes.length);
    }
    ByteBuffer buffer = ByteBuffer.wrap(bytes);
    return new UUID(buffer.getLong(), buffer.getLong());
  }

  private static byte[] bytes(Object value, Type type, String path) {
    if (value instanceof ByteBuffer buffer) {
      return ColumnMetrics.bytesOf(buffer);
    }
    if (value instanceof GenericFixed fixed) {
      return fixed.bytes().clone();
    }
    if (value instanceof byte[] array) {
      return array.clone();
    }
    throw mismatch(type, value, path);
  }

  private static BigDecimal decimal(
      Types.DecimalType type, org.apache.avro.Schema avro, Object value, String path) {
    if (value instanceof BigDecimal decimal) {
      return decimal;
    }
    LogicalType logical = avro.getLogicalType();
    if (!(logical instanceof LogicalTypes.Decimal avroDecimal)) {
      throw new InvalidRecordException(
          path, "expected " + type + ", got Avro " + avro.getType() + " without a decimal logical type");
    }
    return new BigDecimal(new BigInteger(bytes(value, type, path)), avroDecimal.getScale());
  }

  private static LocalTime time(org.apache.avro.Schema avro, Object value, Type type, String path) {
    if (value instanceof LocalTime time) {
      return time;
    }
    if (value instanceof Integer millis) {
      return LocalTime.ofNanoOfDay(millis * 1_000_000L);
    }
    if (value instanceof Long micros) {
      return LocalTime.ofNanoOfDay(micros * 1_000L);
    }
    throw mismatch(type, value, path);
  }

  private static Object timestamp(
      boolean withZone, org.apache.avro.Schema avro, Object value, Type type, String path) {
    long micros;
    if (value instanceof Long raw) {
      LogicalType logical = avro.getLogicalType();
      if (logical instanceof LogicalTypes.TimestampMillis || logical instanceof LogicalTypes.LocalTimestampMillis) {
        micros = Math.multiplyExact(raw, 1_000L);
      } else if (logical instanceof LogicalTypes.TimestampNanos
          || logical instanceof LogicalTypes.LocalTimestampNanos) {
        micros = Math.floorDiv(raw, 1_000L);
      } else {
        micros = raw;
      }
    } else if (value instanceof Instant instant) {
      micros = DateTimeUtil.microsFromInstant(instant);
    } else if (value instanceof LocalDateTime local) {
      micros = DateTimeUtil.microsFromTimestamp(local);
    } else if (value instanceof OffsetDateTime offset) {
      micros = DateTimeUtil.microsFromTimestamptz(offset);
    } else {
      throw mismatch(type, value, path);
    }
    return withZone
        ? DateTimeUtil.timestamptzFromMicros(micros)
        : DateTimeUtil.timestampFromMicros(micros);
  }

  private List<Object> list(Types.ListType type, org.apache.avro.Schema avro, Object value, String path) {
    if (!(value instanceof Collection<?> elements) || avro.getType() != org.apache.avro.Schema.Type.ARRAY) {
      throw mismatch(type, value, path);
    }
    List<Object> result = new ArrayList<>(elements.size());
    for (Object element : elements) {
      result.add(convert(type.elementType(), avro.getElementType(), element, path + ".element"));
    }
    return result;
  }

  private Map<Object, Object> map(Types.MapType type, org.apache.avro.Schema avro, Object value, String path) {
    if (!(value instanceof Map<?, ?> entries) || avro.getType() != org.apache.avro.Schema.Type.MAP) {
      throw mismatch(type, value, path);
    }
    org.apache.avro.Schema keySchema = org.apache.avro.Schema.create(org.apache.avro.Schema.Type.STRING);
    Map<Object, Object> result = new LinkedHashMap<>();
    for (Map.Entry<?, ?> entry : entries.entrySet()) {
      result.put(
          convert(type.keyType(), keySchema, entry.getKey(), path + ".key"),
          convert(type.valueType(), avro.getValueType(), entry.getValue(), path + ".value"));
    }
    return result;
  }

  private static Object expect(Object value, Class<?> javaClass, Type type, String path) {
    if (!javaClass.isInstance(value)) {
      throw mismatch(type, value, path);
    }
    return value;
  }

  private static InvalidRecordException mismatch(Type type, Object value, String path) {
    return new InvalidRecordException(
        path, "expected " + type + ", got " + value.getClass().getName() + " (" + abbreviate(value) + ")");
  }

  private static String abbreviate(Object value) {
    String text = String.valueOf(value);
    return text.length() <= 64 ? text : text.substring(0, 61) + "...";
  }
}
