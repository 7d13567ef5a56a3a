package dev.lakecommit.hive;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.TableType;
import org.apache.hadoop.hive.metastore.api.AlreadyExistsException;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.thrift.TException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads the table before any data is written, creates it if asked, and refuses a table the sink cannot write:
 * not Parquet, bucketed, transactional, a view, or with columns that differ from the staged schema.
 */
final class TableSetup {
  private static final Logger LOG = LoggerFactory.getLogger(TableSetup.class);

  static final String PARQUET_INPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat";
  static final String PARQUET_OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat";
  static final String PARQUET_SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe";
  /** Partition column types whose values the sink writes as Hive writes them. */
  private static final List<String> PARTITION_TYPES = List.of("string", "int", "bigint", "date", "boolean");

  private TableSetup() {}

  static HiveTable prepare(IMetaStoreClient client, HiveSinkConfig config) throws TException {
    Table table;
    try {
      table = client.getTable(config.database, config.tableName);
    } catch (NoSuchObjectException e) {
      if (config.createSchema == null) {
        throw new IllegalArgumentException(String.format(
            "Table %s does not exist in the metastore; create it first or let the sink create it (createTable)",
            config.table()), e);
      }
      table = create(client, config);
    }
    if (config.addNewColumns) {
      table = addNewColumns(client, table, config);
    }
    return check(table, config);
  }

  /**
   * Adds the staged schema's columns that the table lacks, as Hive's {@code ALTER TABLE ... ADD COLUMNS ...
   * CASCADE} does: after the other data columns, in the table and in every partition's own column list (Hive reads
   * a partition by its own list). Idempotent: a restart finds them added.
   */
  private static Table addNewColumns(IMetaStoreClient client, Table table, HiveSinkConfig config)
      throws TException {
    Schema staged = config.createSchema != null ? config.createSchema : config.schema;
    if (staged == null) {
      return table;
    }
    List<FieldSchema> added = new ArrayList<>();
    List<FieldSchema> columns = new ArrayList<>();
    List<String> widened = new ArrayList<>();
    for (FieldSchema column : table.getSd().getCols()) {
      Types.NestedField field = fieldNamed(staged, column.getName());
      String wider = field == null ? null : widerHiveType(column.getType(), field.type());
      if (wider != null) {
        widened.add(column.getName() + " " + column.getType() + " to " + wider);
        columns.add(new FieldSchema(column.getName(), wider, column.getComment()));
      } else {
        columns.add(column);
      }
    }
    // A partition column's values live in partition names, so widening it (int to bigint) changes only the
    // table's description; the metastore allows a partition key's type to change (as ALTER TABLE ... PARTITION
    // COLUMN does), not its name.
    List<FieldSchema> partitionKeys = new ArrayList<>();
    for (FieldSchema key : table.getPartitionKeys()) {
      Types.NestedField field = fieldNamed(staged, key.getName());
      String wider = field == null ? null : widerHiveType(key.getType(), field.type());
      if (wider != null && PARTITION_TYPES.contains(wider)) {
        widened.add("partition column " + key.getName() + " " + key.getType() + " to " + wider);
        partitionKeys.add(new FieldSchema(key.getName(), wider, key.getComment()));
      } else {
        partitionKeys.add(key);
      }
    }
    for (Types.NestedField field : staged.columns()) {
      String lower = field.name().toLowerCase(Locale.ROOT);
      boolean exists = table.getSd().getCols().stream().anyMatch(c -> c.getName().equalsIgnoreCase(lower))
          || table.getPartitionKeys().stream().anyMatch(c -> c.getName().equalsIgnoreCase(lower));
      if (!exists) {
        added.add(new FieldSchema(lower, hiveType(field, config), field.doc()));
      }
    }
    if (added.isEmpty() && widened.isEmpty()) {
      return table;
    }
    Table altered = table.deepCopy();
    columns.addAll(added);
    altered.getSd().setCols(columns);
    altered.setPartitionKeys(partitionKeys);
    org.apache.hadoop.hive.metastore.api.EnvironmentContext cascade =
        new org.apache.hadoop.hive.metastore.api.EnvironmentContext(new HashMap<>(Map.of("CASCADE", "true")));
    client.alter_table_with_environmentContext(table.getDbName(), table.getTableName(), altered, cascade);
    LOG.info("Added columns {} to table {}, widened {}", added.stream().map(FieldSchema::getName).toList(),
        config.table(), widened);
    return client.getTable(table.getDbName(), table.getTableName());
  }

