package dev.lakecommit.ingest.source;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.UUID;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;

/**
 * Rows of Kafka Connect's {@link Struct}s (what Debezium's connectors produce) as rows of a lake table, by column
 * name. A value is read by its Connect schema's logical name where Debezium gives one (dates as days, times and
 * timestamps as epoch milli-, micro- or nanoseconds, zoned timestamps as ISO text, decimals exact) and converted to
 * the column's type without loss: a value that does not fit is an error naming the column.
 */
final class ConnectValues {
  private ConnectValues() {}

  /**
   * A field of the row that the table lacks ({@code type} null), or whose values the source now sends in a wider
   * type than the column's (a column whose type the source widened while the job read).
   */
  static final class UnknownColumn extends Exception {
    private static final long serialVersionUID = 1L;
    final String column;
    final String type;

    UnknownColumn(String column, String type) {
      super(column);
      this.column = column;
      this.type = type;
    }
  }

  /**
   * The row as a record of {@code table}: its fields by name, the table's other columns null.
   *
   * @param widened whether a field whose type is wider than its column's is refused (a source that describes its
   *     columns: a type widened since), rather than its values converted as long as they fit
   * @throws UnknownColumn if the row has a field the table lacks, or (with {@code widened}) a wider one
   * @throws Values.ValueException naming the column if a value does not fit its column
   */
  static Record record(Types.StructType table, Struct row, boolean widened) throws UnknownColumn,
      Values.ValueException {
    GenericRecord record = GenericRecord.create(table);
    for (Field field : row.schema().fields()) {
      Types.NestedField column = table.field(field.name());
      if (column == null) {
        throw new UnknownColumn(field.name(), null);
      }
      String wider = widened ? wider(column.type(), field.schema()) : null;
      if (wider != null) {
        throw new UnknownColumn(field.name(), column.type() + " to " + wider);
      }
      Object value = row.get(field);
      if (value != null) {
        record.setField(column.name(), value(column.type(), field.schema(), value, column.name()));
      } else if (column.isRequired()) {
        throw new Values.ValueException(column.name(), "no value for required column " + column.name());
      }
    }
    return record;
  }

  /** The source's type if it is wider than the column's (int to bigint, real to double, more digits), else null. */
  private static String wider(Type type, Schema schema) {
    return switch (type.typeId()) {
      case INTEGER -> schema.type() == Schema.Type.INT64 ? "long" : null;
      case FLOAT -> schema.type() == Schema.Type.FLOAT64 ? "double" : null;
      case DECIMAL -> {
        Types.DecimalType decimal = (Types.DecimalType) type;
        String precision = schema.parameters() == null ? null : schema.parameters().get("connect.decimal.precision");
        String scale = schema.parameters() == null ? null : schema.parameters().get("scale");
        yield precision != null && scale != null && Integer.parseInt(scale) == decimal.scale()
            && Integer.parseInt(precision) > decimal.precision()
            ? "decimal(" + precision + ", " + scale + ")" : null;
      }
      default -> null;
    };
  }

  /** The row's fields that the table has, as a record of {@code table}; the others left out. */
  static Record recordOfKnown(Types.StructType table, Struct row) throws Values.ValueException {
    GenericRecord record = GenericRecord.create(table);
    for (Field field : row.schema().fields()) {
      Types.NestedField column = table.field(field.name());
      Object value = column == null ? null : row.get(field);
      if (value != null) {
        record.setField(column.name(), value(column.type(), field.schema(), value, column.name()));
      }
    }
    return record;
  }

