package dev.lakecommit.ingest.cli;

import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * The target table and its catalog, by Iceberg's own catalog property names. Without catalog properties the
 * tool uses the embedded default: a JDBC catalog on a SQLite file inside a local warehouse directory.
 */
public final class TableOptions {
  @Option(names = "--table", required = true, paramLabel = "NAMESPACE.NAME",
      description = "The target table, e.g. demo.orders.")
  String table;

  @Option(names = "--warehouse", paramLabel = "DIR", defaultValue = "lakecommit-warehouse",
      description = "Local warehouse of the embedded default catalog (default: ${DEFAULT-VALUE}).")
  Path warehouse;

  @Option(names = "--catalog-name", paramLabel = "NAME", defaultValue = "lakecommit",
      description = "Catalog name (default: ${DEFAULT-VALUE}).")
  String catalogName;

  @Option(names = {"--catalog-property", "-C"}, paramLabel = "KEY=VALUE", mapFallbackValue = "",
      description = "An Iceberg catalog property, e.g. type=rest, uri=..., warehouse=s3://bucket/wh, "
          + "s3.endpoint=...; repeat for each. Without any, the embedded SQLite catalog is used.")
  Map<String, String> catalogProperties = new LinkedHashMap<>();

  /** The catalog properties in force: the given ones, or the embedded default's. */
  public Map<String, String> catalogProperties() {
    if (!catalogProperties.isEmpty()) {
      return catalogProperties;
    }
    Path dir = warehouse.toAbsolutePath().normalize();
    Map<String, String> embedded = new LinkedHashMap<>();
    embedded.put("type", "jdbc");
    embedded.put("uri", "jdbc:sqlite:" + dir.resolve("catalog.db"));
    embedded.put("warehouse", dir.toUri().toString());
    embedded.put("jdbc.schema-version", "V1");
    return embedded;
  }

  /** Hadoop settings for {@code s3a://} and other Hadoop paths: the {@code fs.*} catalog properties. */
  public org.apache.hadoop.conf.Configuration hadoopConf() {
    return dev.lakecommit.iceberg.HadoopConfs.from(catalogProperties());
  }

  /** The existing table, through its catalog. */
  public org.apache.iceberg.Table loadTable() {
    return org.apache.iceberg.CatalogUtil.buildIcebergCatalog(catalogName, catalogProperties(), hadoopConf())
        .loadTable(org.apache.iceberg.catalog.TableIdentifier.parse(table));
  }

  public boolean embedded() {
    return catalogProperties.isEmpty();
  }

  public String table() {
    return table;
  }

  /** Where the tool keeps its own state by default: beside the embedded warehouse, or in the working dir. */
  public Path stateDir() {
    return embedded() ? warehouse.toAbsolutePath().normalize().resolve("_lakecommit") : Path.of(".lakecommit");
  }

  public IcebergSinkConfig.Builder sinkConfig() {
    if (embedded()) {
      try {
        java.nio.file.Files.createDirectories(warehouse);
      } catch (java.io.IOException e) {
        throw new IllegalArgumentException("Cannot create warehouse directory " + warehouse + ": " + e.getMessage(),
            e);
      }
    }
    return IcebergSinkConfig.builder().catalogName(catalogName).catalogProperties(catalogProperties())
        .table(table);
  }

  public String describeCatalog() {
    return catalogName + " " + Redaction.redact(catalogProperties());
  }
}
