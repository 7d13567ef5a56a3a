package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.flink.FlinkKafkaProcessIT.Result;
import dev.lakecommit.flink.FlinkKafkaProcessIT.SinkUnderTest;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link FlinkKafkaProcessIT}'s scenario into Hive: the same job on the same cluster of real processes (Kafka →
 * {@link EventTimeRelease} → a stateless map → {@link LakecommitFlinkSink}), writing a Hive table partitioned by
 * the minute of each message's event time, through a Hive Metastore (on Derby) that the test JVM serves as a Thrift
 * server on 127.0.0.1 and the TaskManagers reach by its URI; the table's data on local disk under the test's
 * directory. The same seeded faults: TaskManager SIGKILLs (the first aimed at a commit), broker stops, and
 * metastore outages in place of the catalog's: the Thrift server stopped right after a checkpoint completed and
 * started again on the same port seconds later, while the committer's attempts fail (asserted from the
 * TaskManagers' logs). Default build: 20,000 messages, 2 kills, 1 metastore outage; {@code
 * -Plong}: 1,000,000 messages, 6 kills, 2 broker restarts, 2 outages.
 *
 * <p>Then the table is audited as a Hive reader sees it ({@link HiveTableView#audit}): every row of every visible
 * file of every partition the metastore lists, against the topic: no duplicate, no loss, no row of an unknown id,
 * and an out-of-order rate of at most DESIGN.md's 0.1 %, the commit order being the checkpoint ids in the files'
 * names (Hive keeps no commit history).
 */
class FlinkKafkaHiveProcessIT {
  @TempDir
  Path dir;

  @Test
  void kafkaToHiveUnderTaskManagerKillsABrokerRestartAndAMetastoreOutage() throws Exception {
    // two kills and a metastore outage (broker restarts are FlinkKafkaProcessIT's, here only with -Plong)
    Result result = FlinkKafkaProcessIT.run(dir, TestScale.seed(), SinkUnderTest.LAKECOMMIT_HIVE,
        "events-process-hive", "flink_kafka_hive",
        new FlinkKafkaProcessIT.Faults(TestScale.pick(2, 6), TestScale.pick(0, 2), TestScale.pick(1, 2)));
    assertThat(result.topicMessages()).as("the topic holds every message once").isEqualTo(result.messages());
    LakeTableView.Audit audit = result.audit();
    assertThat(audit.duplicates()).as("duplicates: %s", audit).isZero();
    assertThat(audit.losses()).as("losses: %s", audit).isZero();
    assertThat(audit.unknown()).as("rows of no message: %s", audit).isZero();
    assertThat(audit.rows()).as("rows: %s", audit).isEqualTo(result.messages());
    assertThat(audit.outOfOrderRate()).as("out-of-order rate (DESIGN.md: at most 0.1 %%): %s", audit)
        .isLessThanOrEqualTo(0.001);
    if (result.shortOfRows() != null) {
      throw result.shortOfRows();
    }
  }
}