  /**
   * The Hive type a data column of {@code hiveType} is widened to for {@code staged} values, or null: only int to
   * bigint and float to double, the widenings Hive's Parquet reader follows in files written before (HIVE-12080;
   * Hive 2.3's {@code ETypeConverter} reads INT32 as bigint and FLOAT as double). For a partition column the same
   * widening only changes the metastore's description (its values are in partition names).
   */
  static String widerHiveType(String hiveType, org.apache.iceberg.types.Type staged) {
    String type = HiveTypes.normalize(hiveType);
    if (type.equals("int") && staged.typeId() == org.apache.iceberg.types.Type.TypeID.LONG) {
      return "bigint";
    }
    if (type.equals("float") && staged.typeId() == org.apache.iceberg.types.Type.TypeID.DOUBLE) {
      return "double";
    }
    return null;
  }

  private static Table create(IMetaStoreClient client, HiveSinkConfig config) throws TException {
    try {
      client.getDatabase(config.database);
    } catch (NoSuchObjectException e) {
      try {
        client.createDatabase(new Database(config.database, "created by Lakecommit", null, new HashMap<>()));
      } catch (AlreadyExistsException raced) {
        // created by another writer meanwhile
      }
    }
    Schema schema = config.createSchema;
    List<FieldSchema> columns = new ArrayList<>();
    List<FieldSchema> partitionKeys = new ArrayList<>();
    for (String column : config.partitionBy) {
      Types.NestedField field = schema.findField(column);
      String type = hiveType(field, config);
      checkPartitionType(field.name(), type, config.table());
      partitionKeys.add(new FieldSchema(field.name().toLowerCase(Locale.ROOT), type, field.doc()));
    }
    for (Types.NestedField field : schema.columns()) {
      if (!isPartitionColumn(field.name(), config.partitionBy)) {
        columns.add(new FieldSchema(field.name().toLowerCase(Locale.ROOT), hiveType(field, config), field.doc()));
      }
    }
    StorageDescriptor sd = new StorageDescriptor();
    sd.setCols(columns);
    sd.setLocation(config.location);
    sd.setInputFormat(PARQUET_INPUT_FORMAT);
    sd.setOutputFormat(PARQUET_OUTPUT_FORMAT);
    sd.setSerdeInfo(new SerDeInfo(config.tableName, PARQUET_SERDE,
        new HashMap<>(Map.of("serialization.format", "1"))));
    sd.setParameters(new HashMap<>());
    sd.setBucketCols(new ArrayList<>());
    sd.setSortCols(new ArrayList<>());
    sd.setNumBuckets(-1);

    Map<String, String> parameters = new HashMap<>(config.tableProperties);
    parameters.put(TableParameters.VERSION_KEY, "0");
    parameters.put(TableParameters.TABLE_ID_KEY, java.util.UUID.randomUUID().toString());
    if (partitionKeys.isEmpty()) {
      TableParameters.setExactStats(parameters, Stats.ZERO);
    }
    Table table = new Table();
    table.setDbName(config.database);
    table.setTableName(config.tableName);
    table.setOwner(System.getProperty("user.name"));
    table.setPartitionKeys(partitionKeys);
    table.setSd(sd);
    if (config.external) {
      table.setTableType(TableType.EXTERNAL_TABLE.name());
      parameters.put("EXTERNAL", "TRUE");
    } else {
      table.setTableType(TableType.MANAGED_TABLE.name());
    }
    table.setParameters(parameters);
    try {
      client.createTable(table);
    } catch (AlreadyExistsException raced) {
      LOG.info("Table {} was created by another writer meanwhile", config.table());
      return client.getTable(config.database, config.tableName);
    }
    // As the metastore made it: Hive 4 turns a managed table it cannot manage (not transactional) into an external
    // one (TRANSLATED_TO_EXTERNAL).
    Table created = client.getTable(config.database, config.tableName);
    LOG.info("Created {} table {} at {} partitioned by {}{}", created.getTableType(), config.table(),
        created.getSd().getLocation(), config.partitionBy, created.getTableType().equals(table.getTableType()) ? ""
            : " (asked for a " + table.getTableType() + "; the metastore made it " + created.getTableType() + ")");
    return created;
  }

