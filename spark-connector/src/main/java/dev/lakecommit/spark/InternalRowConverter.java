package dev.lakecommit.spark;

import dev.lakecommit.staging.InputConverter;
import dev.lakecommit.staging.InvalidRecordException;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Copies Spark's {@link InternalRow} into an Iceberg generic {@link Record} of the target schema, matching columns
 * by name (case-insensitive, as Spark and Hive resolve them). One copy per row: the staging writer writes Iceberg
 * generic records. Every column pairing is checked once, when the converter is built, so a mismatch fails before
 * any row is written, naming the column and both types.
 */
final class InternalRowConverter implements InputConverter<InternalRow> {

  /** Reads one value at an ordinal of a row or an array, already known not to be null. */
  @FunctionalInterface
  private interface Reader {
    Object read(SpecializedGetters data, int ordinal);
  }

  private final Types.StructType target;
  private final int[] sourceOrdinals;
  private final Reader[] readers;
  private final String[] names;

  private InternalRowConverter(StructType source, Types.StructType target, String where) {
    this.target = target;
    List<Types.NestedField> fields = target.fields();
    this.sourceOrdinals = new int[fields.size()];
    this.readers = new Reader[fields.size()];
    this.names = new String[fields.size()];
    Map<String, Integer> byName = new LinkedHashMap<>();
    StructField[] sourceFields = source.fields();
    for (int i = 0; i < sourceFields.length; i++) {
      byName.put(sourceFields[i].name().toLowerCase(Locale.ROOT), i);
    }
    for (int i = 0; i < fields.size(); i++) {
      Types.NestedField field = fields.get(i);
      Integer ordinal = byName.remove(field.name().toLowerCase(Locale.ROOT));
      names[i] = field.name();
      if (ordinal == null) {
        if (field.isRequired()) {
          throw new IllegalArgumentException(String.format(
              "Missing column '%s' for %s: the column is required, the DataFrame has no such column (columns: %s)",
              field.name(), where, String.join(", ", source.fieldNames())));
        }
        sourceOrdinals[i] = -1;
      } else {
        sourceOrdinals[i] = ordinal;
        readers[i] = reader(sourceFields[ordinal].dataType(), field.type(), where + " column '" + field.name() + "'");
      }
    }
    if (!byName.isEmpty()) {
      List<String> extra = new ArrayList<>();
      byName.values().forEach(ordinal -> extra.add(sourceFields[ordinal].name()));
      throw new IllegalArgumentException(String.format(
          "Unknown columns %s for %s: the DataFrame has columns the target does not (target columns: %s);"
              + " select only the target's columns", extra, where, target.fields().stream()
              .map(Types.NestedField::name).toList()));
    }
  }

  /**
   * @param where what the target is, for messages ({@code Iceberg table db.t})
   * @throws IllegalArgumentException if a column is missing, unknown or of a type that cannot be converted
   */
  static InternalRowConverter of(StructType source, Schema target, String where) {
    return new InternalRowConverter(source, target.asStruct(), where);
  }

  @Override
  public Record convert(InternalRow row) {
    return toRecord(row);
  }

  private Record toRecord(InternalRow row) {
    GenericRecord record = GenericRecord.create(target);
    for (int i = 0; i < readers.length; i++) {
      int ordinal = sourceOrdinals[i];
      if (ordinal >= 0 && !row.isNullAt(ordinal)) {
        try {
          record.set(i, readers[i].read(row, ordinal));
        } catch (RuntimeException e) {
          InvalidRecordException invalid = new InvalidRecordException(names[i], String.valueOf(e.getMessage()));
          invalid.initCause(e);
          throw invalid;
        }
      }
    }
    return record;
  }

