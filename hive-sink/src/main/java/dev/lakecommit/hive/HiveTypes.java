package dev.lakecommit.hive;

import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * Hive column types of the Parquet files the staging writer writes, and back for the primitive ones. Names are
 * Hive's: lower case, no spaces ({@code array<bigint>}, {@code decimal(10,2)}, {@code struct<a:int,b:string>}).
 */
final class HiveTypes {
  private static final Pattern DECIMAL = Pattern.compile("decimal\\((\\d+),(\\d+)\\)");
  private static final Pattern CHARS = Pattern.compile("(var)?char\\(\\d+\\)");

  private HiveTypes() {}

  /**
   * The Hive type of an Iceberg type.
   *
   * @throws IllegalArgumentException for types Hive has no column type for ({@code time}, {@code uuid}, ...)
   */
  static String hiveType(Type type) {
    switch (type.typeId()) {
      case BOOLEAN:
        return "boolean";
      case INTEGER:
        return "int";
      case LONG:
        return "bigint";
      case FLOAT:
        return "float";
      case DOUBLE:
        return "double";
      case DATE:
        return "date";
      case TIMESTAMP:
        return "timestamp";
      case STRING:
        return "string";
      case BINARY:
      case FIXED:
        return "binary";
      case DECIMAL:
        Types.DecimalType decimal = (Types.DecimalType) type;
        return "decimal(" + decimal.precision() + "," + decimal.scale() + ")";
      case LIST:
        return "array<" + hiveType(type.asListType().elementType()) + ">";
      case MAP:
        return "map<" + hiveType(type.asMapType().keyType()) + "," + hiveType(type.asMapType().valueType()) + ">";
      case STRUCT:
        StringBuilder struct = new StringBuilder("struct<");
        for (Types.NestedField field : type.asStructType().fields()) {
          if (struct.length() > "struct<".length()) {
            struct.append(',');
          }
          struct.append(field.name().toLowerCase(Locale.ROOT)).append(':').append(hiveType(field.type()));
        }
        return struct.append('>').toString();
      default:
        throw new IllegalArgumentException("type " + type + " has no Hive column type");
    }
  }

  /** The Iceberg type of a primitive Hive type, if it has one the writer can write. */
  static Optional<Type> icebergType(String hiveType) {
    String type = normalize(hiveType);
    Matcher decimal = DECIMAL.matcher(type);
    if (decimal.matches()) {
      return Optional.of(Types.DecimalType.of(Integer.parseInt(decimal.group(1)), Integer.parseInt(decimal.group(2))));
    }
    if (CHARS.matcher(type).matches()) {
      return Optional.of(Types.StringType.get());
    }
    switch (type) {
      case "boolean":
        return Optional.of(Types.BooleanType.get());
      case "int":
        return Optional.of(Types.IntegerType.get());
      case "bigint":
        return Optional.of(Types.LongType.get());
      case "float":
        return Optional.of(Types.FloatType.get());
      case "double":
        return Optional.of(Types.DoubleType.get());
      case "date":
        return Optional.of(Types.DateType.get());
      case "timestamp":
        return Optional.of(Types.TimestampType.withoutZone());
      case "string":
        return Optional.of(Types.StringType.get());
      case "binary":
        return Optional.of(Types.BinaryType.get());
      case "decimal":
        return Optional.of(Types.DecimalType.of(10, 0));
      default:
        return Optional.empty();
    }
  }

  /** Whether files written with {@code staged} can be read as a column of Hive type {@code hiveType}. */
  static boolean matches(Type staged, String hiveType) {
    String table = normalize(hiveType);
    if (staged.typeId() == Type.TypeID.STRING && CHARS.matcher(table).matches()) {
      return true;
    }
    if (table.equals("decimal")) {
      table = "decimal(10,0)";
    }
    try {
      return hiveType(staged).equals(table);
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** Lower case without blanks, as Hive compares type names; {@code integer} is {@code int}. */
  static String normalize(String hiveType) {
    String type = hiveType.toLowerCase(Locale.ROOT).replaceAll("\\s+", "");
    return type.replaceAll("(^|[<,:])integer(?=$|[>,])", "$1int");
  }
}
