package dev.lakecommit.iceberg;

import java.nio.file.Path;
import java.util.Map;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;

/** A real catalog for tests; every call makes a new, independent catalog instance over the same storage. */
interface CatalogFixture {

  String name();

  Map<String, String> properties();

  default Catalog newCatalog() {
    return CatalogUtil.buildIcebergCatalog(name(), properties(), new org.apache.hadoop.conf.Configuration());
  }

  static CatalogFixture hadoop(Path dir) {
    return fixture("hadoop", Map.of("type", "hadoop", "warehouse", dir.resolve("warehouse").toUri().toString()));
  }

  static CatalogFixture sqlite(Path dir) {
    return fixture("jdbc-sqlite", Map.of(
        "type", "jdbc",
        "uri", "jdbc:sqlite:" + dir.resolve("catalog.db"),
        "warehouse", dir.resolve("warehouse").toUri().toString(),
        "jdbc.schema-version", "V1"));
  }

  private static CatalogFixture fixture(String name, Map<String, String> properties) {
    return new CatalogFixture() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public Map<String, String> properties() {
        return properties;
      }

      @Override
      public String toString() {
        return name;
      }
    };
  }
}
