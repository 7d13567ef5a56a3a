package dev.lakecommit.ingest.source;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;

/**
 * Parses a schema written as {@code "id long not null, name string, ts timestamptz, amount decimal(10,2),
 * tags list<string>"}.
 *
 * <p>Columns are {@code name type [not null]}, separated by commas; a name with spaces or punctuation is quoted
 * with backticks or double quotes. Types (any case): {@code boolean}, {@code int}, {@code long} ({@code bigint}),
 * {@code float}, {@code double}, {@code decimal(p,s)}, {@code date}, {@code time}, {@code timestamp} (no zone),
 * {@code timestamptz} (with zone), {@code string}, {@code uuid}, {@code binary}, {@code fixed(n)},
 * {@code list<T>}, {@code map<K,V>} and {@code struct<name: T [not null], ...>}. Columns are optional unless
 * {@code not null}; list elements and map values are optional. Field ids are 1..n in order of appearance.
 */
public final class SchemaParser {
  private static final String KNOWN = "boolean, int, long, float, double, decimal(p,s), date, time, timestamp, "
      + "timestamptz, string, uuid, binary, fixed(n), list<T>, map<K,V>, struct<name: T, ...>";

  private final String text;
  private int pos;
  private int nextId = 1;
  private String column;

  private SchemaParser(String text) {
    this.text = text;
  }

  /**
   * The schema the text describes.
   *
   * @throws IllegalArgumentException naming the column and the type or word that is wrong
   */
  public static Schema parse(String spec) {
    if (spec == null || spec.isBlank()) {
      throw new IllegalArgumentException("Schema is empty: expected columns like 'id long not null, name string'");
    }
    SchemaParser parser = new SchemaParser(spec);
    List<Types.NestedField> columns = parser.fields(true);
    parser.skipSpace();
    if (parser.pos < spec.length()) {
      throw parser.error("unexpected '" + spec.substring(parser.pos) + "'");
    }
    return TypeUtil.assignIncreasingFreshIds(new Schema(columns));
  }

  /** Columns up to the end (top level) or a closing {@code >} (struct fields). */
  private List<Types.NestedField> fields(boolean topLevel) {
    List<Types.NestedField> fields = new ArrayList<>();
    Set<String> names = new HashSet<>();
    String outer = column;
    int index = 0;
    do {
      index++;
      skipSpace();
      String name = name(topLevel ? "column " + index : "field " + index + " of " + outer);
      String path = topLevel ? name : outer + "." + name;
      if (!names.add(name)) {
        throw new IllegalArgumentException("Schema: duplicate column '" + path + "'");
      }
      column = path;
      skipSpace();
      if (!atEnd() && peek() == ':') {
        pos++;
      }
      skipSpace();
      if (atEnd() || peek() == ',' || peek() == '>') {
        throw new IllegalArgumentException("Schema: column '" + path + "' has no type; known types: " + KNOWN);
      }
      Type type = type();
      boolean required = nullability();
      fields.add(required
          ? Types.NestedField.required(nextId++, name, type)
          : Types.NestedField.optional(nextId++, name, type));
      column = outer;
      skipSpace();
    } while (accept(','));
    return fields;
  }

  private Type type() {
    skipSpace();
    int start = pos;
    String word = word();
    if (word.isEmpty()) {
      throw error("expected a type, found '" + rest() + "'");
    }
    switch (word.toLowerCase(Locale.ROOT)) {
      case "boolean":
      case "bool":
        return Types.BooleanType.get();
      case "int":
      case "integer":
        return Types.IntegerType.get();
      case "long":
      case "bigint":
        return Types.LongType.get();
      case "float":
        return Types.FloatType.get();
      case "double":
        return Types.DoubleType.get();
      case "date":
        return Types.DateType.get();
      case "time":
        return Types.TimeType.get();
      case "timestamp":
      case "timestamp_ntz":
        return Types.TimestampType.withoutZone();
      case "timestamptz":
      case "timestamp_tz":
      case "timestamp_ltz":
        return Types.TimestampType.withZone();
      case "string":
      case "varchar":
      case "text":
        return Types.StringType.get();
      case "uuid":
        return Types.UUIDType.get();
      case "binary":
      case "bytes":
        return Types.BinaryType.get();
      case "decimal":
        return decimal(start);
      case "fixed":
        return fixed();
      case "list":
      case "array":
        return list();
      case "map":
        return map();
      case "struct":
        return struct();
      default:
        throw new IllegalArgumentException("Schema: column '" + column + "': unknown type '" + word + "'; known types: "
            + KNOWN);
    }
  }

