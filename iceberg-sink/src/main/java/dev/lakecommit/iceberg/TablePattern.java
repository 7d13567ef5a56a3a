package dev.lakecommit.iceberg;

import java.util.Objects;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * A table per record from one of its values: {@code shop.${kind}} with the record's value of {@code kind} in place
 * of the placeholder ({@code shop.order} for a record of kind {@code order}). The values and the names they make
 * are plain: letters, digits, {@code _} and {@code -}, so that a value never reaches another namespace or a path.
 *
 * @param field the record's field whose value names the table
 * @param pattern the table name with {@code ${field}} in it
 */
public record TablePattern(String field, String pattern) {

  /**
   * @throws IllegalArgumentException if the pattern lacks the placeholder or makes no {@code namespace.name}
   */
  public TablePattern {
    Objects.requireNonNull(field, "field");
    Objects.requireNonNull(pattern, "pattern");
    String placeholder = placeholder(field);
    if (!pattern.contains(placeholder)) {
      throw new IllegalArgumentException("Table pattern '" + pattern + "' names no table per record: it must hold "
          + placeholder + ", e.g. 'db." + placeholder + "'");
    }
    if (!isPlainName(pattern.replace(placeholder, "x"))) {
      throw new IllegalArgumentException("Invalid table pattern '" + pattern + "' (use namespace.name with "
          + placeholder + " in it: letters, digits, _ and -, no empty part, no /)");
    }
  }

  /** {@code ${field}}. */
  public static String placeholder(String field) {
    return "${" + field + "}";
  }

  /** Whether {@code table} is {@code namespace.name} (or deeper), each part letters, digits, {@code _} and {@code -}. */
  public static boolean isPlainName(String table) {
    String[] parts = table.split("\\.", -1);
    boolean valid = parts.length >= 2;
    for (String part : parts) {
      valid &= part.matches("[A-Za-z0-9_][A-Za-z0-9_-]*");
    }
    return valid;
  }

  /**
   * The table of a record whose field holds {@code value}.
   *
   * @param record the record, for the message (abbreviated)
   * @throws IllegalArgumentException naming the record if the value is missing or makes no plain table name
   */
  public TableIdentifier table(Object value, Object record) {
    if (value == null) {
      throw new IllegalArgumentException("The record " + abbreviated(record) + " has no value in column '" + field
          + "' that names its table: no table to write it to");
    }
    String text = value.toString();
    String name = pattern.replace(placeholder(field), text);
    if (!text.matches("[A-Za-z0-9_-]+") || !isPlainName(name)) {
      throw new IllegalArgumentException("The record " + abbreviated(record) + " routes to '" + name + "' (" + field
          + " = '" + text + "'), which is no table name: the value must be letters, digits, _ and - only");
    }
    return TableIdentifier.parse(name);
  }

  private static String abbreviated(Object record) {
    String text = String.valueOf(record);
    return text.length() > 200 ? text.substring(0, 200) + "…" : text;
  }
}
