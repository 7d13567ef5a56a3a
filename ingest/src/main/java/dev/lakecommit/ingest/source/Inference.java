package dev.lakecommit.ingest.source;

import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.time.temporal.TemporalAccessor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;

/**
 * Infers column types from sample values. Each value suggests a kind; kinds of one column merge: the same kind
 * stays, nothing (null) gives way to anything, long and double give double, objects merge field by field, arrays
 * merge their elements, and any other mix gives string. Strings that are ISO-8601 dates become date, date-times
 * with a zone offset timestamptz and without one timestamp. Integers beyond the long range stay strings (no silent
 * rounding). Every column is optional; a column seen only as null, and an object seen only empty, is string.
 */
final class Inference {
  private static final Pattern INTEGER = Pattern.compile("[+-]?\\d+");
  private static final Pattern DECIMAL = Pattern.compile("[+-]?(\\d+\\.\\d*|\\.\\d+|\\d+)([eE][+-]?\\d+)?");

  enum Kind { NONE, BOOLEAN, LONG, DOUBLE, DATE, TIMESTAMP, TIMESTAMPTZ, STRING, STRUCT, LIST }

  private final LinkedHashMap<String, Guess> columns = new LinkedHashMap<>();
  private long samples;

  /** What one column (or nested field or element) looks like so far. */
  static final class Guess {
    final Kind kind;
    final LinkedHashMap<String, Guess> fields;
    final Guess element;

    Guess(Kind kind, LinkedHashMap<String, Guess> fields, Guess element) {
      this.kind = kind;
      this.fields = fields;
      this.element = element;
    }

    static Guess of(Kind kind) {
      return new Guess(kind, null, null);
    }
  }

  /** Adds a sampled JSON object. */
  @SuppressWarnings("unchecked")
  void addJson(Map<String, Object> object) {
    samples++;
    for (Map.Entry<String, Object> entry : object.entrySet()) {
      columns.merge(entry.getKey(), ofJson(entry.getValue()), Inference::merge);
    }
  }

  /** Adds a sampled CSV row: header names and their cells (null for an empty unquoted cell). */
  void addText(List<String> names, List<String> cells) {
    samples++;
    for (int i = 0; i < names.size(); i++) {
      String cell = i < cells.size() ? cells.get(i) : null;
      columns.merge(names.get(i), ofText(cell), Inference::merge);
    }
  }

  /** Adds the samples of another inference, as if they had been added here after the ones before. */
  void addAll(Inference other) {
    samples += other.samples;
    other.columns.forEach((name, guess) -> columns.merge(name, guess, Inference::merge));
  }

  /** Makes sure a column exists (a CSV header column), even if no sample had a value for it. */
  void declare(String name) {
    columns.putIfAbsent(name, Guess.of(Kind.NONE));
  }

  long samples() {
    return samples;
  }

  boolean isEmpty() {
    return columns.isEmpty();
  }

  /** The schema: columns in order of first appearance, all optional, field ids 1..n. */
  Schema schema() {
    int[] ids = {1};
    List<Types.NestedField> fields = new ArrayList<>();
    for (Map.Entry<String, Guess> column : columns.entrySet()) {
      fields.add(Types.NestedField.optional(ids[0]++, column.getKey(), type(column.getValue(), ids)));
    }
    return TypeUtil.assignIncreasingFreshIds(new Schema(fields));
  }

  @SuppressWarnings("unchecked")
  static Guess ofJson(Object value) {
    if (value == null) {
      return Guess.of(Kind.NONE);
    } else if (value instanceof Boolean) {
      return Guess.of(Kind.BOOLEAN);
    } else if (value instanceof Long) {
      return Guess.of(Kind.LONG);
    } else if (value instanceof BigDecimal) {
      return Guess.of(Kind.DOUBLE);
    } else if (value instanceof Number) {
      return Guess.of(Kind.STRING); // an integer beyond long
    } else if (value instanceof String) {
      return ofString((String) value);
    } else if (value instanceof Map) {
      LinkedHashMap<String, Guess> fields = new LinkedHashMap<>();
      for (Map.Entry<String, Object> entry : ((Map<String, Object>) value).entrySet()) {
        fields.merge(entry.getKey(), ofJson(entry.getValue()), Inference::merge);
      }
      return new Guess(Kind.STRUCT, fields, null);
    } else {
      Guess element = Guess.of(Kind.NONE);
      for (Object item : (List<Object>) value) {
        element = merge(element, ofJson(item));
      }
      return new Guess(Kind.LIST, null, element);
    }
  }

  static Guess ofText(String text) {
    if (text == null) {
      return Guess.of(Kind.NONE);
    }
    if (text.equalsIgnoreCase("true") || text.equalsIgnoreCase("false")) {
      return Guess.of(Kind.BOOLEAN);
    }
    if (INTEGER.matcher(text).matches()) {
      try {
        Long.parseLong(text);
        return Guess.of(Kind.LONG);
      } catch (NumberFormatException e) {
        return Guess.of(Kind.STRING);
      }
    }
    if (DECIMAL.matcher(text).matches() && !Double.isInfinite(Double.parseDouble(text))) {
      return Guess.of(Kind.DOUBLE);
    }
    return ofString(text);
  }

  private static Guess ofString(String text) {
    if (Values.isDate(text)) {
      return Guess.of(Kind.DATE);
    }
    TemporalAccessor timestamp = Values.parseTimestamp(text);
    if (timestamp != null) {
      return Guess.of(timestamp instanceof OffsetDateTime ? Kind.TIMESTAMPTZ : Kind.TIMESTAMP);
    }
    return Guess.of(Kind.STRING);
  }

  static Guess merge(Guess a, Guess b) {
    if (a.kind == Kind.NONE) {
      return b;
    } else if (b.kind == Kind.NONE) {
      return a;
    } else if (a.kind == b.kind) {
      if (a.kind == Kind.STRUCT) {
        LinkedHashMap<String, Guess> fields = new LinkedHashMap<>(a.fields);
        b.fields.forEach((name, guess) -> fields.merge(name, guess, Inference::merge));
        return new Guess(Kind.STRUCT, fields, null);
      } else if (a.kind == Kind.LIST) {
        return new Guess(Kind.LIST, null, merge(a.element, b.element));
      }
      return a;
    } else if ((a.kind == Kind.LONG && b.kind == Kind.DOUBLE) || (a.kind == Kind.DOUBLE && b.kind == Kind.LONG)) {
      return Guess.of(Kind.DOUBLE);
    }
    return Guess.of(Kind.STRING);
  }

  private static Type type(Guess guess, int[] ids) {
    switch (guess.kind) {
      case BOOLEAN:
        return Types.BooleanType.get();
      case LONG:
        return Types.LongType.get();
      case DOUBLE:
        return Types.DoubleType.get();
      case DATE:
        return Types.DateType.get();
      case TIMESTAMP:
        return Types.TimestampType.withoutZone();
      case TIMESTAMPTZ:
        return Types.TimestampType.withZone();
      case STRUCT: {
        if (guess.fields.isEmpty()) {
          return Types.StringType.get(); // Parquet cannot store an empty group
        }
        List<Types.NestedField> fields = new ArrayList<>();
        for (Map.Entry<String, Guess> field : guess.fields.entrySet()) {
          fields.add(Types.NestedField.optional(ids[0]++, field.getKey(), type(field.getValue(), ids)));
        }
        return Types.StructType.of(fields);
      }
      case LIST:
        return Types.ListType.ofOptional(ids[0]++, type(guess.element, ids));
      default:
        return Types.StringType.get();
    }
  }
}
