package dev.lakecommit.ingest.source;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;

/**
 * Avro schemas that Iceberg's own Avro reader does not take: enums, read as strings, and unions of several
 * primitive types ({@code ["null", "string", "long"]}), read as their widest type: {@code long} for ints and
 * longs, {@code double} for floats and doubles, {@code string} for any other mix of booleans, numbers and strings
 * (values written as text). Other unions (records, arrays, maps, bytes or logical types mixed with other types)
 * are refused, naming the field.
 */
final class AvroTypes {
  private AvroTypes() {}

  /** Whether the schema holds an enum or a union of more than one non-null type anywhere. */
  static boolean needsConversion(org.apache.avro.Schema schema) {
    return needs(schema, new java.util.IdentityHashMap<>());
  }

  private static boolean needs(org.apache.avro.Schema schema, java.util.IdentityHashMap<Object, Boolean> seen) {
    if (seen.put(schema, Boolean.TRUE) != null) {
      return false;
    }
    switch (schema.getType()) {
      case ENUM:
        return true;
      case UNION:
        if (nonNull(schema).size() > 1) {
          return true;
        }
        return schema.getTypes().stream().anyMatch(branch -> needs(branch, seen));
      case RECORD:
        return schema.getFields().stream().anyMatch(field -> needs(field.schema(), seen));
      case ARRAY:
        return needs(schema.getElementType(), seen);
      case MAP:
        return needs(schema.getValueType(), seen);
      default:
        return false;
    }
  }

  /**
   * The Iceberg schema of an Avro record schema, enums as strings and unions of primitives as their widest type.
   *
   * @throws IllegalArgumentException naming the field of a union that has no widest type
   */
  static Schema toIceberg(org.apache.avro.Schema record) {
    int[] ids = {1};
    return TypeUtil.assignIncreasingFreshIds(new Schema(struct(record, null, ids).fields()));
  }

  private static Types.StructType struct(org.apache.avro.Schema record, String prefix, int[] ids) {
    List<Types.NestedField> fields = new ArrayList<>();
    for (org.apache.avro.Schema.Field field : record.getFields()) {
      String path = prefix == null ? field.name() : prefix + "." + field.name();
      Type type = type(field.schema(), path, ids);
      fields.add(nullable(field.schema())
          ? Types.NestedField.optional(ids[0]++, field.name(), type)
          : Types.NestedField.required(ids[0]++, field.name(), type));
    }
    return Types.StructType.of(fields);
  }

  private static boolean nullable(org.apache.avro.Schema schema) {
    return schema.getType() == org.apache.avro.Schema.Type.NULL
        || (schema.getType() == org.apache.avro.Schema.Type.UNION
            && schema.getTypes().stream().anyMatch(b -> b.getType() == org.apache.avro.Schema.Type.NULL));
  }

  private static List<org.apache.avro.Schema> nonNull(org.apache.avro.Schema union) {
    return union.getTypes().stream().filter(b -> b.getType() != org.apache.avro.Schema.Type.NULL).toList();
  }

  private static Type type(org.apache.avro.Schema schema, String path, int[] ids) {
    switch (schema.getType()) {
      case UNION: {
        List<org.apache.avro.Schema> branches = nonNull(schema);
        if (branches.isEmpty()) {
          return Types.StringType.get(); // only null: a column of nulls
        }
        if (branches.size() == 1) {
          return type(branches.get(0), path, ids);
        }
        return widest(schema, branches, path);
      }
      case RECORD:
        return struct(schema, path, ids);
      case ARRAY:
        return nullable(schema.getElementType())
            ? Types.ListType.ofOptional(ids[0]++, type(schema.getElementType(), path + "[]", ids))
            : Types.ListType.ofRequired(ids[0]++, type(schema.getElementType(), path + "[]", ids));
      case MAP: {
        int keyId = ids[0]++;
        int valueId = ids[0]++;
        Type value = type(schema.getValueType(), path + ".value", ids);
        return nullable(schema.getValueType())
            ? Types.MapType.ofOptional(keyId, valueId, Types.StringType.get(), value)
            : Types.MapType.ofRequired(keyId, valueId, Types.StringType.get(), value);
      }
      default:
        return primitive(schema);
    }
  }

  private static Type primitive(org.apache.avro.Schema schema) {
    LogicalType logical = schema.getLogicalType();
    switch (schema.getType()) {
      case ENUM:
      case NULL:
        return Types.StringType.get();
      case STRING:
        return logical instanceof LogicalTypes.Uuid ? Types.UUIDType.get() : Types.StringType.get();
      case BOOLEAN:
        return Types.BooleanType.get();
      case INT:
        if (logical instanceof LogicalTypes.Date) {
          return Types.DateType.get();
        } else if (logical instanceof LogicalTypes.TimeMillis) {
          return Types.TimeType.get();
        }
        return Types.IntegerType.get();
      case LONG:
        if (logical instanceof LogicalTypes.TimestampMillis || logical instanceof LogicalTypes.TimestampMicros) {
          return Types.TimestampType.withZone();
        } else if (logical instanceof LogicalTypes.LocalTimestampMillis
            || logical instanceof LogicalTypes.LocalTimestampMicros) {
          return Types.TimestampType.withoutZone();
        } else if (logical instanceof LogicalTypes.TimeMicros) {
          return Types.TimeType.get();
        }
        return Types.LongType.get();
      case FLOAT:
        return Types.FloatType.get();
      case DOUBLE:
        return Types.DoubleType.get();
      case BYTES:
      case FIXED:
        if (logical instanceof LogicalTypes.Decimal decimal) {
          return Types.DecimalType.of(decimal.getPrecision(), decimal.getScale());
        }
        return schema.getType() == org.apache.avro.Schema.Type.FIXED
            ? Types.FixedType.ofLength(schema.getFixedSize()) : Types.BinaryType.get();
      default:
        throw new IllegalStateException("not a primitive Avro type: " + schema);
    }
  }

  private static Type widest(org.apache.avro.Schema union, List<org.apache.avro.Schema> branches, String path) {
    Set<org.apache.avro.Schema.Type> kinds = new LinkedHashSet<>();
    for (org.apache.avro.Schema branch : branches) {
      if (branch.getLogicalType() != null) {
        throw refusal(union, path, "a logical type (" + branch.getLogicalType().getName() + ") mixed with other types");
      }
      switch (branch.getType()) {
        case BOOLEAN, INT, LONG, FLOAT, DOUBLE, STRING, ENUM -> kinds.add(branch.getType());
        default -> throw refusal(union, path, "a " + branch.getType().getName() + " mixed with other types");
      }
    }
    Set<org.apache.avro.Schema.Type> integral = Set.of(org.apache.avro.Schema.Type.INT,
        org.apache.avro.Schema.Type.LONG);
    Set<org.apache.avro.Schema.Type> floating = Set.of(org.apache.avro.Schema.Type.FLOAT,
        org.apache.avro.Schema.Type.DOUBLE);
    if (integral.containsAll(kinds)) {
      return Types.LongType.get();
    } else if (floating.containsAll(kinds)) {
      return Types.DoubleType.get();
    }
    return Types.StringType.get();
  }

  private static IllegalArgumentException refusal(org.apache.avro.Schema union, String path, String why) {
    return new IllegalArgumentException("field '" + path + "' is the Avro union " + union + ", which holds " + why
        + "; only unions of booleans, numbers, strings and enums are read (as their widest type)");
  }
}
