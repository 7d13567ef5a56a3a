package dev.lakecommit.ingest.source;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.temporal.TemporalAccessor;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * Turns JSON values ({@link Json}) and text (CSV cells) into the Java values of Iceberg generic records, checking
 * that each fits its type: no silent truncation, rounding or overflow.
 */
final class Values {
  private static final Pattern INTEGER = Pattern.compile("[+-]?\\d+");
  private static final Pattern DECIMAL = Pattern.compile("[+-]?(\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?");
  private static final Pattern EPOCH = Pattern.compile("[+-]?\\d+(\\.\\d+)?");
  private static final DateTimeFormatter TIMESTAMP = new DateTimeFormatterBuilder()
      .parseCaseInsensitive()
      .append(DateTimeFormatter.ISO_LOCAL_DATE)
      .appendLiteral('T')
      .append(DateTimeFormatter.ISO_LOCAL_TIME)
      .optionalStart().appendOffset("+HH:MM:ss", "Z").optionalEnd()
      .optionalStart().appendOffset("+HHMM", "Z").optionalEnd()
      .optionalStart().appendOffset("+HH", "Z").optionalEnd()
      .toFormatter();

  private Values() {}

  /** A value that does not fit; {@code field} is the dotted path of the field. */
  static final class ValueException extends Exception {
    private static final long serialVersionUID = 1L;
    private final String field;

    ValueException(String field, String message) {
      super(message);
      this.field = field;
    }

    String field() {
      return field;
    }
  }

  /** A record of {@code struct} from a JSON object. */
  static Record record(Types.StructType struct, Map<String, Object> object, String prefix) throws ValueException {
    GenericRecord record = GenericRecord.create(struct);
    List<Types.NestedField> fields = struct.fields();
    for (int i = 0; i < fields.size(); i++) {
      Types.NestedField field = fields.get(i);
      String path = prefix == null ? field.name() : prefix + "." + field.name();
      Object value = fromJson(field.type(), object.get(field.name()), path);
      if (value == null && field.isRequired()) {
        throw new ValueException(path, object.containsKey(field.name()) ? "is null but required" : "is missing "
            + "but required");
      }
      record.set(i, value);
    }
    return record;
  }

  /** The value of a JSON value for {@code type}; null for null. */
  @SuppressWarnings("unchecked")
  static Object fromJson(Type type, Object json, String path) throws ValueException {
    if (json == null) {
      return null;
    }
    switch (type.typeId()) {
      case BOOLEAN:
        if (json instanceof Boolean) {
          return json;
        }
        throw wrongType(path, type, json);
      case INTEGER:
      case LONG:
        return integer(type, json, path);
      case FLOAT:
      case DOUBLE:
        if (!(json instanceof Number)) {
          throw wrongType(path, type, json);
        }
        return floating(type, json instanceof BigDecimal ? (BigDecimal) json : new BigDecimal(json.toString()), path);
      case DECIMAL:
        if (json instanceof Number) {
          return decimal((Types.DecimalType) type, new BigDecimal(json.toString()), path);
        } else if (json instanceof String) {
          return fromText(type, (String) json, path);
        }
        throw wrongType(path, type, json);
      case STRING:
        if (json instanceof String) {
          return json;
        } else if (json instanceof BigDecimal) {
          return ((BigDecimal) json).toString();
        } else if (json instanceof Map || json instanceof List) {
          return Json.write(json);
        }
        return json.toString();
      case TIMESTAMP:
        if (json instanceof Number) {
          return epoch((Types.TimestampType) type, json instanceof BigDecimal ? (BigDecimal) json
              : new BigDecimal(json.toString()), json.toString(), path);
        }
        if (json instanceof String) {
          return fromText(type, (String) json, path);
        }
        throw wrongType(path, type, json);
      case DATE:
      case TIME:
      case UUID:
      case BINARY:
      case FIXED:
        if (json instanceof String) {
          return fromText(type, (String) json, path);
        }
        throw wrongType(path, type, json);
      case STRUCT:
        if (json instanceof Map) {
          return record(type.asStructType(), (Map<String, Object>) json, path);
        }
        throw wrongType(path, type, json);
      case LIST:
        if (json instanceof List) {
          return list(type.asListType(), (List<Object>) json, path);
        }
        throw wrongType(path, type, json);
      case MAP:
        if (json instanceof Map) {
          return map(type.asMapType(), (Map<String, Object>) json, path);
        }
        throw wrongType(path, type, json);
      default:
        throw new ValueException(path, "type " + type + " is not supported");
    }
  }

