package dev.lakecommit.iceberg;

import dev.lakecommit.staging.S3Clients;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.UpdateSchema;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.types.Types;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Loads the catalog and the table before any data is written; creates or evolves the table if asked. */
final class TableSetup {
  private static final Logger LOG = LoggerFactory.getLogger(TableSetup.class);

  /** Metadata files a table the sink creates keeps besides the current one, unless the user sets its own. */
  static final int DEFAULT_PREVIOUS_VERSIONS_MAX = 100;

  private TableSetup() {}

  /**
   * The catalog of the configured properties; its S3FileIO, if it uses one, retries with {@link S3Clients} (unless
   * the properties name another {@code s3.client-factory-impl}), so a store outage is ridden through. A Hadoop
   * catalog is a {@link GuardedHadoopCatalog}, which never forks a table whose old metadata files are deleted
   * ({@link CatalogLoader}).
   */
  static Catalog loadCatalog(IcebergSinkConfig config) {
    try {
      return CatalogLoader.load(config.catalogName, config.catalogProperties,
          HadoopConfs.from(config.catalogProperties));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(String.format("Cannot load catalog '%s' (type=%s): %s",
          config.catalogName, config.catalogProperties.getOrDefault("type",
              config.catalogProperties.get("catalog-impl")), e.getMessage()), e);
    }
  }

  /**
   * The table, created if configured and missing. Its schema is not changed here: see {@link #writeSchema}; the
   * commit that adds the first files written with an evolved schema evolves the table.
   */
  static Table prepare(Catalog catalog, IcebergSinkConfig config) {
    Table table;
    try {
      table = catalog.loadTable(config.table);
    } catch (NoSuchTableException e) {
      if (config.createSchema == null) {
        throw new IllegalArgumentException(String.format(
            "Table %s does not exist in catalog '%s'; create it first or let the sink create it (createTable)",
            config.table, config.catalogName), e);
      }
      table = create(catalog, config);
    }
    return table;
  }

  /** The schema the writers write with: the table's, or the table's evolved to fit the configured one. */
  static Schema writeSchema(Table table, IcebergSinkConfig config) {
    return config.createSchema == null ? table.schema()
        : writeSchema(table, config.createSchema, config.addNewColumns);
  }

  private static Table create(Catalog catalog, IcebergSinkConfig config) {
    Namespace namespace = config.table.namespace();
    if (catalog instanceof SupportsNamespaces namespaces && !namespace.isEmpty()
        && !namespaces.namespaceExists(namespace)) {
      try {
        namespaces.createNamespace(namespace);
      } catch (AlreadyExistsException raced) {
        // created by another writer meanwhile
      }
    }
    Schema schema = config.createSchema;
    Map<String, String> properties = new java.util.HashMap<>(config.tableProperties);
    // Bounded metadata: without these Iceberg keeps every metadata.json of a table committed every checkpoint.
    properties.putIfAbsent(org.apache.iceberg.TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, "true");
    properties.putIfAbsent(org.apache.iceberg.TableProperties.METADATA_PREVIOUS_VERSIONS_MAX,
        Integer.toString(DEFAULT_PREVIOUS_VERSIONS_MAX));
    if (config.mode == CommitMode.UPSERT) {
      // Upserts need delete files (format v2) and a key; the key becomes the table's identifier fields.
      properties = new java.util.HashMap<>(properties);
      properties.putIfAbsent("format-version", "2");
      if (!config.upsertKey.isEmpty()) {
        java.util.Set<Integer> ids = new java.util.HashSet<>();
        for (String column : config.upsertKey) {
          Types.NestedField field = schema.asStruct().field(column);
          if (field == null || field.isOptional() || !field.type().isPrimitiveType()) {
            throw new IllegalArgumentException(String.format(
                "Invalid upsertKey: '%s' is not a required primitive top-level column of the table schema", column));
          }
          ids.add(field.fieldId());
        }
        schema = new Schema(schema.columns(), ids);
      }
    }
    try {
      Table table = catalog.createTable(config.table, schema,
          PartitionSpecs.parse(schema, config.partitionBy), properties);
      LOG.info("Created table {} partitioned by {}", config.table, config.partitionBy);
      return table;
    } catch (AlreadyExistsException raced) {
      return catalog.loadTable(config.table);
    }
  }

