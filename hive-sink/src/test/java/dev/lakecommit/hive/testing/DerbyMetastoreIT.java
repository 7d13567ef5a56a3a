package dev.lakecommit.hive.testing;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.LockResponse;
import org.apache.hadoop.hive.metastore.api.LockState;
import org.apache.thrift.TException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The metastore contract on embedded Derby, where Iceberg's HiveCatalog commits under HMS locks. */
class DerbyMetastoreIT extends MetastoreContract {
  private static HiveMetastoreServer hms;

  @BeforeAll
  static void startMetastore() {
    hms = HiveMetastoreServer.startOnDerby();
  }

  @AfterAll
  static void stopMetastore() {
    if (hms != null) {
      hms.close();
    }
  }

  @Override
  HiveMetastoreServer hms() {
    return hms;
  }

  @Test
  void clientsLockThroughTheMetastore() throws TException {
    assertThat(hms.supportsLocks()).isTrue();
    assertThat(hms.clientConf()).doesNotContainKey("iceberg.engine.hive.lock-enabled");
    HiveMetaStoreClient client = hms.newClient();
    try {
      createParquetTable(client, "locks", "events");
      LockResponse first = client.lock(exclusiveTableLock("locks", "events"));
      assertThat(first.getState()).isEqualTo(LockState.ACQUIRED);
      LockResponse second = client.lock(exclusiveTableLock("locks", "events"));
      assertThat(second.getState()).as("an exclusive lock waits for the holder").isEqualTo(LockState.WAITING);

      client.unlock(first.getLockid());
      assertThat(client.checkLock(second.getLockid()).getState()).isEqualTo(LockState.ACQUIRED);
      client.unlock(second.getLockid());
    } finally {
      client.close();
    }
  }
}