  private static List<Object> list(Types.ListType type, List<Object> json, String path) throws ValueException {
    List<Object> list = new ArrayList<>(json.size());
    for (int i = 0; i < json.size(); i++) {
      String elementPath = path + "[" + i + "]";
      Object element = fromJson(type.elementType(), json.get(i), elementPath);
      if (element == null && type.isElementRequired()) {
        throw new ValueException(elementPath, "is null but elements are required");
      }
      list.add(element);
    }
    return list;
  }

  private static Map<Object, Object> map(Types.MapType type, Map<String, Object> json, String path)
      throws ValueException {
    Map<Object, Object> map = new LinkedHashMap<>();
    for (Map.Entry<String, Object> entry : json.entrySet()) {
      String entryPath = path + "[" + entry.getKey() + "]";
      Object value = fromJson(type.valueType(), entry.getValue(), entryPath);
      if (value == null && type.isValueRequired()) {
        throw new ValueException(entryPath, "is null but values are required");
      }
      map.put(fromText(type.keyType(), entry.getKey(), entryPath), value);
    }
    return map;
  }

  private static Object integer(Type type, Object json, String path) throws ValueException {
    if (json instanceof Long) {
      long value = (Long) json;
      if (type.typeId() == Type.TypeID.INTEGER) {
        if (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE) {
          throw new ValueException(path, "value " + value + " overflows int");
        }
        return (int) value;
      }
      return value;
    } else if (json instanceof BigInteger) {
      throw new ValueException(path, "value " + json + " overflows " + type);
    } else if (json instanceof BigDecimal) {
      throw new ValueException(path, "value " + json + " is not an integer (" + type + ")");
    }
    throw wrongType(path, type, json);
  }

  private static Object floating(Type type, BigDecimal value, String path) throws ValueException {
    if (type.typeId() == Type.TypeID.FLOAT) {
      float f = value.floatValue();
      if (Float.isInfinite(f)) {
        throw new ValueException(path, "value " + value + " overflows float");
      }
      return f;
    }
    double d = value.doubleValue();
    if (Double.isInfinite(d)) {
      throw new ValueException(path, "value " + value + " overflows double");
    }
    return d;
  }

  private static BigDecimal decimal(Types.DecimalType type, BigDecimal value, String path) throws ValueException {
    BigDecimal scaled;
    try {
      scaled = value.setScale(type.scale(), RoundingMode.UNNECESSARY);
    } catch (ArithmeticException e) {
      throw new ValueException(path, "value " + value.toPlainString() + " has more than " + type.scale()
          + " decimal places (" + type + ")");
    }
    if (scaled.precision() > type.precision()) {
      throw new ValueException(path, "value " + value.toPlainString() + " does not fit " + type);
    }
    return scaled;
  }

  /** The value of a text (a CSV cell, or a JSON string for a temporal, uuid or binary column). */
  static Object fromText(Type type, String text, String path) throws ValueException {
    switch (type.typeId()) {
      case STRING:
        return text;
      case BOOLEAN:
        if (text.equalsIgnoreCase("true")) {
          return true;
        } else if (text.equalsIgnoreCase("false")) {
          return false;
        }
        throw notA(path, text, type);
      case INTEGER:
      case LONG:
        if (!INTEGER.matcher(text).matches()) {
          throw notA(path, text, type);
        }
        try {
          return type.typeId() == Type.TypeID.INTEGER ? (Object) Integer.parseInt(text) : Long.parseLong(text);
        } catch (NumberFormatException e) {
          throw new ValueException(path, "value " + text + " overflows " + type);
        }
      case FLOAT:
      case DOUBLE:
        if (text.equals("NaN") || text.equals("Infinity") || text.equals("-Infinity")) {
          double special = Double.parseDouble(text);
          return type.typeId() == Type.TypeID.FLOAT ? (Object) (float) special : special;
        }
        if (!DECIMAL.matcher(text).matches()) {
          throw notA(path, text, type);
        }
        return floating(type, new BigDecimal(text), path);
      case DECIMAL:
        if (!DECIMAL.matcher(text).matches()) {
          throw notA(path, text, type);
        }
        return decimal((Types.DecimalType) type, new BigDecimal(text), path);
      case DATE:
        try {
          return LocalDate.parse(text);
        } catch (DateTimeParseException e) {
          throw notA(path, text, type);
        }
      case TIME:
        try {
          return LocalTime.parse(text);
        } catch (DateTimeParseException e) {
          throw notA(path, text, type);
        }
      case TIMESTAMP:
        return timestamp((Types.TimestampType) type, text, path);
      case UUID:
        if (text.length() != 36) {
          throw notA(path, text, type);
        }
        try {
          return UUID.fromString(text);
        } catch (IllegalArgumentException e) {
          throw notA(path, text, type);
        }
      case BINARY:
      case FIXED:
        return binary(type, text, path);
      case STRUCT:
      case LIST:
      case MAP:
        try {
          return fromJson(type, Json.parse(text), path);
        } catch (Json.SyntaxException e) {
          throw new ValueException(path, type + " value is not JSON: " + e.getMessage());
        }
      default:
        throw new ValueException(path, "type " + type + " is not supported");
    }
  }