  static Object value(Type type, Schema schema, Object value, String column) throws Values.ValueException {
    String logical = schema.name() == null ? "" : schema.name();
    try {
      return switch (type.typeId()) {
        case INTEGER -> Math.toIntExact(((Number) value).longValue());
        case LONG -> ((Number) value).longValue();
        case FLOAT -> ((Number) value).floatValue();
        case DOUBLE -> ((Number) value).doubleValue();
        case BOOLEAN -> (Boolean) value;
        case STRING -> text(value, schema, column);
        case DECIMAL -> {
          Types.DecimalType decimal = (Types.DecimalType) type;
          BigDecimal number = value instanceof BigDecimal exact ? exact : value instanceof Struct variable
              ? variableScale(variable) : new BigDecimal(value.toString());
          BigDecimal scaled = number.setScale(decimal.scale(), RoundingMode.UNNECESSARY);
          if (scaled.precision() > decimal.precision()) {
            throw new Values.ValueException(column, number + " has more digits than decimal(" + decimal.precision()
                + ", " + decimal.scale() + ")");
          }
          yield scaled;
        }
        case DATE -> value instanceof java.util.Date date ? LocalDate.ofInstant(date.toInstant(), ZoneOffset.UTC)
            : LocalDate.ofEpochDay(((Number) value).longValue());
        case TIME -> LocalTime.ofNanoOfDay(switch (logical) {
          case "io.debezium.time.Time" -> ((Number) value).longValue() * 1_000_000L;
          case "io.debezium.time.NanoTime" -> ((Number) value).longValue();
          case "org.apache.kafka.connect.data.Time" -> ((java.util.Date) value).getTime() * 1_000_000L;
          default -> ((Number) value).longValue() * 1_000L; // io.debezium.time.MicroTime
        });
        case TIMESTAMP -> timestamp((Types.TimestampType) type, logical, value, column);
        case UUID -> UUID.fromString(value.toString());
        case BINARY -> value instanceof byte[] bytes ? ByteBuffer.wrap(bytes) : (ByteBuffer) value;
        default -> unsupported(column, schema);
      };
    } catch (ClassCastException | ArithmeticException | IllegalArgumentException | java.time.DateTimeException e) {
      throw new Values.ValueException(column, "value " + value + " (" + logicalOrType(schema) + ") does not fit "
          + "column " + column + " of type " + type + ": " + e.getMessage());
    }
  }

  private static Object timestamp(Types.TimestampType type, String logical, Object value, String column)
      throws Values.ValueException {
    if (logical.equals("io.debezium.time.ZonedTimestamp")) {
      OffsetDateTime at = OffsetDateTime.parse(value.toString());
      return type.shouldAdjustToUTC() ? at : at.withOffsetSameInstant(ZoneOffset.UTC).toLocalDateTime();
    }
    long micros = switch (logical) {
      case "io.debezium.time.Timestamp" -> Math.multiplyExact(((Number) value).longValue(), 1_000L);
      case "io.debezium.time.NanoTimestamp" -> Math.floorDiv(((Number) value).longValue(), 1_000L);
      case "org.apache.kafka.connect.data.Timestamp" ->
          Math.multiplyExact(((java.util.Date) value).getTime(), 1_000L);
      case "io.debezium.time.MicroTimestamp" -> ((Number) value).longValue();
      default -> throw new Values.ValueException(column, "value " + value + " of type " + logical + " is not a "
          + "timestamp");
    };
    Instant instant = Instant.EPOCH.plus(micros, java.time.temporal.ChronoUnit.MICROS);
    return type.shouldAdjustToUTC() ? instant.atOffset(ZoneOffset.UTC) : LocalDateTime.ofInstant(instant,
        ZoneOffset.UTC);
  }

  /** A value as text: numbers in plain notation, Debezium's variable-scale decimals decoded. */
  private static String text(Object value, Schema schema, String column) throws Values.ValueException {
    if (value instanceof BigDecimal decimal) {
      return decimal.toPlainString();
    }
    if (value instanceof Struct struct && "io.debezium.data.VariableScaleDecimal".equals(schema.name())) {
      return variableScale(struct).toPlainString();
    }
    if (value instanceof byte[] || value instanceof ByteBuffer || value instanceof Struct
        || value instanceof java.util.Collection<?> || value instanceof java.util.Map<?, ?>) {
      unsupported(column, schema);
    }
    return value.toString();
  }

  /** Debezium's decimal of a column without a declared scale: {@code {scale, value}} (unscaled bytes). */
  private static BigDecimal variableScale(Struct struct) {
    byte[] unscaled = struct.get("value") instanceof ByteBuffer buffer ? java.util.Arrays.copyOfRange(buffer.array(),
        buffer.arrayOffset() + buffer.position(), buffer.arrayOffset() + buffer.limit()) : (byte[]) struct.get("value");
    return new BigDecimal(new java.math.BigInteger(unscaled), struct.getInt32("scale"));
  }

  private static Object unsupported(String column, Schema schema) throws Values.ValueException {
    throw new Values.ValueException(column, "column " + column + " has values of type " + logicalOrType(schema)
        + ", which the table's column cannot hold");
  }

  private static String logicalOrType(Schema schema) {
    return schema.name() != null ? schema.name() : schema.type().getName();
  }
}
