package dev.lakecommit.hive.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.thrift.TException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The metastore contract on PostgreSQL (no HMS locks: Iceberg clients are told not to lock), plus the metastore
 * riding out a PostgreSQL restart.
 */
class PostgresMetastoreIT extends MetastoreContract {
  private static EmbeddedPostgres pg;
  private static HiveMetastoreServer hms;

  @BeforeAll
  static void startMetastore() {
    pg = EmbeddedPostgres.startNew();
    hms =
        HiveMetastoreServer.builder()
            .postgres(pg)
            // Fail a call fast while PostgreSQL is away, rather than retrying 10 times 2 s apart.
            .serverConf("hive.hmshandler.retry.attempts", "1")
            .serverConf("hive.hmshandler.retry.interval", "100ms")
            .serverConf("datanucleus.connectionPool.connectionWaitTimeout", "2000")
            .start();
  }

  @AfterAll
  static void stopMetastore() {
    try {
      if (hms != null) {
        hms.close();
      }
    } finally {
      if (pg != null) {
        pg.close();
      }
    }
  }

  @Override
  HiveMetastoreServer hms() {
    return hms;
  }

  @Test
  void icebergClientsAreToldNotToLock() throws TException {
    assertThat(hms.backend()).isEqualTo(HiveMetastoreServer.Backend.POSTGRES);
    assertThat(hms.supportsLocks()).isFalse();
    assertThat(hms.clientConf()).containsEntry("iceberg.engine.hive.lock-enabled", "false");
    assertThat(hms.hiveConf().get("iceberg.engine.hive.lock-enabled")).isEqualTo("false");
    HiveMetaStoreClient client = hms.newClient();
    try {
      createParquetTable(client, "locks", "events");
      assertThatThrownBy(() -> client.lock(exclusiveTableLock("locks", "events")))
          .as("no lock tables on PostgreSQL")
          .isInstanceOf(TException.class);
    } finally {
      client.close();
    }
  }

  @Test
  void metastoreRidesOutPostgresRestart() throws TException {
    HiveMetaStoreClient client = hms.newClient();
    try {
      Table table = createParquetTable(client, "pgrestart", "events");
      client.add_partitions(List.of(partition(table, "2024-01-01", "eu")));
      int pgPort = pg.port();

      pg.stop();
      long begin = System.nanoTime();
      assertThatThrownBy(() -> client.getTable("pgrestart", "events"))
          .as("the metastore cannot answer without its database")
          .isInstanceOf(MetaException.class);
      assertThat((System.nanoTime() - begin) / 1_000_000_000).as("seconds to fail").isLessThan(30);

      pg.start();
      assertThat(pg.port()).isEqualTo(pgPort);
      assertThat(client.listPartitionNames("pgrestart", "events", (short) -1))
          .as("the same client, on the same metastore, after PostgreSQL came back")
          .containsExactly("dt=2024-01-01/region=eu");
      client.add_partitions(List.of(partition(table, "2024-01-02", "eu")));
      assertThat(client.listPartitionNames("pgrestart", "events", (short) -1)).hasSize(2);
    } finally {
      client.close();
      if (!pg.isRunning()) {
        pg.start();
      }
    }
  }
}