  private static Object timestamp(Types.TimestampType type, String text, String path) throws ValueException {
    TemporalAccessor parsed = parseTimestamp(text);
    if (parsed == null && EPOCH.matcher(text).matches()) {
      return epoch(type, new BigDecimal(text), text, path);
    }
    if (parsed == null) {
      throw notA(path, text, type);
    }
    if (type.shouldAdjustToUTC()) {
      return parsed instanceof OffsetDateTime ? parsed : ((LocalDateTime) parsed).atOffset(ZoneOffset.UTC);
    }
    if (parsed instanceof OffsetDateTime) {
      throw new ValueException(path, "value " + text + " has a time zone but the column is timestamp without zone "
          + "(declare it timestamptz)");
    }
    return parsed;
  }

  private static Object binary(Type type, String text, String path) throws ValueException {
    byte[] bytes;
    try {
      bytes = Base64.getDecoder().decode(text);
    } catch (IllegalArgumentException e) {
      throw new ValueException(path, "value is not base64 (" + type + "): " + e.getMessage());
    }
    if (type.typeId() == Type.TypeID.FIXED) {
      int length = ((Types.FixedType) type).length();
      if (bytes.length != length) {
        throw new ValueException(path, "value has " + bytes.length + " bytes, " + type + " needs " + length);
      }
      return bytes;
    }
    return ByteBuffer.wrap(bytes);
  }

  /** Below this magnitude an epoch number is seconds (up to the year 5138). */
  static final long EPOCH_SECONDS_BELOW = 100_000_000_000L;
  /** ... then milliseconds. */
  static final long EPOCH_MILLIS_BELOW = 100_000_000_000_000L;
  /** ... then microseconds, and from here nanoseconds. */
  static final long EPOCH_MICROS_BELOW = 100_000_000_000_000_000L;

  /**
   * A number since 1970-01-01T00:00:00Z as a timestamp, its unit told by its magnitude: below 10^11 seconds
   * (until the year 5138; a fraction is allowed), below 10^14 milliseconds, below 10^17 microseconds, else
   * nanoseconds (which must be whole microseconds: nothing is rounded). A timestamp without zone gets the UTC
   * wall-clock time.
   */
  private static Object epoch(Types.TimestampType type, BigDecimal number, String text, String path)
      throws ValueException {
    BigDecimal magnitude = number.abs();
    BigDecimal micros;
    String unit;
    if (magnitude.compareTo(BigDecimal.valueOf(EPOCH_SECONDS_BELOW)) < 0) {
      micros = number.movePointRight(6);
      unit = "seconds";
    } else if (magnitude.compareTo(BigDecimal.valueOf(EPOCH_MILLIS_BELOW)) < 0) {
      micros = number.movePointRight(3);
      unit = "milliseconds";
    } else if (magnitude.compareTo(BigDecimal.valueOf(EPOCH_MICROS_BELOW)) < 0) {
      micros = number;
      unit = "microseconds";
    } else {
      micros = number.movePointLeft(3);
      unit = "nanoseconds";
    }
    long exact;
    try {
      exact = micros.setScale(0, RoundingMode.UNNECESSARY).longValueExact();
    } catch (ArithmeticException e) {
      throw new ValueException(path, "epoch value " + abbreviate(text) + " (" + unit + ") is finer than a "
          + "microsecond or out of range for " + type);
    }
    OffsetDateTime utc = org.apache.iceberg.util.DateTimeUtil.timestamptzFromMicros(exact);
    return type.shouldAdjustToUTC() ? utc : utc.toLocalDateTime();
  }

  /**
   * An ISO-8601 date-time ({@code T} or a space between date and time) as an {@link OffsetDateTime} when it has
   * a zone offset ({@code Z}, {@code +01:00}, {@code +0100}, {@code +01}), a {@link LocalDateTime} when not, or
   * null when it is not one.
   */
  static TemporalAccessor parseTimestamp(String text) {
    if (text.length() < 16 || text.length() > 40) {
      return null;
    }
    TemporalAccessor common = parseCommonTimestamp(text);
    return common != null ? common : parseTimestampWithFormatter(text);
  }

