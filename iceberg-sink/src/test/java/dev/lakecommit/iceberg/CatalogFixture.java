package dev.lakecommit.iceberg;

import java.nio.file.Path;
import java.util.Map;
import org.apache.iceberg.catalog.Catalog;

/** A real catalog for tests; every call makes a new, independent catalog instance over the same storage. */
interface CatalogFixture {

  String name();

  Map<String, String> properties();

  /** A new client of the catalog, loaded as Lakecommit loads catalogs ({@link CatalogLoader}). */
  default Catalog newCatalog() {
    return CatalogLoader.load(name(), properties(), new org.apache.hadoop.conf.Configuration());
  }

  /** Catalogs every committer suite runs over; each is a real catalog with its own storage under a directory. */
  java.util.List<String> NAMES = java.util.List.of("hadoop", "jdbc-sqlite", "rest");

  /**
   * The named catalog over storage in {@code dir}; a server it needs is started now and added to
   * {@code servers}, for the test to close.
   */
  static CatalogFixture named(String name, Path dir, java.util.List<AutoCloseable> servers) {
    switch (name) {
      case "hadoop":
        return hadoop(dir);
      case "jdbc-sqlite":
        return sqlite(dir);
      case "rest":
        try {
          RestCatalogServer server = RestCatalogServer.start(dir);
          servers.add(server);
          return rest(server);
        } catch (Exception e) {
          throw new IllegalStateException("Cannot start the REST catalog server", e);
        }
      case "jdbc-postgres":
        return postgres(dir);
      case "hive":
        return hive(dir);
      default:
        throw new IllegalArgumentException("Unknown catalog fixture " + name);
    }
  }

  /** Catalogs behind real servers (shared per test JVM), for the {@code *IT} variants of the suites. */
  java.util.List<String> SERVER_NAMES = java.util.List.of("jdbc-postgres", "hive");

  /** A JDBC catalog in a fresh database of the shared embedded PostgreSQL. */
  static CatalogFixture postgres(Path dir) {
    var pg = SharedServers.postgres();
    return fixture("jdbc-postgres", Map.of(
        "type", "jdbc",
        "uri", SharedServers.newPostgresDatabase(),
        "jdbc.user", pg.user(),
        "jdbc.password", pg.password(),
        "warehouse", dir.resolve("warehouse").toUri().toString()));
  }

  /**
   * Iceberg's HiveCatalog on the shared in-process metastore, with the test table dropped first so each test
   * starts from nothing (tables of a test keep their own warehouse directory).
   */
  static CatalogFixture hive(Path dir) {
    var hms = SharedServers.metastore();
    java.util.Map<String, String> properties = new java.util.HashMap<>(hms.clientConf());
    properties.putAll(hms.icebergCatalogProperties());
    properties.put("type", "hive");
    properties.put("warehouse", dir.resolve("warehouse").toUri().toString());
    CatalogFixture fixture = fixture("hive", Map.copyOf(properties));
    Catalog catalog = fixture.newCatalog();
    catalog.dropTable(TestTables.IDENT, false);
    return fixture;
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

  /** Iceberg's REST catalog server in front of SQLite, on loopback; the server lives as long as the test class. */
  static CatalogFixture rest(RestCatalogServer server) {
    return fixture("rest", Map.of("type", "rest", "uri", server.uri()));
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
