package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.testing.EmbeddedPostgres;
import dev.lakecommit.iceberg.CutAudit;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.LongStream;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The multi-table sink on a cluster of TaskManager processes, with a JDBC catalog on PostgreSQL: transfers whose debit
 * and credit rows go to two tables (the debits to a third from the middle of the stream), PostgreSQL stopped for a
 * while as a cut commits, and TaskManagers running the job's tasks SIGKILLed while it runs. Every checkpoint read as a
 * cut balances, and once the bounded stream ends every transfer is in the tables exactly once.
 */
class FlinkMultiTableProcessIT {
  private static final List<TableIdentifier> TABLES = FlinkMultiTableSinkIT.TABLES;

  @TempDir Path dir;

  @Test
  void everyCutBalancesThroughTaskManagerKills() throws Exception {
    long seed = TestScale.seed();
    Random random = new Random(seed);
    // about 24 s of transfers at the default scale: the outage and the kill come while most are still to come
    long transfers = TestScale.pick(6_000, 40_000);
    int kills = TestScale.pick(1, 4);
    System.out.printf("FlinkMultiTableProcessIT seed=%d (rerun with -Dlakecommit.seed=%d): %d transfers, %d kills%n",
        seed, seed, transfers, kills);
    SharedProcesses shared = SharedProcesses.get();
    FlinkProcessCluster cluster = shared.cluster();
    EmbeddedPostgres pg = shared.postgres();
    Map<String, String> catalog = Map.of(
        "type", "jdbc",
        "uri", pg.createDatabase("flink_multi_table"),
        "jdbc.user", pg.user(),
        "jdbc.password", pg.password(),
        "jdbc.schema-version", "V1",
        "warehouse", dir.resolve("warehouse").toUri().toString());

    String jobId = submit(cluster, catalog, transfers);
    try {
      long checkpoint = awaitCheckpoint(cluster, jobId, 2);
      // a catalog outage: PostgreSQL stopped right after a checkpoint completed, until a commit attempt met it
      long failedBefore = FlinkKafkaProcessIT.failedCommitLogLines(cluster);
      checkpoint = FlinkKafkaProcessIT.awaitNextCheckpoint(cluster, jobId);
      long outageStart = System.nanoTime();
      pg.stop();
      try {
        Thread.sleep(3_000 + random.nextInt(3_000));   // the length of the outage, not synchronisation
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (FlinkKafkaProcessIT.failedCommitLogLines(cluster) == failedBefore && System.nanoTime() < deadline) {
          Thread.sleep(100);   // polling the TaskManagers' logs
        }
      } finally {
        pg.start();
      }
      long failed = FlinkKafkaProcessIT.failedCommitLogLines(cluster) - failedBefore;
      System.out.printf("FlinkMultiTableProcessIT: PostgreSQL outage of %d ms from the completion of checkpoint %d:"
          + " %d failed commit attempts%n", (System.nanoTime() - outageStart) / 1_000_000, checkpoint, failed);
      assertThat(failed).as("cut commits that failed while PostgreSQL was down").isPositive();
      for (int k = 0; k < kills; k++) {
        // a kill once the job has committed a few more cuts, while the source still has most of its rows to give
        checkpoint = awaitCheckpoint(cluster, jobId, checkpoint + 2 + random.nextInt(3));
        TaskManagerKills.Kill kill = TaskManagerKills.aim(cluster, jobId, running -> running.anyTaskManager(random));
        System.out.printf("FlinkMultiTableProcessIT kill %d: SIGKILL of %s (running %d of the job's %d subtasks) after"
            + " checkpoint %d%n", k, kill.victim(), kill.before().on(kill.victim()).size(),
            kill.before().subtasks().size(), checkpoint);
        System.out.printf("FlinkMultiTableProcessIT kill %d: job %s%n", k, kill.execute());
      }
      assertThat(cluster.awaitTerminal(jobId, Duration.ofMinutes(TestScale.pick(3, 15)))).isEqualTo("FINISHED");
    } finally {
      FlinkKafkaProcessIT.cancelIfRunning(cluster, jobId);
    }

    Catalog read = org.apache.iceberg.CatalogUtil.buildIcebergCatalog("lakecommit", catalog,
        new org.apache.hadoop.conf.Configuration());
    CutAudit audit = new CutAudit(read, TABLES);
    assertThat(audit.checkpoints()).as("cuts").hasSizeGreaterThan(kills);
    for (long cut : audit.checkpoints()) {
      Map<TableIdentifier, List<Record>> tables = audit.at(cut);
      long sum = 0;
      List<Long> debits = new ArrayList<>();
      for (TableIdentifier table : TABLES) {
        for (Record row : tables.get(table)) {
          sum += (Long) row.getField("amount");
          if (!table.equals(FlinkMultiTableSinkIT.CREDITS)) {
            debits.add((Long) row.getField("transfer"));
          }
        }
      }
      List<Long> credits = tables.get(FlinkMultiTableSinkIT.CREDITS).stream()
          .map(row -> (Long) row.getField("transfer")).toList();
      assertThat(sum).as("the cut of checkpoint %d balances", cut).isZero();
      assertThat(debits).as("debits of the cut of checkpoint %d", cut).containsExactlyInAnyOrderElementsOf(credits);
    }
    Map<TableIdentifier, List<Record>> last = audit.at(Long.MAX_VALUE);
    List<Long> credited = last.get(FlinkMultiTableSinkIT.CREDITS).stream()
        .map(row -> (Long) row.getField("transfer")).toList();
    assertThat(credited).as("every transfer once").hasSize((int) transfers)
        .containsExactlyInAnyOrderElementsOf(LongStream.range(0, transfers).boxed().toList());
    assertThat(last.get(FlinkMultiTableSinkIT.LATE_DEBITS)).as("debits of the table that appeared mid-stream")
        .hasSize((int) (transfers - transfers / 2));
  }