  /** {@link #parseTimestamp} through the formatter alone (every shape it accepts, resolved smartly). */
  static TemporalAccessor parseTimestampWithFormatter(String text) {
    if (text.length() < 16 || text.length() > 40) {
      return null;
    }
    char separator = text.charAt(10);
    String iso = text;
    if (separator == ' ' || separator == 't') {
      iso = text.substring(0, 10) + 'T' + text.substring(11);
    } else if (separator != 'T') {
      return null;
    }
    try {
      return TIMESTAMP.parseBest(iso, OffsetDateTime::from, LocalDateTime::from);
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  /**
   * The shapes nearly every input uses — {@code yyyy-MM-dd}, {@code T}/{@code t}/space, {@code HH:mm[:ss[.f]]} with 1
   * to 9 fraction digits, then nothing, {@code Z}/{@code z} or {@code ±HH:MM} — read digit by digit, without the
   * formatter's per-call field maps (the formatter was the ingest's top CPU cost per row). Null for anything else,
   * including values the formatter resolves differently (an invalid day or {@code 24:00}), which {@link
   * #parseTimestamp} then gives to the formatter: both paths give the same result for every text.
   */
  static TemporalAccessor parseCommonTimestamp(String text) {
    int length = text.length();
    if (length < 16) {
      return null;
    }
    char separator = text.charAt(10);
    if (text.charAt(4) != '-' || text.charAt(7) != '-' || text.charAt(13) != ':'
        || (separator != 'T' && separator != 't' && separator != ' ')) {
      return null;
    }
    int year = digits(text, 0, 4);
    int month = digits(text, 5, 2);
    int day = digits(text, 8, 2);
    int hour = digits(text, 11, 2);
    int minute = digits(text, 14, 2);
    if ((year | month | day | hour | minute) < 0) {
      return null;
    }
    int at = 16;
    int second = 0;
    int nanos = 0;
    if (at < length && text.charAt(at) == ':') {
      if (at + 3 > length || (second = digits(text, at + 1, 2)) < 0) {
        return null;
      }
      at += 3;
      if (at < length && text.charAt(at) == '.') {
        int start = ++at;
        while (at < length && at - start < 10 && isDigit(text.charAt(at))) {
          at++;
        }
        int count = at - start;
        if (count == 0 || count > 9) {
          return null;
        }
        nanos = digits(text, start, count);
        for (int i = count; i < 9; i++) {
          nanos *= 10;
        }
      }
    }
    LocalDateTime local;
    try {
      local = LocalDateTime.of(year, month, day, hour, minute, second, nanos);
    } catch (java.time.DateTimeException e) {
      return null;
    }
    if (at == length) {
      return local;
    }
    char zone = text.charAt(at);
    if ((zone == 'Z' || zone == 'z') && at + 1 == length) {
      return local.atOffset(ZoneOffset.UTC);
    }
    if ((zone == '+' || zone == '-') && at + 6 == length && text.charAt(at + 3) == ':') {
      int offsetHours = digits(text, at + 1, 2);
      int offsetMinutes = digits(text, at + 4, 2);
      if ((offsetHours | offsetMinutes) < 0 || offsetHours > 18 || offsetMinutes > 59) {
        return null;
      }
      int sign = zone == '+' ? 1 : -1;
      try {
        return local.atOffset(ZoneOffset.ofHoursMinutes(sign * offsetHours, sign * offsetMinutes));
      } catch (java.time.DateTimeException e) {
        return null;
      }
    }
    return null;
  }

  /** The value of {@code count} decimal digits at {@code from}, or -1 if one of them is not a digit. */
  private static int digits(String text, int from, int count) {
    int value = 0;
    for (int i = from; i < from + count; i++) {
      char c = text.charAt(i);
      if (!isDigit(c)) {
        return -1;
      }
      value = value * 10 + (c - '0');
    }
    return value;
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  /** Whether a text is an ISO-8601 date ({@code 2024-01-31}). */
  static boolean isDate(String text) {
    if (text.length() != 10) {
      return false;
    }
    try {
      LocalDate.parse(text);
      return true;
    } catch (DateTimeParseException e) {
      return false;
    }
  }

  private static ValueException notA(String path, String text, Type type) {
    return new ValueException(path, "value '" + abbreviate(text) + "' is not a " + type);
  }

  private static ValueException wrongType(String path, Type type, Object json) {
    return new ValueException(path, "expected " + type + ", got " + Json.kind(json)
        + (json instanceof Map || json instanceof List ? "" : " " + abbreviate(Json.write(json))));
  }

  static String abbreviate(String text) {
    return text.length() > 60 ? text.substring(0, 57) + "..." : text;
  }
}
