package dev.lakecommit.ingest.source;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.kafka.connect.data.Schema;

/**
 * Lake column types of Kafka Connect schemas as Debezium's connectors write them (the JSON converter's {@code
 * "schema"} of a change event): a field's logical name says what its value is (a date as days, a timestamp as
 * micro- or milliseconds, a decimal as its unscaled bytes, ...), and the column gets that type rather than the
 * integer or the text the value is carried as.
 */
final class ConnectSchemas {
  private ConnectSchemas() {}

  /** Kafka Connect's JSON converter of keys or values with their schemas ({@code schemas.enable}). */
  static org.apache.kafka.connect.json.JsonConverter jsonConverter(boolean key) {
    org.apache.kafka.connect.json.JsonConverter converter = new org.apache.kafka.connect.json.JsonConverter();
    converter.configure(Map.of("schemas.enable", "true", "converter.type", key ? "key" : "value"));
    return converter;
  }

  /** The lake type of a field's values, or null if no lake type holds them (arrays, maps, geometry, ...). */
  static Type type(Schema schema) {
    String logical = schema.name() == null ? "" : schema.name();
    return switch (schema.type()) {
      case INT8, INT16, INT32 -> switch (logical) {
        case "io.debezium.time.Date", "org.apache.kafka.connect.data.Date" -> Types.DateType.get();
        case "io.debezium.time.Time", "org.apache.kafka.connect.data.Time" -> Types.TimeType.get();
        default -> Types.IntegerType.get();
      };
      case INT64 -> switch (logical) {
        case "io.debezium.time.Timestamp", "io.debezium.time.MicroTimestamp", "io.debezium.time.NanoTimestamp",
            "org.apache.kafka.connect.data.Timestamp" -> Types.TimestampType.withoutZone();
        case "io.debezium.time.MicroTime", "io.debezium.time.NanoTime" -> Types.TimeType.get();
        default -> Types.LongType.get();
      };
      case FLOAT32 -> Types.FloatType.get();
      case FLOAT64 -> Types.DoubleType.get();
      case BOOLEAN -> Types.BooleanType.get();
      case STRING -> switch (logical) {
        case "io.debezium.time.ZonedTimestamp" -> Types.TimestampType.withZone();
        case "io.debezium.data.Uuid" -> Types.UUIDType.get();
        default -> Types.StringType.get();
      };
      case BYTES -> {
        if (!"org.apache.kafka.connect.data.Decimal".equals(logical)) {
          yield Types.BinaryType.get();
        }
        Map<String, String> parameters = schema.parameters() == null ? Map.of() : schema.parameters();
        int scale = Integer.parseInt(parameters.getOrDefault("scale", "0"));
        String precision = parameters.get("connect.decimal.precision");
        // a numeric without a declared precision: the widest decimal of its scale
        yield Types.DecimalType.of(precision == null ? 38 : Math.min(38, Integer.parseInt(precision)), scale);
      }
      case STRUCT -> "io.debezium.data.VariableScaleDecimal".equals(logical) ? Types.StringType.get() : null;
      default -> null;
    };
  }

  /**
   * The columns of a row's struct schema, by name in order; a field no lake type holds is named in the exception.
   *
   * @throws Values.ValueException naming the field
   */
  static Map<String, Type> columns(Schema struct) throws Values.ValueException {
    Map<String, Type> columns = new LinkedHashMap<>();
    for (org.apache.kafka.connect.data.Field field : struct.fields()) {
      Type type = type(field.schema());
      if (type == null) {
        throw new Values.ValueException(field.name(), "field " + field.name() + " has values of type "
            + (field.schema().name() != null ? field.schema().name() : field.schema().type().getName())
            + ", which no column type of a lake table holds");
      }
      columns.put(field.name(), type);
    }
    return columns;
  }
}