  private static String hiveType(Types.NestedField field, HiveSinkConfig config) {
    try {
      return HiveTypes.hiveType(field.type());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(String.format("Cannot create table %s: column '%s' has %s",
          config.table(), field.name(), e.getMessage()), e);
    }
  }

  /** The table as the sink will write it, or an exception naming the table and what does not fit. */
  static HiveTable check(Table table, HiveSinkConfig config) {
    String name = table.getDbName() + "." + table.getTableName();
    checkStorage(table, name);
    List<String> partitionColumns = new ArrayList<>();
    Map<String, String> partitionTypes = new LinkedHashMap<>();
    for (FieldSchema key : table.getPartitionKeys()) {
      partitionColumns.add(key.getName().toLowerCase(Locale.ROOT));
      partitionTypes.put(key.getName().toLowerCase(Locale.ROOT), key.getType());
    }
    if (config.createSchema != null && !sameNames(config.partitionBy, partitionColumns)) {
      throw new IllegalArgumentException(String.format(
          "Table %s is partitioned by %s, not by %s as configured", name, partitionColumns, config.partitionBy));
    }
    Schema staged = config.createSchema != null ? config.createSchema
        : config.schema != null ? config.schema : derive(table, name);
    checkColumns(table, name, staged, partitionColumns, partitionTypes);

    PartitionSpec.Builder spec = PartitionSpec.builderFor(staged);
    for (String column : partitionColumns) {
      spec.identity(fieldNamed(staged, column).name());
    }
    HiveFileFormat format = HiveFileFormat.of(name, table.getParameters() == null ? Map.of() : table.getParameters(),
        config.codec);
    return new HiveTable(table.getDbName(), table.getTableName(),
        HivePaths.baseLocation(new Path(table.getSd().getLocation())), partitionColumns, staged, spec.build(),
        format);
  }

  private static void checkStorage(Table table, String name) {
    String type = table.getTableType();
    if (!TableType.MANAGED_TABLE.name().equals(type) && !TableType.EXTERNAL_TABLE.name().equals(type)) {
      throw new IllegalArgumentException(String.format(
          "Table %s is a %s; the Hive sink writes managed or external tables only", name, type));
    }
    StorageDescriptor sd = table.getSd();
    String serde = sd.getSerdeInfo() == null ? null : sd.getSerdeInfo().getSerializationLib();
    if (!PARQUET_INPUT_FORMAT.equals(sd.getInputFormat()) || !PARQUET_OUTPUT_FORMAT.equals(sd.getOutputFormat())
        || !PARQUET_SERDE.equals(serde)) {
      throw new IllegalArgumentException(String.format(
          "Table %s is not stored as Parquet (input format %s, output format %s, serde %s); the Hive sink writes"
              + " Parquet files only", name, sd.getInputFormat(), sd.getOutputFormat(), serde));
    }
    if (sd.getNumBuckets() > 0 || (sd.getBucketCols() != null && !sd.getBucketCols().isEmpty())) {
      throw new IllegalArgumentException(String.format(
          "Table %s is bucketed by %s; the Hive sink cannot write bucket files", name, sd.getBucketCols()));
    }
    Map<String, String> params = table.getParameters() == null ? Map.of() : table.getParameters();
    if ("true".equalsIgnoreCase(params.get("transactional"))) {
      throw new IllegalArgumentException(String.format(
          "Table %s is transactional (ACID); the Hive sink writes plain Parquet tables only", name));
    }
    if (sd.getLocation() == null) {
      throw new IllegalArgumentException(String.format("Table %s has no location", name));
    }
  }