  /** The transfers job on the process cluster: a checkpoint a second, restarts after every kill. */
  private static String submit(FlinkProcessCluster cluster, Map<String, String> catalog, long transfers)
      throws Exception {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createRemoteEnvironment("127.0.0.1",
        cluster.restPort(), FlinkKafkaProcessIT.processJob());
    env.setParallelism(2);
    IcebergTables tables = IcebergTables.builder()
        .catalogProperties(catalog)
        .routeByColumn("side", "bank.${side}")
        .tableProperties(Map.of("format-version", "2"))
        .requireAtomicCut(true)
        .build();
    env.fromSource(new DataGeneratorSource<>(i -> i, transfers, RateLimiterStrategy.perSecond(TestScale.pick(250, 400)),
            Types.LONG), WatermarkStrategy.noWatermarks(), "transfers")
        .uid("transfers").setParallelism(1)
        .flatMap(new FlinkMultiTableSinkIT.Transfer(transfers / 2, null)).uid("transfer-rows")
        .returns(InternalTypeInfo.of(FlinkMultiTableSinkIT.ROW_TYPE))
        .sinkTo(LakecommitFlinkSink.forRowData(FlinkMultiTableSinkIT.ROW_TYPE).icebergTables(tables)
            .jobId("bank-process").build())
        .uid("bank-sink");
    return env.executeAsync("bank-process").getJobID().toString();
  }

  /** Polls (bounded) the job's REST endpoint until a checkpoint at or above {@code id} completed; returns it. */
  private static long awaitCheckpoint(FlinkProcessCluster cluster, String jobId, long id) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
    long completed;
    while ((completed = FlinkKafkaProcessIT.completedCheckpoint(cluster, jobId)) < id) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("Job " + jobId + " completed no checkpoint " + id + " within 3 minutes (last "
            + completed + "): " + cluster.diagnose(jobId));
      }
      Thread.sleep(200);   // polling the REST endpoint
    }
    return completed;
  }
}