  private Type decimal(int start) {
    expect('(', "decimal needs a precision and scale, like decimal(10,2)");
    int precision = number("decimal precision");
    expect(',', "decimal needs a precision and scale, like decimal(10,2)");
    int scale = number("decimal scale");
    expect(')', "decimal needs a precision and scale, like decimal(10,2)");
    if (precision < 1 || precision > 38) {
      throw error("decimal precision must be 1..38, not " + precision + " in '" + text.substring(start, pos) + "'");
    }
    if (scale > precision) {
      throw error("decimal scale " + scale + " is larger than its precision " + precision);
    }
    return Types.DecimalType.of(precision, scale);
  }

  private Type fixed() {
    skipSpace();
    char open = peek();
    if (open != '(' && open != '[') {
      throw error("fixed needs a length, like fixed(16)");
    }
    pos++;
    int length = number("fixed length");
    expect(open == '(' ? ')' : ']', "fixed needs a length, like fixed(16)");
    if (length < 1) {
      throw error("fixed length must be positive, not " + length);
    }
    return Types.FixedType.ofLength(length);
  }

  private Type list() {
    expect('<', "list needs an element type, like list<string>");
    Type element = type();
    expect('>', "list<...> is not closed");
    return Types.ListType.ofOptional(nextId++, element);
  }

  private Type map() {
    expect('<', "map needs a key and a value type, like map<string,long>");
    Type key = type();
    expect(',', "map needs a key and a value type, like map<string,long>");
    Type value = type();
    expect('>', "map<...> is not closed");
    int keyId = nextId++;
    return Types.MapType.ofOptional(keyId, nextId++, key, value);
  }

  private Type struct() {
    expect('<', "struct needs fields, like struct<a: long, b: string>");
    List<Types.NestedField> fields = fields(false);
    expect('>', "struct<...> is not closed");
    return Types.StructType.of(fields);
  }

  /** {@code not null} = true, {@code null} or nothing = false. */
  private boolean nullability() {
    skipSpace();
    int save = pos;
    String word = word().toLowerCase(Locale.ROOT);
    if (word.equals("not")) {
      skipSpace();
      if (word().equalsIgnoreCase("null")) {
        return true;
      }
      throw error("expected 'not null'");
    }
    if (word.equals("null")) {
      return false;
    }
    pos = save;
    return false;
  }

  private String name(String what) {
    char c = atEnd() ? 0 : peek();
    if (c == '`' || c == '"') {
      int end = text.indexOf(c, pos + 1);
      if (end < 0) {
        throw new IllegalArgumentException("Schema: " + what + ": unclosed quote in " + rest());
      }
      String name = text.substring(pos + 1, end);
      pos = end + 1;
      if (name.isEmpty()) {
        throw new IllegalArgumentException("Schema: " + what + " has an empty name");
      }
      return name;
    }
    String name = word();
    if (name.isEmpty()) {
      throw new IllegalArgumentException("Schema: " + what + " has no name"
          + (atEnd() ? " (trailing comma?)" : " at '" + rest() + "'"));
    }
    return name;
  }

  private String word() {
    int start = pos;
    while (!atEnd() && (Character.isLetterOrDigit(peek()) || peek() == '_' || peek() == '$' || peek() == '-')) {
      pos++;
    }
    return text.substring(start, pos);
  }

  private int number(String what) {
    skipSpace();
    String digits = word();
    try {
      return Integer.parseInt(digits);
    } catch (NumberFormatException e) {
      throw error(what + " must be a number, not '" + digits + "'");
    }
  }

  private void expect(char c, String hint) {
    if (!accept(c)) {
      throw error(hint + (atEnd() ? "" : "; found '" + rest() + "'"));
    }
  }

  private boolean accept(char c) {
    skipSpace();
    if (!atEnd() && peek() == c) {
      pos++;
      return true;
    }
    return false;
  }

  private void skipSpace() {
    while (!atEnd() && Character.isWhitespace(peek())) {
      pos++;
    }
  }

  private boolean atEnd() {
    return pos >= text.length();
  }

  private char peek() {
    return text.charAt(pos);
  }

  private String rest() {
    String rest = text.substring(Math.min(pos, text.length()));
    return rest.length() > 40 ? rest.substring(0, 40) + "..." : rest;
  }

  private IllegalArgumentException error(String message) {
    return new IllegalArgumentException(
        "Schema" + (column == null ? "" : ": column '" + column + "'") + ": " + message);
  }
}
