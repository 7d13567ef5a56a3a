package dev.lakecommit.hive;

import static dev.lakecommit.hive.HiveTestData.PARTITIONED;
import static dev.lakecommit.hive.HiveTestData.SCHEMA;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.hive.testing.EmbeddedPostgres;
import dev.lakecommit.hive.testing.MetastoreProcess;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The run-epoch fence on metastores that do not enforce the compare-and-swap it rests on (Hive 3.1 ignores the
 * expected value; 4.0.x on Derby fails any swap), against real servers of those versions, and on one that does
 * (4.0.1 on PostgreSQL): the sink's probe tells them apart, and two claims racing on one table end with different
 * epochs and a conflict seen. Trusting 3.1's compare-and-swap instead (the test-only override) lets both claims take
 * the same epoch: two copies of a job would both commit.
 */
class MetastoreFencingIT {
  private static final JobId JOB = JobId.of("fenced-job");
  private static final String DB = "lc";

  @TempDir Path dir;

  @Test
  void hive31IgnoresTheCompareAndSwapSoTheSinkLocks() throws Exception {
    try (MetastoreProcess hms = MetastoreProcess.onDerby(MetastoreProcess.Version.HIVE_3_1_3, dir.resolve("hms"))) {
      racingClaimsTakeTurns(hms, TableFencing.TABLE_LOCK);

      // The hole the lock closes: with the compare-and-swap trusted, both claims of a race win the same epoch.
      CountingClients trustingClients = new CountingClients();
      HiveSink<Record> trusting = sink(hms, "trusting", trustingClients).fencing(TableFencing.COMPARE_AND_SWAP);
      Race race = racingClaims(trusting, trustingClients, "alter_table_with_environmentContext");
      assertThat(race.epochs()).as("both copies think they hold the job").containsExactly(1L, 1L);
      assertThat(race.conflicts()).isZero();
    }
  }

  @Test
  void hive401OnDerbyCannotSwapSoTheSinkLocks() throws Exception {
    try (MetastoreProcess hms = MetastoreProcess.onDerby(MetastoreProcess.Version.HIVE_4_0_1, dir.resolve("hms"))) {
      racingClaimsTakeTurns(hms, TableFencing.TABLE_LOCK);
    }
  }

  @Test
  void hive401OnPostgresEnforcesTheCompareAndSwap() throws Exception {
    try (EmbeddedPostgres pg = EmbeddedPostgres.startNew();
        MetastoreProcess hms = MetastoreProcess.onPostgres(MetastoreProcess.Version.HIVE_4_0_1, dir.resolve("hms"),
            pg)) {
      racingClaimsTakeTurns(hms, TableFencing.COMPARE_AND_SWAP);

      // A call this server removed (Hive 4 dropped indexes) fails naming the call and the server's version.
      HiveConf conf = new HiveConf();
      conf.setVar(HiveConf.ConfVars.METASTOREURIS, hms.uri());
      IMetaStoreClient client = CompatibleMetaStoreClient.open(conf);
      try {
        assertThatThrownBy(() -> client.listIndexes(DB, "raced", (short) 1))
            .isInstanceOf(MetaException.class)
            .hasMessageContaining("The Hive Metastore at " + hms.uri() + " (server version 4.0.1) has no Thrift call"
                + " for listIndexes");
      } finally {
        client.close();
      }
    }
  }

  /**
   * Two claims that both read the table before either changes it, on a table of a sink that finds {@code expected}:
   * one wins epoch 1, the other retries to 2.
   */
  private static void racingClaimsTakeTurns(MetastoreProcess hms, TableFencing expected) throws Exception {
    CountingClients clients = new CountingClients();
    HiveSink<Record> sink = sink(hms, "raced", clients);
    Race race = racingClaims(sink, clients,
        expected == TableFencing.TABLE_LOCK ? "lock" : "alter_table_with_environmentContext");
    assertThat(sink.fencing()).hasValue(expected);
    assertThat(race.epochs()).containsExactlyInAnyOrder(1L, 2L);
    assertThat(race.conflicts()).as("conflicts seen by the claims").isPositive();
  }

  /** The epochs two racing claims took, in the order the threads started, and the conflicts they met. */
  private record Race(List<Long> epochs, int conflicts) {}

  /**
   * Two targets of the sink claim an epoch of the job at once, lined up on {@code meetAt} (both read the table
   * before either goes on).
   */
  private static Race racingClaims(HiveSink<Record> sink, CountingClients clients, String meetAt)
      throws Exception {
    // A first claim (of another job) lets the sink probe the metastore, which calls what the race meets at.
    try (HiveTarget first = (HiveTarget) sink.openTarget()) {
      first.claimEpoch(JobId.of("first-job"), "first claim");
    }
    int earlier = clients.calls(meetAt);
    CyclicBarrier bothRead = new CyclicBarrier(2);
    clients.before((method, n) -> {
      if (method.equals(meetAt) && n - earlier <= 2) {
        try {
          bothRead.await(60, TimeUnit.SECONDS);
        } catch (Exception e) {
          throw new IllegalStateException("claims did not line up at " + meetAt, e);
        }
      }
    });
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (HiveTarget a = (HiveTarget) sink.openTarget(); HiveTarget b = (HiveTarget) sink.openTarget()) {
      Future<RunEpoch> one = threads.submit(() -> a.claimEpoch(JOB, "thread a"));
      Future<RunEpoch> two = threads.submit(() -> b.claimEpoch(JOB, "thread b"));
      long first = one.get(3, TimeUnit.MINUTES).epoch();
      long second = two.get(3, TimeUnit.MINUTES).epoch();
      return new Race(List.of(first, second), a.conflicts() + b.conflicts());
    } finally {
      clients.before((method, n) -> {});
      threads.shutdownNow();
    }
  }

  private static HiveSink<Record> sink(MetastoreProcess hms, String table, CountingClients clients)
      throws Exception {
    HiveConf conf = new HiveConf();
    conf.setVar(HiveConf.ConfVars.METASTOREURIS, hms.uri());
    IMetaStoreClient client = CompatibleMetaStoreClient.open(conf);
    try {
      if (!client.getAllDatabases().contains(DB)) {
        client.createDatabase(new Database(DB, "tests", hms.warehouseDir().resolve(DB + ".db").toUri().toString(),
            new HashMap<>()));
      }
      HiveSink<Record> sink = HiveSink.forRecords(HiveSinkConfig.builder().metastoreUri(hms.uri())
          .table(DB + "." + table).createTable(SCHEMA, PARTITIONED).clientFactory(clients).build());
      Table created = client.getTable(DB, table);
      assertThat(created.getParameters()).containsKey(TableParameters.VERSION_KEY);
      return sink;
    } finally {
      client.close();
    }
  }
}
