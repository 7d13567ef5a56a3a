package dev.lakecommit.hive;

import static dev.lakecommit.hive.HiveTestData.PARTITIONED;
import static dev.lakecommit.hive.HiveTestData.SCHEMA;
import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.EmbeddedPostgres;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.util.Map;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The metastore-side guarantees on PostgreSQL, as production metastores run on a database server: the
 * compare-and-swap of the watermark (run by the metastore as direct SQL) under racing committers, and partitions
 * added in one call.
 */
class PostgresHiveSinkIT {
  private static EmbeddedPostgres pg;
  private static HiveMetastoreServer hms;
  private static HiveFixture fixture;

  @BeforeAll
  static void start() throws Exception {
    pg = EmbeddedPostgres.startNew();
    hms = HiveMetastoreServer.startOnPostgres(pg);
    fixture = new HiveFixture(hms, hms.warehouseLocation(), Map.of());
  }

  @AfterAll
  static void stop() {
    try {
      if (fixture != null) {
        fixture.close();
      }
      if (hms != null) {
        hms.close();
      }
    } finally {
      if (pg != null) {
        pg.close();
      }
    }
  }

  @Test
  void twoCommittersRacingOnOneCheckpointCommitItOnce() throws Exception {
    HiveSinkSuite.raceOnOneCheckpoint(fixture, TestScale.pick(1, 20));
  }

  @Test
  void aCheckpointAddsItsPartitionsInOneCall() throws Exception {
    String table = HiveFixture.newTable("pgbatch");
    CountingClients clients = new CountingClients();
    HiveSink<Record> sink = HiveSink.forRecords(fixture.config(table).createTable(SCHEMA, PARTITIONED)
        .clientFactory(clients).build());
    long opened;
    try (HiveAggregatedCommitter committer = HiveSinkSuite.committer(sink)) {
      // The sink's fencing probe made one swap when it opened its committer: the commit's is the next.
      opened = Long.parseLong(fixture.client().getTable(HiveFixture.DB, table).getParameters()
          .get(TableParameters.VERSION_KEY));
      HiveCommittable committable = HiveTestData.stage(sink, committer, "pg", 1,
          HiveTestData.rows(0, 40, HiveTestData.MIXED));
      clients.reset();
      assertThat(committer.commit(committable).isSuccess()).isTrue();
      assertThat(clients.calls("add_partitions")).isEqualTo(1);
    }
    TableContents contents = fixture.contents(table);
    assertThat(contents.names()).hasSize(10);
    assertThat(contents.ids()).containsExactlyInAnyOrderElementsOf(HiveSinkSuite.ids(0, 40));
    assertThat(fixture.client().getTable(HiveFixture.DB, table).getParameters())
        .containsEntry("lakecommit.committed.pg", "1")
        .containsEntry(TableParameters.VERSION_KEY, Long.toString(opened + 1));
  }
}