  /**
   * Checks the staged schema against the table's, by column name: every staged column must exist with the same
   * type, and a column the table requires must be required in the staged schema too. When allowed
   * ({@code addNewColumns}), missing optional columns are added and columns the staged schema widens the way
   * Iceberg allows (int to long, float to double, a wider decimal) are widened — in a schema that is not committed
   * here: the writers write with it (field ids as the table's schema update assigns them), their manifests carry
   * it, and the commit that adds their files evolves the table in the same transaction ({@link SchemaChange}).
   * The table alone: the table's schema; nothing is committed either way.
   */
  static Schema writeSchema(Table table, Schema staged, boolean addNewColumns) {
    List<Types.NestedField> missing = new ArrayList<>();
    List<Types.NestedField> widened = new ArrayList<>();
    List<Map.Entry<String, Types.NestedField>> nestedMissing = new ArrayList<>();
    for (Types.NestedField column : staged.columns()) {
      Types.NestedField existing = table.schema().findField(column.name());
      if (existing == null) {
        missing.add(column);
        continue;
      }
      if (!TypeWidening.sameShape(column.type(), existing.type())) {
        if (TypeWidening.widens(existing.type(), column.type())) {
          widened.add(column);
        } else if (!(column.type().isStructType() && existing.type().isStructType()
            && nestedAdditions(existing.type().asStructType(), column.type().asStructType(), column.name(),
                nestedMissing))) {
          throw new IllegalArgumentException(String.format(
              "Column '%s' is %s in the staged schema but %s in table %s", column.name(), column.type(),
              existing.type(), table.name()));
        }
      }
      if (existing.isRequired() && column.isOptional()) {
        throw new IllegalArgumentException(String.format(
            "Column '%s' may be null in the staged schema but is required in table %s", column.name(),
            table.name()));
      }
    }
    for (Types.NestedField column : table.schema().columns()) {
      if (column.isRequired() && staged.findField(column.name()) == null) {
        throw new IllegalArgumentException(String.format(
            "Table %s requires column '%s', which the staged schema lacks", table.name(), column.name()));
      }
    }
    if (missing.isEmpty() && widened.isEmpty() && nestedMissing.isEmpty()) {
      return table.schema();
    }
    if (!addNewColumns || missing.stream().anyMatch(Types.NestedField::isRequired)
        || nestedMissing.stream().anyMatch(e -> e.getValue().isRequired())) {
      List<String> changes = new ArrayList<>();
      missing.forEach(f -> changes.add("no column '" + f.name() + "'"));
      nestedMissing.forEach(e -> changes.add("no field '" + e.getKey() + "." + e.getValue().name() + "'"));
      widened.forEach(f -> changes.add("column '" + f.name() + "' narrower than " + f.type()));
      throw new IllegalArgumentException(String.format(
          "Table %s has %s of the staged schema (allow adding optional columns and widening types with "
              + "addNewColumns, --add-new-columns in the tool)", table.name(), String.join(", ", changes)));
    }
    UpdateSchema update = table.updateSchema();
    missing.forEach(f -> update.addColumn(f.name(), f.type(), f.doc()));
    nestedMissing.forEach(e -> update.addColumn(e.getKey(), e.getValue().name(), e.getValue().type(),
        e.getValue().doc()));
    widened.forEach(f -> update.updateColumn(f.name(), f.type().asPrimitiveType()));
    Schema evolved = update.apply();
    LOG.info("Writing to table {} with columns added {}, nested fields added {}, widened {}: the table evolves in "
            + "the commit of the first checkpoint", table.name(),
        missing.stream().map(Types.NestedField::name).toList(),
        nestedMissing.stream().map(e -> e.getKey() + "." + e.getValue().name()).toList(),
        widened.stream().map(f -> f.name() + " to " + f.type()).toList());
    return evolved;
  }

  /**
   * Whether the staged struct is the table's with fields added, at any depth, by name: collects each added field
   * with the dotted path of its parent. False if a field the table has changes its shape in the staged struct.
   */
  private static boolean nestedAdditions(Types.StructType table, Types.StructType staged, String path,
      List<Map.Entry<String, Types.NestedField>> added) {
    for (Types.NestedField field : staged.fields()) {
      Types.NestedField existing = table.field(field.name());
      if (existing == null) {
        added.add(Map.entry(path, field));
      } else if (existing.type().isStructType() && field.type().isStructType()) {
        if (!nestedAdditions(existing.type().asStructType(), field.type().asStructType(),
            path + "." + field.name(), added)) {
          return false;
        }
      } else if (!TypeWidening.sameShape(existing.type(), field.type())) {
        return false;
      }
    }
    return true;
  }

  static Map<String, String> nonNull(Map<String, String> map) {
    return map == null ? Map.of() : map;
  }
}
