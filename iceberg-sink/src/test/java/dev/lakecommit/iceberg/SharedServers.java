package dev.lakecommit.iceberg;

import dev.lakecommit.hive.testing.EmbeddedPostgres;
import dev.lakecommit.hive.testing.HiveMetastoreServer;

/**
 * The servers behind the PostgreSQL JDBC and Hive catalogs, started once per test JVM on first use (Hive 2.3 runs
 * one metastore per JVM) and stopped when the JVM exits.
 */
final class SharedServers {
  private static EmbeddedPostgres postgres;
  private static HiveMetastoreServer metastore;
  private static int databases;

  private SharedServers() {}

  static synchronized EmbeddedPostgres postgres() {
    if (postgres == null) {
      postgres = EmbeddedPostgres.startNew();
      Runtime.getRuntime().addShutdownHook(new Thread(postgres::close));
    }
    return postgres;
  }

  /** A fresh database on the shared PostgreSQL: its JDBC URL. */
  static synchronized String newPostgresDatabase() {
    return postgres().createDatabase("catalog_" + (++databases));
  }

  static synchronized HiveMetastoreServer metastore() {
    if (metastore == null) {
      metastore = HiveMetastoreServer.startOnDerby();
      Runtime.getRuntime().addShutdownHook(new Thread(metastore::close));
    }
    return metastore;
  }
}