  private static Reader reader(DataType source, Type target, String where) {
    switch (target.typeId()) {
      case BOOLEAN:
        if (source instanceof BooleanType) {
          return SpecializedGetters::getBoolean;
        }
        break;
      case INTEGER:
        if (source instanceof IntegerType) {
          return SpecializedGetters::getInt;
        } else if (source instanceof ShortType) {
          return (d, i) -> (int) d.getShort(i);
        } else if (source instanceof ByteType) {
          return (d, i) -> (int) d.getByte(i);
        }
        break;
      case LONG:
        if (source instanceof LongType) {
          return SpecializedGetters::getLong;
        } else if (source instanceof IntegerType) {
          return (d, i) -> (long) d.getInt(i);
        } else if (source instanceof ShortType) {
          return (d, i) -> (long) d.getShort(i);
        } else if (source instanceof ByteType) {
          return (d, i) -> (long) d.getByte(i);
        }
        break;
      case FLOAT:
        if (source instanceof FloatType) {
          return SpecializedGetters::getFloat;
        }
        break;
      case DOUBLE:
        if (source instanceof DoubleType) {
          return SpecializedGetters::getDouble;
        } else if (source instanceof FloatType) {
          return (d, i) -> (double) d.getFloat(i);
        }
        break;
      case STRING:
        if (source instanceof StringType) {
          return (d, i) -> d.getUTF8String(i).toString();
        }
        break;
      case BINARY:
        if (source instanceof BinaryType) {
          return (d, i) -> ByteBuffer.wrap(d.getBinary(i));
        }
        break;
      case FIXED:
        if (source instanceof BinaryType) {
          return SpecializedGetters::getBinary;
        }
        break;
      case DECIMAL:
        if (source instanceof DecimalType decimal) {
          int precision = decimal.precision();
          int scale = decimal.scale();
          int targetScale = ((Types.DecimalType) target).scale();
          if (scale == targetScale && precision <= ((Types.DecimalType) target).precision()) {
            return (d, i) -> d.getDecimal(i, precision, scale).toJavaBigDecimal();
          }
        }
        break;
      case DATE:
        if (source instanceof DateType) {
          return (d, i) -> LocalDate.ofEpochDay(d.getInt(i));
        }
        break;
      case TIMESTAMP:
        boolean withZone = ((Types.TimestampType) target).shouldAdjustToUTC();
        if (source instanceof TimestampType && withZone) {
          return (d, i) -> OffsetDateTime.ofInstant(micros(d.getLong(i)), ZoneOffset.UTC);
        } else if (source instanceof TimestampNTZType && !withZone) {
          return (d, i) -> LocalDateTime.ofInstant(micros(d.getLong(i)), ZoneOffset.UTC);
        }
        break;
      case STRUCT:
        if (source instanceof StructType struct) {
          InternalRowConverter nested = new InternalRowConverter(struct, target.asStructType(), where);
          return (d, i) -> nested.toRecord(d.getStruct(i, struct.size()));
        }
        break;
      case LIST:
        if (source instanceof ArrayType array) {
          Reader element = reader(array.elementType(), target.asListType().elementType(), where + " element");
          return (d, i) -> list(d.getArray(i), element);
        }
        break;
      case MAP:
        if (source instanceof MapType map) {
          Reader key = reader(map.keyType(), target.asMapType().keyType(), where + " key");
          Reader value = reader(map.valueType(), target.asMapType().valueType(), where + " value");
          return (d, i) -> map(d.getMap(i), key, value);
        }
        break;
      default:
        break;
    }
    throw new IllegalArgumentException(String.format(
        "Cannot write Spark type %s to %s of type %s", source.simpleString(), where, target));
  }

  private static Instant micros(long micros) {
    return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
  }

  private static List<Object> list(ArrayData array, Reader element) {
    List<Object> out = new ArrayList<>(array.numElements());
    for (int i = 0; i < array.numElements(); i++) {
      out.add(array.isNullAt(i) ? null : element.read(array, i));
    }
    return out;
  }

  private static Map<Object, Object> map(MapData map, Reader key, Reader value) {
    ArrayData keys = map.keyArray();
    ArrayData values = map.valueArray();
    Map<Object, Object> out = new LinkedHashMap<>();
    for (int i = 0; i < map.numElements(); i++) {
      out.put(key.read(keys, i), values.isNullAt(i) ? null : value.read(values, i));
    }
    return out;
  }
}
