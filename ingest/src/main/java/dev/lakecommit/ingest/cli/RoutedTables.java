package dev.lakecommit.ingest.cli;

import dev.lakecommit.iceberg.TablePattern;
import java.util.function.Function;
import org.apache.iceberg.Schema;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * {@code --route-by FIELD}: each record's table is {@code --table} with {@code ${FIELD}} replaced by the record's
 * value of the field ({@code --route-by kind --table 'shop.${kind}'} writes a record of kind {@code order} to
 * {@code shop.order}).
 */
record RoutedTables(String field, String pattern) {

  /**
   * @throws IllegalArgumentException naming the option if the pattern lacks the placeholder or is no table name
   */
  static RoutedTables of(String field, String pattern) {
    String placeholder = TablePattern.placeholder(field);
    if (!pattern.contains(placeholder)) {
      throw new IllegalArgumentException("Invalid option --table: '" + pattern + "' names no table per record: with"
          + " --route-by " + field + " it holds " + placeholder + ", e.g. --table 'db." + placeholder + "'");
    }
    if (!TablePattern.isPlainName(pattern.replace(placeholder, "x"))) {
      throw new IllegalArgumentException("Invalid option --table: '" + pattern + "' (use namespace.name with "
          + placeholder + " in it: letters, digits, _ and -, no empty part, no /)");
    }
    return new RoutedTables(field, pattern);
  }

  /**
   * The router of records of {@code schema}.
   *
   * @throws IllegalArgumentException naming the option if the schema has no such top-level column
   */
  Function<Record, TableIdentifier> router(Schema schema) {
    Types.NestedField column = schema.findField(field);
    if (column == null || schema.asStruct().field(field) == null) {
      throw new IllegalArgumentException("Invalid option --route-by: the input has no top-level column '" + field
          + "' (its columns: " + schema.columns().stream().map(Types.NestedField::name).toList() + ")");
    }
    if (!column.type().isPrimitiveType()) {
      throw new IllegalArgumentException("Invalid option --route-by: column '" + field + "' is " + column.type()
          + ", not a value a table can be named by");
    }
    int position = schema.columns().indexOf(column);
    TablePattern tables = new TablePattern(field, pattern);
    return record -> tables.table(record.get(position, Object.class), record);
  }
}