  private static void checkColumns(Table table, String name, Schema staged, List<String> partitionColumns,
      Map<String, String> partitionTypes) {
    for (Map.Entry<String, String> key : partitionTypes.entrySet()) {
      Types.NestedField field = fieldNamed(staged, key.getKey());
      if (field == null) {
        throw new IllegalArgumentException(String.format(
            "Table %s is partitioned by column '%s', which the staged schema lacks", name, key.getKey()));
      }
      checkPartitionType(key.getKey(), key.getValue(), name);
      checkType(field, key.getValue(), name);
    }
    List<FieldSchema> columns = table.getSd().getCols();
    for (FieldSchema column : columns) {
      Types.NestedField field = fieldNamed(staged, column.getName());
      if (field == null) {
        throw new IllegalArgumentException(String.format(
            "Table %s has column '%s' (%s), which the staged schema lacks", name, column.getName(),
            column.getType()));
      }
      checkType(field, column.getType(), name);
    }
    for (Types.NestedField field : staged.columns()) {
      String lower = field.name().toLowerCase(Locale.ROOT);
      boolean inTable = partitionColumns.contains(lower)
          || columns.stream().anyMatch(c -> c.getName().equalsIgnoreCase(lower));
      if (!inTable) {
        throw new IllegalArgumentException(String.format(
            "Column '%s' of the staged schema is not in table %s (columns %s, partition columns %s)", field.name(),
            name, columns.stream().map(FieldSchema::getName).toList(), partitionColumns));
      }
    }
  }

  private static void checkPartitionType(String column, String hiveType, String table) {
    String type = HiveTypes.normalize(hiveType);
    if (!PARTITION_TYPES.contains(type)) {
      throw new IllegalArgumentException(String.format(
          "Partition column '%s' of table %s is %s; the Hive sink writes partition columns of types %s", column,
          table, type, PARTITION_TYPES));
    }
  }

  private static void checkType(Types.NestedField field, String hiveType, String table) {
    if (!HiveTypes.matches(field.type(), hiveType)) {
      String staged;
      try {
        staged = HiveTypes.hiveType(field.type());
      } catch (IllegalArgumentException e) {
        staged = field.type().toString();
      }
      throw new IllegalArgumentException(String.format(
          "Column '%s' is %s in table %s but %s in the staged schema", field.name(), HiveTypes.normalize(hiveType),
          table, staged));
    }
  }

  /** The staged schema of a table nobody described: its columns, then its partition columns. */
  private static Schema derive(Table table, String name) {
    List<Types.NestedField> fields = new ArrayList<>();
    List<FieldSchema> all = new ArrayList<>(table.getSd().getCols());
    all.addAll(table.getPartitionKeys());
    int id = 1;
    for (FieldSchema column : all) {
      Optional<Type> type = HiveTypes.icebergType(column.getType());
      if (type.isEmpty()) {
        throw new IllegalArgumentException(String.format(
            "Column '%s' of table %s is %s; configure the staged schema (schema(..)) for tables with such columns",
            column.getName(), name, column.getType()));
      }
      fields.add(Types.NestedField.optional(id++, column.getName().toLowerCase(Locale.ROOT), type.get(),
          column.getComment()));
    }
    return new Schema(fields);
  }

  private static Types.NestedField fieldNamed(Schema schema, String name) {
    return schema.caseInsensitiveFindField(name);
  }

  private static boolean isPartitionColumn(String column, List<String> partitionBy) {
    return partitionBy.stream().anyMatch(p -> p.equalsIgnoreCase(column));
  }

  private static boolean sameNames(List<String> a, List<String> b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      if (!a.get(i).equalsIgnoreCase(b.get(i))) {
        return false;
      }
    }
    return true;
  }
}
