package dev.lakecommit.ingest.cli;

import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * The target table and its catalog, by Iceberg's own catalog property names. Without catalog properties the
 * tool uses the embedded default: a JDBC catalog on a SQLite file inside a local warehouse directory.
 *
 * <p>With {@code --target hive} the table is a Hive table in a Hive Metastore: {@code --metastore-uri} (or
 * {@code -C uri=...} / {@code -C hive.metastore.uris=...}, as users of Iceberg's HiveCatalog pass it), and the
 * {@code -C} properties that are Hadoop or Hive settings ({@value #HADOOP_PREFIXES_TEXT}) configure the metastore
 * client and the table's storage (e.g. {@code fs.s3a.*} for {@code s3a://} locations).
 */
public final class TableOptions {
  /** Prefixes of {@code -C} keys passed to Hadoop (and, for Hive, to the metastore client). */
  static final List<String> HADOOP_PREFIXES = List.of("fs.", "hive.", "hadoop.", "dfs.", "parquet.");
  static final String HADOOP_PREFIXES_TEXT = "fs.*, hive.*, hadoop.*, dfs.*, parquet.*";
  private static final String METASTORE_URIS = "hive.metastore.uris";
  /**
   * The tool's local file system unless {@code -C fs.file.impl=...} names one: Hadoop's, without a {@code chmod}
   * process forked per directory ({@link dev.lakecommit.staging.NoForkLocalFileSystem}).
   */
  static final String LOCAL_FILE_SYSTEM_KEY = "fs.file.impl";
  static final String LOCAL_FILE_SYSTEM = dev.lakecommit.staging.NoForkLocalFileSystem.class.getName();

  @Option(names = "--target", paramLabel = "iceberg|hive", defaultValue = "iceberg",
      description = "Kind of table: iceberg (default) or hive (a Parquet table in a Hive Metastore).")
  TableKind target = TableKind.ICEBERG;

  @Option(names = "--metastore-uri", paramLabel = "thrift://HOST:PORT",
      description = "The Hive Metastore of --target hive (also accepted as -C uri=... or "
          + "-C hive.metastore.uris=...).")
  String metastoreUri;

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

  /** Something that reads the input and may find it missing. */
  interface InputOpener<T> {
    T open() throws java.io.IOException;
  }

  /**
   * Opens the input of an option; an input that does not exist is a usage error naming the option (exit code 2),
   * found before anything is created.
   */
  static <T> T input(String option, InputOpener<T> opener) throws java.io.IOException {
    try {
      return opener.open();
    } catch (java.io.FileNotFoundException | java.nio.file.NoSuchFileException e) {
      throw new IllegalArgumentException("Invalid option " + option + ": " + e.getMessage(), e);
    }
  }

  /**
   * Checks the table name ({@link #checkTableName}) and that an Iceberg {@code HiveCatalog} names its metastore.
   *
   * @throws IllegalArgumentException naming the option and the rule
   */
  void checkTableAndCatalog() {
    checkTableName();
    checkHiveCatalogUri(TableOptions::hiveSiteMetastoreUris);
  }

  /** Iceberg's Hive catalog: {@code -C type=hive} or its class as {@code -C catalog-impl}. */
  private boolean icebergHiveCatalog() {
    return target == TableKind.ICEBERG && ("hive".equalsIgnoreCase(catalogProperties.get("type"))
        || "org.apache.iceberg.hive.HiveCatalog".equals(catalogProperties.get("catalog-impl")));
  }

  /**
   * Without a metastore URI, Iceberg's {@code HiveCatalog} would start a metastore inside the tool, on an embedded
   * database: the tool carries no such server (only its Thrift client), and a metastore of one process would not
   * be the one other engines read. A URI is {@code -C uri}, {@code -C hive.metastore.uris} (passed on as the
   * catalog's {@code uri}), or the one a {@code hive-site.xml} names ({@code hiveSite}: looked up only without the
   * options).
   */
  void checkHiveCatalogUri(java.util.function.Supplier<String> hiveSite) {
    if (icebergHiveCatalog() && givenMetastoreUri() == null && isBlank(hiveSite.get())) {
      throw new IllegalArgumentException("Missing option -C uri: Iceberg's Hive catalog needs the Hive Metastore "
          + "to use: -C uri=thrift://host:port (or -C " + METASTORE_URIS + "=..., or a hive-site.xml that names it); "
          + "the tool starts no metastore of its own");
    }
  }

  /**
   * The metastore URI of {@code -C uri} or {@code -C hive.metastore.uris}, or null if neither is given (a blank one
   * is none: Hive takes it for "start one here").
   *
   * @throws IllegalArgumentException if both are given and differ
   */
  private String givenMetastoreUri() {
    String uri = catalogProperties.get("uri");
    String fromHive = catalogProperties.get(METASTORE_URIS);
    if (!isBlank(uri) && !isBlank(fromHive)) {
      checkSame(uri, "-C " + METASTORE_URIS, fromHive);
    }
    return !isBlank(uri) ? uri : isBlank(fromHive) ? null : fromHive;
  }

  /** {@code hive.metastore.uris} of a {@code hive-site.xml} on the class path, in HIVE_CONF_DIR or HIVE_HOME/conf. */
  private static String hiveSiteMetastoreUris() {
    return new org.apache.hadoop.hive.conf.HiveConf().get(METASTORE_URIS, "");
  }

  private static boolean isBlank(String value) {
    return value == null || value.isBlank();
  }

  /**
   * Checks the table name: {@code namespace.name} with no empty part and no {@code /} ({@code t..u} and
   * {@code t.a/b} would share directories with other tables); a Hive table has exactly one database level.
   *
   * @throws IllegalArgumentException naming the option and the rule
   */
  void checkTableName() {
    String[] parts = table.split("\\.", -1);
    boolean valid = parts.length >= 2 && (target != TableKind.HIVE || parts.length == 2);
    for (String part : parts) {
      valid &= part.matches("[A-Za-z0-9_][A-Za-z0-9_-]*");
    }
    if (!valid) {
      throw new IllegalArgumentException("Invalid option --table: '" + table + "' (use namespace.name: letters, "
          + "digits, _ and -, no empty part, no /" + (target == TableKind.HIVE ? "; a Hive table is database.table"
              : "; nested namespaces as a.b.name where the catalog supports them") + ")");
    }
  }

  /** The catalog properties in force: the given ones, or the embedded default's. */
  public Map<String, String> catalogProperties() {
    if (!catalogProperties.isEmpty() || target == TableKind.HIVE) {
      // S3FileIO's upload buffers go to a directory of this process: what a killed run leaves is found by the next;
      // its S3 client rides through a store outage (S3Clients) unless the properties name another client factory
      Map<String, String> properties = new LinkedHashMap<>(catalogProperties);
      if (icebergHiveCatalog()) {
        // HiveCatalog takes the metastore from uri only, and a blank one would override a hive-site.xml's
        String given = givenMetastoreUri();
        properties.remove("uri");
        if (given != null) {
          properties.put("uri", given);
        }
      }
      properties.putIfAbsent(S3Staging.PROPERTY, S3Staging.ofThisProcess().toString());
      properties.putIfAbsent(LOCAL_FILE_SYSTEM_KEY, LOCAL_FILE_SYSTEM);
      return new LinkedHashMap<>(dev.lakecommit.staging.S3Clients.withDefaults(properties));
    }
    Path dir = warehouse.toAbsolutePath().normalize();
    Map<String, String> embedded = new LinkedHashMap<>();
    embedded.put("type", "jdbc");
    embedded.put("uri", "jdbc:sqlite:" + dir.resolve("catalog.db"));
    embedded.put("warehouse", dir.toUri().toString());
    embedded.put("jdbc.schema-version", "V1");
    embedded.put(LOCAL_FILE_SYSTEM_KEY, LOCAL_FILE_SYSTEM);
    return embedded;
  }

  /**
   * Hadoop settings for {@code s3a://} and other Hadoop paths: the {@code fs.*} catalog properties; for
   * {@code --target hive} all Hadoop and Hive settings among them.
   */
  public org.apache.hadoop.conf.Configuration hadoopConf() {
    if (target == TableKind.HIVE) {
      org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration();
      hadoopProperties().forEach(conf::set);
      return conf;
    }
    return dev.lakecommit.iceberg.HadoopConfs.from(catalogProperties());
  }

  public TableKind target() {
    return target;
  }

  /**
   * The metastore of {@code --target hive}: {@code --metastore-uri}, else {@code -C uri}, else
   * {@code -C hive.metastore.uris}.
   *
   * @throws IllegalArgumentException naming the options, if none is given, they differ, or one is no
   *     {@code thrift://} URI
   */
  public String metastoreUri() {
    String fromUri = catalogProperties.get("uri");
    String fromHive = catalogProperties.get(METASTORE_URIS);
    String type = catalogProperties.get("type");
    if (type != null && !type.equalsIgnoreCase("hive")) {
      throw new IllegalArgumentException("Option -C type=" + type + " names an Iceberg catalog; --target hive "
          + "writes a Hive table through a Hive Metastore (--metastore-uri thrift://host:port)");
    }
    String uri = metastoreUri != null ? metastoreUri : fromUri != null ? fromUri : fromHive;
    if (uri == null || uri.isBlank()) {
      throw new IllegalArgumentException("Missing option --metastore-uri: --target hive writes through a Hive "
          + "Metastore; give --metastore-uri thrift://host:port (or -C uri=thrift://host:port)");
    }
    checkSame(uri, "--metastore-uri", metastoreUri);
    checkSame(uri, "-C uri", fromUri);
    checkSame(uri, "-C " + METASTORE_URIS, fromHive);
    if (!uri.startsWith("thrift://")) {
      throw new IllegalArgumentException("Invalid option " + (metastoreUri != null ? "--metastore-uri" : "-C uri")
          + ": '" + Redaction.redactText(uri) + "' is no Hive Metastore URI (use thrift://host:port)");
    }
    return uri;
  }

  private void checkSame(String uri, String option, String value) {
    if (value != null && !value.equals(uri)) {
      throw new IllegalArgumentException("Conflicting metastore URIs: " + option + "=" + Redaction.redactText(value)
          + " differs from " + Redaction.redactText(uri) + "; give one");
    }
  }

  /** The {@code -C} properties that are Hadoop or Hive settings ({@value #HADOOP_PREFIXES_TEXT}). */
  public Map<String, String> hadoopProperties() {
    Map<String, String> hadoop = new LinkedHashMap<>();
    catalogProperties.forEach((key, value) -> {
      if (HADOOP_PREFIXES.stream().anyMatch(key::startsWith) && !key.equals(METASTORE_URIS)) {
        hadoop.put(key, value);
      }
    });
    hadoop.putIfAbsent(LOCAL_FILE_SYSTEM_KEY, LOCAL_FILE_SYSTEM);
    return hadoop;
  }

  /** {@code -C warehouse} of {@code --target hive}: created tables go to {@code <warehouse>/<db>.db/<table>}. */
  public String hiveWarehouse() {
    return catalogProperties.get("warehouse");
  }

  /**
   * The existing table, through its catalog.
   *
   * @throws IllegalArgumentException naming {@code --table} if it does not exist
   */
  public org.apache.iceberg.Table loadTable() {
    return loadTableIfExists().orElseThrow(() -> new IllegalArgumentException("Invalid option --table: table "
        + table + " does not exist in catalog " + (embedded() ? "of the warehouse " + warehouse.toAbsolutePath()
            .normalize() : describeCatalog())));
  }

  /** The table through its catalog, or empty if it does not exist (yet). */
  public java.util.Optional<org.apache.iceberg.Table> loadTableIfExists() {
    requireIceberg();
    if (embedded() && !java.nio.file.Files.isDirectory(warehouse)) {
      return java.util.Optional.empty();
    }
    org.apache.iceberg.catalog.Catalog catalog =
        dev.lakecommit.iceberg.CatalogLoader.load(catalogName, catalogProperties(), hadoopConf());
    try {
      return java.util.Optional.of(catalog.loadTable(org.apache.iceberg.catalog.TableIdentifier.parse(table)));
    } catch (org.apache.iceberg.exceptions.NoSuchTableException e) {
      return java.util.Optional.empty();
    }
  }

  public boolean embedded() {
    return catalogProperties.isEmpty() && target == TableKind.ICEBERG;
  }

  /** Fails on options that only a Hive target uses. */
  void requireIceberg() {
    if (target != TableKind.ICEBERG) {
      throw new IllegalStateException("Table " + table + " is a " + target + " target, not Iceberg");
    }
    if (metastoreUri != null) {
      throw new IllegalArgumentException("Option --metastore-uri is for --target hive; for an Iceberg table in "
          + "Iceberg's HiveCatalog use -C type=hive -C uri=" + Redaction.redactText(metastoreUri));
    }
  }

  public String table() {
    return table;
  }

  /** Where the tool keeps its own state by default: beside the embedded warehouse, or in the working dir. */
  public Path stateDir() {
    return embedded() ? warehouse.toAbsolutePath().normalize().resolve("_lakecommit") : Path.of(".lakecommit");
  }

  public IcebergSinkConfig.Builder sinkConfig() {
    requireIceberg();
    if (embedded()) {
      try {
        java.nio.file.Files.createDirectories(warehouse);
      } catch (java.io.IOException e) {
        String reason = e instanceof java.nio.file.FileAlreadyExistsException ? "a file of that name is in the way"
            : e instanceof java.nio.file.AccessDeniedException ? "permission denied" : e.toString();
        throw new IllegalArgumentException("Invalid option --warehouse: cannot create the directory " + warehouse
            + " (" + reason + ")", e);
      }
    }
    return IcebergSinkConfig.builder().catalogName(catalogName).catalogProperties(catalogProperties())
        .table(table);
  }

  public String describeCatalog() {
    return catalogName + " " + Redaction.redact(catalogProperties());
  }
}
