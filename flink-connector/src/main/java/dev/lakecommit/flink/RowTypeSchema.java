package dev.lakecommit.flink;

import java.util.ArrayList;
import java.util.List;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.MultisetType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * The Iceberg schema of a table made for rows of a Flink row type, as Iceberg's own Flink connector maps the types:
 * TINYINT and SMALLINT become int, CHAR and VARCHAR string, BINARY and VARBINARY binary, TIMESTAMP timestamp and
 * TIMESTAMP_LTZ timestamptz (microseconds), ROW struct, ARRAY list, MAP and
 * MULTISET map; a NOT NULL type is a required field. Field ids are numbered in order; the catalog assigns its own
 * when the table is created.
 */
final class RowTypeSchema {
  private int lastId;

  private RowTypeSchema() {}

  /**
   * @throws IllegalArgumentException naming the column whose type has no Iceberg counterpart
   */
  static Schema of(RowType rowType) {
    RowTypeSchema ids = new RowTypeSchema();
    return new Schema(ids.fields(rowType, ""));
  }

  private List<Types.NestedField> fields(RowType row, String path) {
    List<Integer> ids = new ArrayList<>();
    for (int i = 0; i < row.getFieldCount(); i++) {
      ids.add(++lastId);
    }
    List<Types.NestedField> fields = new ArrayList<>();
    for (int i = 0; i < row.getFieldCount(); i++) {
      RowType.RowField field = row.getFields().get(i);
      String column = path + field.getName();
      Type type = type(field.getType(), column);
      fields.add(field.getType().isNullable() ? Types.NestedField.optional(ids.get(i), field.getName(), type)
          : Types.NestedField.required(ids.get(i), field.getName(), type));
    }
    return fields;
  }

  private Type type(LogicalType flink, String column) {
    switch (flink.getTypeRoot()) {
      case BOOLEAN:
        return Types.BooleanType.get();
      case TINYINT:
      case SMALLINT:
      case INTEGER:
        return Types.IntegerType.get();
      case BIGINT:
        return Types.LongType.get();
      case FLOAT:
        return Types.FloatType.get();
      case DOUBLE:
        return Types.DoubleType.get();
      case DECIMAL:
        DecimalType decimal = (DecimalType) flink;
        return Types.DecimalType.of(decimal.getPrecision(), decimal.getScale());
      case CHAR:
      case VARCHAR:
        return Types.StringType.get();
      case BINARY:
      case VARBINARY:
        return Types.BinaryType.get();
      case DATE:
        return Types.DateType.get();
      case TIME_WITHOUT_TIME_ZONE:
        return Types.TimeType.get();
      case TIMESTAMP_WITHOUT_TIME_ZONE:
        return Types.TimestampType.withoutZone();
      case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
        return Types.TimestampType.withZone();
      case ROW:
        return Types.StructType.of(fields((RowType) flink, column + "."));
      case ARRAY:
        LogicalType element = ((ArrayType) flink).getElementType();
        int elementId = ++lastId;
        Type elementType = type(element, column + ".element");
        return element.isNullable() ? Types.ListType.ofOptional(elementId, elementType)
            : Types.ListType.ofRequired(elementId, elementType);
      case MAP:
        MapType map = (MapType) flink;
        return mapOf(map.getKeyType(), map.getValueType(), column);
      case MULTISET:
        return mapOf(((MultisetType) flink).getElementType(), new org.apache.flink.table.types.logical.IntType(false),
            column);
      default:
        throw new IllegalArgumentException(String.format("Column '%s': Flink type %s has no Iceberg type to create a"
            + " table with; give the table's schema (IcebergTables.Builder#schemas)", column, flink));
    }
  }

  private Type mapOf(LogicalType key, LogicalType value, String column) {
    int keyId = ++lastId;
    int valueId = ++lastId;
    Type keyType = type(key, column + ".key");
    Type valueType = type(value, column + ".value");
    return value.isNullable() ? Types.MapType.ofOptional(keyId, valueId, keyType, valueType)
        : Types.MapType.ofRequired(keyId, valueId, keyType, valueType);
  }
}
