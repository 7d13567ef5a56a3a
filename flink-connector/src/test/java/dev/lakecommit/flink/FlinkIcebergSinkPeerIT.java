package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.flink.FlinkKafkaProcessIT.Faults;
import dev.lakecommit.flink.FlinkKafkaProcessIT.Result;
import dev.lakecommit.flink.FlinkKafkaProcessIT.SinkUnderTest;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The comparison users ask for: {@link FlinkKafkaProcessIT}'s scenario — Kafka into Iceberg on a cluster of real
 * processes, under TaskManager SIGKILLs (the first aimed at a commit), broker restarts and catalog outages — run
 * twice with the same seed, so with the same faults at the same points of the stream: once with Lakecommit's
 * sink, once with Iceberg's own {@code IcebergSink} (iceberg-flink-2.1 {@code 1.11.0}, appending to the same
 * kind of table in the same JDBC catalog). The two audits are printed side by side ({@code PEER-COMPARISON}
 * lines). Lakecommit's run must be exact, as in {@link FlinkKafkaProcessIT}; the peer's figures are what the
 * comparison reports and are not asserted, beyond its run having read the whole topic under the same faults.
 *
 * <p>{@code -Plong} only (about 25 minutes at its 1,000,000 messages per run); run it at the default size with
 * {@code -Dit.test=FlinkIcebergSinkPeerIT}.
 */
class FlinkIcebergSinkPeerIT {
  @TempDir
  Path dir;

  @Test
  void lakecommitBesideIcebergsOwnSinkUnderTheSameFaults() throws Exception {
    long seed = TestScale.seed();
    Result lakecommit = FlinkKafkaProcessIT.run(dir.resolve("lakecommit"), seed, SinkUnderTest.LAKECOMMIT,
        "events-peer-lakecommit", "flink_peer_lakecommit", Faults.all());
    Result peer = FlinkKafkaProcessIT.run(dir.resolve("iceberg"), seed, SinkUnderTest.ICEBERG_SINK,
        "events-peer-iceberg", "flink_peer_iceberg", Faults.all());
    System.out.println("PEER-COMPARISON " + lakecommit);
    System.out.println("PEER-COMPARISON " + peer);

    assertThat(lakecommit.topicMessages()).isEqualTo(lakecommit.messages());
    assertThat(lakecommit.audit().duplicates()).as("%s", lakecommit).isZero();
    assertThat(lakecommit.audit().losses()).as("%s", lakecommit).isZero();
    assertThat(lakecommit.audit().unknown()).as("%s", lakecommit).isZero();
    assertThat(lakecommit.audit().outOfOrderRate()).as("%s", lakecommit).isLessThanOrEqualTo(0.001);
    assertThat(peer.topicMessages()).as("the peer's topic").isEqualTo(peer.messages());
    assertThat(peer.audit().rows()).as("the peer's table holds rows: %s", peer).isPositive();
  }
}
