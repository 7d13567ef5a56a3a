package dev.lakecommit.flink;

import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.MapData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.MultisetType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * Converters from Flink's internal values ({@code StringData}, {@code TimestampData}, epoch-day ints...) to the
 * Java classes of Iceberg's generic data model, chosen once per column from the Flink and the Iceberg type. A
 * pair that cannot be written is refused when the converter is built, with the column in the message.
 */
final class RowDataConversions {
  private RowDataConversions() {}

  /** Which Flink field each Iceberg field reads: by name, or -1 when the Flink row has no such column. */
  static int[] positions(RowType rowType, Types.StructType struct, boolean ignoreCase, String path) {
    List<String> names = rowType.getFieldNames();
    int[] positions = new int[struct.fields().size()];
    for (int i = 0; i < positions.length; i++) {
      Types.NestedField field = struct.fields().get(i);
      positions[i] = -1;
      for (int j = 0; j < names.size(); j++) {
        String name = names.get(j);
        if (ignoreCase ? name.equalsIgnoreCase(field.name()) : name.equals(field.name())) {
          positions[i] = j;
          break;
        }
      }
      if (positions[i] < 0 && field.isRequired()) {
        throw new IllegalArgumentException(String.format(
            "Column '%s%s' is required by the table but missing from the Flink row type %s",
            path, field.name(), rowType));
      }
    }
    return positions;
  }

  /** A converter of one Flink internal value (never null) to Iceberg's generic representation of {@code type}. */
  static Function<Object, Object> converter(LogicalType flink, Type iceberg, boolean ignoreCase, String column) {
    LogicalTypeRoot root = flink.getTypeRoot();
    switch (iceberg.typeId()) {
      case BOOLEAN:
        require(root == LogicalTypeRoot.BOOLEAN, flink, iceberg, column);
        return v -> v;
      case INTEGER:
        require(root == LogicalTypeRoot.INTEGER || root == LogicalTypeRoot.SMALLINT
            || root == LogicalTypeRoot.TINYINT, flink, iceberg, column);
        return root == LogicalTypeRoot.INTEGER ? v -> v : v -> ((Number) v).intValue();
      case LONG:
        require(root == LogicalTypeRoot.BIGINT || root == LogicalTypeRoot.INTEGER
            || root == LogicalTypeRoot.SMALLINT || root == LogicalTypeRoot.TINYINT, flink, iceberg, column);
        return root == LogicalTypeRoot.BIGINT ? v -> v : v -> ((Number) v).longValue();
      case FLOAT:
        require(root == LogicalTypeRoot.FLOAT, flink, iceberg, column);
        return v -> v;
      case DOUBLE:
        require(root == LogicalTypeRoot.DOUBLE || root == LogicalTypeRoot.FLOAT, flink, iceberg, column);
        return root == LogicalTypeRoot.DOUBLE ? v -> v : v -> ((Number) v).doubleValue();
      case DATE:
        require(root == LogicalTypeRoot.DATE, flink, iceberg, column);
        return v -> LocalDate.ofEpochDay((Integer) v);
      case TIME:
        require(root == LogicalTypeRoot.TIME_WITHOUT_TIME_ZONE, flink, iceberg, column);
        return v -> LocalTime.ofNanoOfDay((Integer) v * 1_000_000L);
      case TIMESTAMP:
      case TIMESTAMP_NANO:
        return timestamp(flink, iceberg, column);
      case STRING:
        require(root == LogicalTypeRoot.VARCHAR || root == LogicalTypeRoot.CHAR, flink, iceberg, column);
        return v -> ((StringData) v).toString();
      case UUID:
        require(root == LogicalTypeRoot.BINARY || root == LogicalTypeRoot.VARBINARY, flink, iceberg, column);
        return v -> uuid((byte[]) v, column);
      case FIXED:
        require(root == LogicalTypeRoot.BINARY || root == LogicalTypeRoot.VARBINARY, flink, iceberg, column);
        return v -> v;
      case BINARY:
        require(root == LogicalTypeRoot.BINARY || root == LogicalTypeRoot.VARBINARY, flink, iceberg, column);
        return v -> ByteBuffer.wrap((byte[]) v);
      case DECIMAL:
        require(root == LogicalTypeRoot.DECIMAL
            && ((DecimalType) flink).getScale() == ((Types.DecimalType) iceberg).scale(), flink, iceberg, column);
        return v -> ((DecimalData) v).toBigDecimal();
      case STRUCT:
        require(root == LogicalTypeRoot.ROW, flink, iceberg, column);
        return struct((RowType) flink, iceberg.asStructType(), ignoreCase, column);
      case LIST:
        require(root == LogicalTypeRoot.ARRAY, flink, iceberg, column);
        return list(((ArrayType) flink).getElementType(), iceberg.asListType(), ignoreCase, column);
      case MAP:
        require(root == LogicalTypeRoot.MAP || root == LogicalTypeRoot.MULTISET, flink, iceberg, column);
        return map(flink, iceberg.asMapType(), ignoreCase, column);
      default:
        throw new IllegalArgumentException(String.format(
            "Column '%s': Iceberg type %s is not supported by the Flink sink", column, iceberg));
    }
  }

