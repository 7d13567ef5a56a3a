package dev.lakecommit.bench;

import dev.lakecommit.hive.testing.HiveMetastoreServer;

/**
 * The in-process Hive Metastore (a Thrift server on 127.0.0.1, embedded Derby) of this JVM: started on first use
 * and stopped when the JVM exits. Hive 2.3 allows one per JVM, and starting one takes seconds, so the trials of a
 * run (all in one JVM in smoke mode) share it; every trial uses its own table.
 */
final class SharedMetastore {
  private static HiveMetastoreServer server;

  private SharedMetastore() {}

  static synchronized HiveMetastoreServer get() {
    if (server == null) {
      HiveMetastoreServer started = HiveMetastoreServer.startOnDerby();
      Runtime.getRuntime().addShutdownHook(new Thread(started::close, "bench-metastore-stop"));
      server = started;
    }
    return server;
  }
}
