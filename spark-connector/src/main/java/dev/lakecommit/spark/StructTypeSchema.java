package dev.lakecommit.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
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
 * The Iceberg schema of a table made for a DataFrame, as Iceberg's Spark integration maps the types: byte and short
 * become int, timestamp timestamptz and timestamp_ntz timestamp, struct, array and map their Iceberg kin; a column
 * that is not nullable is a required field. Field ids are numbered in order; the catalog assigns its own when the
 * table is created.
 */
final class StructTypeSchema {
  private int lastId;

  private StructTypeSchema() {}

  /**
   * @throws IllegalArgumentException naming the column whose type has no Iceberg counterpart
   */
  static Schema of(StructType struct) {
    return new Schema(new StructTypeSchema().fields(struct, ""));
  }

  private List<Types.NestedField> fields(StructType struct, String path) {
    StructField[] columns = struct.fields();
    int first = lastId + 1;
    lastId += columns.length;
    List<Types.NestedField> fields = new ArrayList<>();
    for (int i = 0; i < columns.length; i++) {
      StructField column = columns[i];
      Type type = type(column.dataType(), path + column.name());
      fields.add(Types.NestedField.of(first + i, column.nullable(), column.name(), type));
    }
    return fields;
  }

  private Type type(DataType spark, String column) {
    if (spark instanceof BooleanType) {
      return Types.BooleanType.get();
    } else if (spark instanceof ByteType || spark instanceof ShortType || spark instanceof IntegerType) {
      return Types.IntegerType.get();
    } else if (spark instanceof LongType) {
      return Types.LongType.get();
    } else if (spark instanceof FloatType) {
      return Types.FloatType.get();
    } else if (spark instanceof DoubleType) {
      return Types.DoubleType.get();
    } else if (spark instanceof DecimalType decimal) {
      return Types.DecimalType.of(decimal.precision(), decimal.scale());
    } else if (spark instanceof StringType) {
      return Types.StringType.get();
    } else if (spark instanceof BinaryType) {
      return Types.BinaryType.get();
    } else if (spark instanceof DateType) {
      return Types.DateType.get();
    } else if (spark instanceof TimestampType) {
      return Types.TimestampType.withZone();
    } else if (spark instanceof TimestampNTZType) {
      return Types.TimestampType.withoutZone();
    } else if (spark instanceof StructType struct) {
      return Types.StructType.of(fields(struct, column + "."));
    } else if (spark instanceof ArrayType array) {
      int elementId = ++lastId;
      Type element = type(array.elementType(), column + ".element");
      return array.containsNull() ? Types.ListType.ofOptional(elementId, element)
          : Types.ListType.ofRequired(elementId, element);
    } else if (spark instanceof MapType map) {
      int keyId = ++lastId;
      int valueId = ++lastId;
      Type key = type(map.keyType(), column + ".key");
      Type value = type(map.valueType(), column + ".value");
      return map.valueContainsNull() ? Types.MapType.ofOptional(keyId, valueId, key, value)
          : Types.MapType.ofRequired(keyId, valueId, key, value);
    }
    throw new IllegalArgumentException(String.format("Column '%s': Spark type %s has no Iceberg type to create a"
        + " table with; give the table's schema (SparkTables.Builder#schemas)", column, spark.simpleString()));
  }
}