  private static Function<Object, Object> timestamp(LogicalType flink, Type iceberg, String column) {
    boolean utc = iceberg instanceof Types.TimestampType ts
        ? ts.shouldAdjustToUTC()
        : ((Types.TimestampNanoType) iceberg).shouldAdjustToUTC();
    LogicalTypeRoot root = flink.getTypeRoot();
    if (utc) {
      require(root == LogicalTypeRoot.TIMESTAMP_WITH_LOCAL_TIME_ZONE, flink, iceberg, column);
      return v -> OffsetDateTime.ofInstant(((TimestampData) v).toInstant(), ZoneOffset.UTC);
    }
    require(root == LogicalTypeRoot.TIMESTAMP_WITHOUT_TIME_ZONE, flink, iceberg, column);
    return v -> ((TimestampData) v).toLocalDateTime();
  }

  private static Function<Object, Object> struct(
      RowType rowType, Types.StructType struct, boolean ignoreCase, String column) {
    int[] positions = positions(rowType, struct, ignoreCase, column + ".");
    int size = positions.length;
    RowData.FieldGetter[] getters = new RowData.FieldGetter[size];
    List<Function<Object, Object>> converters = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      Types.NestedField field = struct.fields().get(i);
      if (positions[i] >= 0) {
        LogicalType type = rowType.getTypeAt(positions[i]);
        getters[i] = RowData.createFieldGetter(type, positions[i]);
        converters.add(converter(type, field.type(), ignoreCase, column + "." + field.name()));
      } else {
        converters.add(null);
      }
    }
    return v -> {
      RowData row = (RowData) v;
      GenericRecord record = GenericRecord.create(struct);
      for (int i = 0; i < size; i++) {
        Object value = getters[i] == null ? null : getters[i].getFieldOrNull(row);
        record.set(i, value == null ? null : converters.get(i).apply(value));
      }
      return record;
    };
  }

  private static Function<Object, Object> list(
      LogicalType elementType, Types.ListType list, boolean ignoreCase, String column) {
    ArrayData.ElementGetter getter = ArrayData.createElementGetter(elementType);
    Function<Object, Object> element = converter(elementType, list.elementType(), ignoreCase, column + ".element");
    return v -> {
      ArrayData array = (ArrayData) v;
      List<Object> values = new ArrayList<>(array.size());
      for (int i = 0; i < array.size(); i++) {
        Object value = getter.getElementOrNull(array, i);
        values.add(value == null ? null : element.apply(value));
      }
      return values;
    };
  }

  private static Function<Object, Object> map(
      LogicalType flink, Types.MapType map, boolean ignoreCase, String column) {
    LogicalType keyType = flink instanceof MapType m ? m.getKeyType() : ((MultisetType) flink).getElementType();
    LogicalType valueType = flink instanceof MapType m ? m.getValueType() : new org.apache.flink.table.types.logical
        .IntType(false);
    Function<Object, Object> keys = list(keyType, Types.ListType.ofRequired(0, map.keyType()), ignoreCase,
        column + ".key");
    Function<Object, Object> values = list(valueType, Types.ListType.ofOptional(0, map.valueType()), ignoreCase,
        column + ".value");
    return v -> {
      MapData data = (MapData) v;
      List<?> k = (List<?>) keys.apply(data.keyArray());
      List<?> val = (List<?>) values.apply(data.valueArray());
      Map<Object, Object> result = new LinkedHashMap<>(Math.max(4, k.size() * 2));
      for (int i = 0; i < k.size(); i++) {
        result.put(k.get(i), val.get(i));
      }
      return result;
    };
  }

  private static UUID uuid(byte[] bytes, String column) {
    if (bytes.length != 16) {
      throw new IllegalArgumentException(String.format(
          "Column '%s': a UUID needs 16 bytes, got %s", column, bytes.length));
    }
    ByteBuffer buffer = ByteBuffer.wrap(bytes);
    return new UUID(buffer.getLong(), buffer.getLong());
  }

  private static void require(boolean compatible, LogicalType flink, Type iceberg, String column) {
    if (!compatible) {
      throw new IllegalArgumentException(String.format(
          "Column '%s': Flink type %s cannot be written to Iceberg type %s", column,
          flink.asSummaryString().toUpperCase(Locale.ROOT), iceberg));
    }
  }
}
