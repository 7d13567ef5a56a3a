package dev.lakecommit.ingest.source;

import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * What the tool asks the source database itself: the captured tables' columns and primary keys (the lake tables'
 * schemas and upsert keys), and the state of the job's replication slot.
 */
public final class PostgresTables {
  private PostgresTables() {}

  /**
   * A captured table as the lake sees it.
   *
   * @param name the source table's name ({@code source.table} of its events; the schema is left out)
   * @param schema the lake table's columns, in the source table's order; key columns required
   * @param key the primary key's columns, empty if the table has none (it is then appended to)
   */
  public record SourceTable(String name, Schema schema, List<String> key) {}

  /** Where a replication slot stands, or that it is missing ({@code exists} false). */
  public record Slot(boolean exists, boolean active, String confirmedFlushLsn, String walStatus) {}

  static Connection connect(PostgresInput input, String password) throws SQLException {
    Properties properties = new Properties();
    properties.setProperty("user", input.user());
    if (password != null) {
      properties.setProperty("password", password);
    }
    properties.setProperty("ApplicationName", "lakecommit");
    properties.setProperty("connectTimeout", "30");
    return DriverManager.getConnection(input.jdbcUrl(), properties);
  }

  /**
   * The captured tables by their {@code source.table} name.
   *
   * @throws IOException naming the input and table if a table is missing, two share a name across schemas, or a
   *     column has a type the lake cannot hold
   */
  public static Map<String, SourceTable> describe(PostgresInput input, String password) throws IOException {
    Map<String, SourceTable> tables = new LinkedHashMap<>();
    try (Connection connection = connect(input, password)) {
      for (String qualified : input.tables()) {
        int dot = qualified.indexOf('.');
        String schemaName = qualified.substring(0, dot);
        String tableName = qualified.substring(dot + 1);
        SourceTable table = describe(connection, input, schemaName, tableName);
        SourceTable other = tables.put(tableName, table);
        if (other != null) {
          throw new IOException("PostgreSQL input " + input + ": two captured tables are named " + tableName
              + " (in different schemas); the lake tables are named by source.table, so capture one of them per job");
        }
      }
    } catch (SQLException e) {
      throw new IOException("Cannot read the tables of PostgreSQL input " + input + ": " + e.getMessage(), e);
    }
    return tables;
  }

  private static SourceTable describe(Connection connection, PostgresInput input, String schemaName,
      String tableName) throws SQLException, IOException {
    List<String> key = new ArrayList<>();
    try (PreparedStatement statement = connection.prepareStatement(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
            + " JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
            + " WHERE i.indisprimary AND n.nspname = ? AND c.relname = ? ORDER BY array_position(i.indkey, a.attnum)")) {
      statement.setString(1, schemaName);
      statement.setString(2, tableName);
      try (ResultSet rows = statement.executeQuery()) {
        while (rows.next()) {
          key.add(rows.getString(1));
        }
      }
    }
    List<Types.NestedField> columns = new ArrayList<>();
    try (PreparedStatement statement = connection.prepareStatement(
        "SELECT column_name, data_type, udt_name, numeric_precision, numeric_scale, character_maximum_length"
            + " FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position")) {
      statement.setString(1, schemaName);
      statement.setString(2, tableName);
      try (ResultSet rows = statement.executeQuery()) {
        int id = 1;
        while (rows.next()) {
          String column = rows.getString(1);
          Type type = type(rows.getString(2), rows.getString(3), (Integer) rows.getObject(4),
              (Integer) rows.getObject(5), (Integer) rows.getObject(6));
          if (type == null) {
            throw new IOException("PostgreSQL input " + input + ": column " + column + " of table " + schemaName + "."
                + tableName + " has type " + rows.getString(2) + " (" + rows.getString(3) + "), which a lake table"
                + " cannot hold; leave the table out of ?tables=");
          }
          // the key's columns are required (as the upsert key must be); the others optional, so that a column the
          // source gives up its NOT NULL on later still fits
          columns.add(key.contains(column) ? Types.NestedField.required(id++, column, type)
              : Types.NestedField.optional(id++, column, type));
        }
      }
    }
    if (columns.isEmpty()) {
      throw new IOException("PostgreSQL input " + input + ": no table " + schemaName + "." + tableName
          + " (or the user cannot see it)");
    }
    List<String> toastable = new ArrayList<>();
    boolean wholeRows = false;
    try (PreparedStatement statement = connection.prepareStatement(
        "SELECT c.relreplident, a.attname, t.typstorage FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            + " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
            + " JOIN pg_type t ON t.oid = a.atttypid WHERE n.nspname = ? AND c.relname = ? ORDER BY a.attnum")) {
      statement.setString(1, schemaName);
      statement.setString(2, tableName);
      try (ResultSet rows = statement.executeQuery()) {
        while (rows.next()) {
          wholeRows = "f".equals(rows.getString(1));
          if (!"p".equals(rows.getString(3))) {
            toastable.add(rows.getString(2));
          }
        }
      }
    }
    if (!wholeRows && !toastable.isEmpty()) {
      // an update that leaves such a value unchanged does not carry it: its upsert would overwrite it in the lake
      throw new IOException("PostgreSQL input " + input + ": table " + schemaName + "." + tableName + " has columns"
          + " whose large values PostgreSQL leaves out of an update's change unless the table logs whole rows ("
          + String.join(", ", toastable) + "): give it REPLICA IDENTITY FULL (ALTER TABLE " + schemaName + "."
          + tableName + " REPLICA IDENTITY FULL)");
    }
    java.util.Set<Integer> identifiers = new java.util.HashSet<>();
    for (String column : key) {
      identifiers.add(columns.stream().filter(f -> f.name().equals(column)).findFirst().orElseThrow().fieldId());
    }
    return new SourceTable(tableName, new Schema(columns, identifiers), List.copyOf(key));
  }

