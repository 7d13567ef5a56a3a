package dev.lakecommit.iceberg;

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
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Loads the catalog and the table before any data is written; creates or evolves the table if asked. */
final class TableSetup {
  private static final Logger LOG = LoggerFactory.getLogger(TableSetup.class);

  /** Metadata files a table the sink creates keeps besides the current one, unless the user sets its own. */
  static final int DEFAULT_PREVIOUS_VERSIONS_MAX = 100;

  private TableSetup() {}

  static Catalog loadCatalog(IcebergSinkConfig config) {
    try {
      return CatalogUtil.buildIcebergCatalog(config.catalogName, config.catalogProperties,
          HadoopConfs.from(config.catalogProperties));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(String.format("Cannot load catalog '%s' (type=%s): %s",
          config.catalogName, config.catalogProperties.getOrDefault("type",
              config.catalogProperties.get("catalog-impl")), e.getMessage()), e);
    }
  }

  /** The table, created or evolved as configured; its schema fits what the writers stage. */
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
    if (config.createSchema != null) {
      table = fit(table, config.createSchema, config.addNewColumns);
    }
    return table;
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
   * type, and a column the table requires must be required in the staged schema too. Missing optional columns
   * are added when allowed.
   */
  static Table fit(Table table, Schema staged, boolean addNewColumns) {
    List<Types.NestedField> missing = new ArrayList<>();
    for (Types.NestedField column : staged.columns()) {
      Types.NestedField existing = table.schema().findField(column.name());
      if (existing == null) {
        missing.add(column);
        continue;
      }
      if (!sameShape(column.type(), existing.type())) {
        throw new IllegalArgumentException(String.format(
            "Column '%s' is %s in the staged schema but %s in table %s", column.name(), column.type(),
            existing.type(), table.name()));
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
    if (missing.isEmpty()) {
      return table;
    }
    if (!addNewColumns || missing.stream().anyMatch(Types.NestedField::isRequired)) {
      throw new IllegalArgumentException(String.format(
          "Table %s has no column%s %s of the staged schema (allow adding optional columns with addNewColumns)",
          table.name(), missing.size() > 1 ? "s" : "",
          String.join(", ", missing.stream().map(f -> "'" + f.name() + "'").toList())));
    }
    UpdateSchema update = table.updateSchema();
    missing.forEach(f -> update.addColumn(f.name(), f.type(), f.doc()));
    update.commit();
    LOG.info("Added columns {} to table {}", missing.stream().map(Types.NestedField::name).toList(), table.name());
    table.refresh();
    return table;
  }

  /** Types equal but for field ids. */
  static boolean sameShape(Type a, Type b) {
    if (a.isPrimitiveType() || b.isPrimitiveType()) {
      return a.equals(b);
    }
    if (a.typeId() != b.typeId()) {
      return false;
    }
    List<Types.NestedField> fa = a.asNestedType().fields();
    List<Types.NestedField> fb = b.asNestedType().fields();
    if (fa.size() != fb.size()) {
      return false;
    }
    for (int i = 0; i < fa.size(); i++) {
      boolean namesMatch = a.isStructType() ? fa.get(i).name().equals(fb.get(i).name()) : true;
      if (!namesMatch || !sameShape(fa.get(i).type(), fb.get(i).type())) {
        return false;
      }
    }
    return true;
  }

  static Map<String, String> nonNull(Map<String, String> map) {
    return map == null ? Map.of() : map;
  }
}