  /**
   * The lake type of a PostgreSQL column type as Debezium's events carry it, or null if none fits. Types without a
   * lake counterpart that Debezium sends as text (enums, json, intervals, network addresses, ...) are strings.
   */
  static Type type(String dataType, String udt, Integer precision, Integer scale, Integer length) {
    return switch (udt) {
      case "int2", "int4" -> Types.IntegerType.get();
      case "int8" -> Types.LongType.get();
      case "float4" -> Types.FloatType.get();
      case "float8" -> Types.DoubleType.get();
      case "bool" -> Types.BooleanType.get();
      case "numeric" -> precision != null && scale != null && precision <= 38
          ? Types.DecimalType.of(precision, scale) : Types.StringType.get();
      case "date" -> Types.DateType.get();
      case "time" -> Types.TimeType.get();
      case "timestamp" -> Types.TimestampType.withoutZone();
      case "timestamptz" -> Types.TimestampType.withZone();
      case "uuid" -> Types.UUIDType.get();
      case "bit" -> length != null && length == 1 ? Types.BooleanType.get() : Types.BinaryType.get();
      case "bytea", "varbit" -> Types.BinaryType.get();
      default -> "ARRAY".equals(dataType) ? null : Types.StringType.get();
    };
  }

  /**
   * The replication slot's state.
   *
   * @throws IOException naming the input if the server cannot be asked
   */
  public static Slot slot(PostgresInput input, String password, String slot) throws IOException {
    try (Connection connection = connect(input, password);
        PreparedStatement statement = connection.prepareStatement("SELECT active, confirmed_flush_lsn::text,"
            + " wal_status FROM pg_replication_slots WHERE slot_name = ? AND database = current_database()")) {
      statement.setString(1, slot);
      try (ResultSet rows = statement.executeQuery()) {
        if (!rows.next()) {
          return new Slot(false, false, null, null);
        }
        return new Slot(true, rows.getBoolean(1), rows.getString(2), rows.getString(3));
      }
    } catch (SQLException e) {
      throw new IOException("Cannot read replication slot " + slot + " of PostgreSQL input " + input + ": "
          + e.getMessage(), e);
    }
  }

  /**
   * Drops a replication slot that no checkpoint of the job refers to (a job that starts afresh).
   *
   * @throws IOException naming the slot, e.g. if a running copy of the job holds it
   */
  public static void dropSlot(PostgresInput input, String password, String slot) throws IOException {
    try (Connection connection = connect(input, password);
        PreparedStatement statement = connection.prepareStatement("SELECT pg_drop_replication_slot(?)")) {
      statement.setString(1, slot);
      statement.execute();
    } catch (SQLException e) {
      throw new IOException("Cannot drop replication slot " + slot + " of PostgreSQL input " + input + " (is the job "
          + "running elsewhere?): " + e.getMessage(), e);
    }
  }
}
