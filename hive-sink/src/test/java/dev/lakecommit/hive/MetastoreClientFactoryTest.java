package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.ServerSocket;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.junit.jupiter.api.Test;

/**
 * A metastore that does not answer is a {@link MetaException}, the outage callers handle (a Flink committer leaves
 * its commits pending), not the {@code RuntimeException} Hive 2.3's retrying client wraps it in (which failed the
 * committer's task and restart-looped the job during an outage).
 */
class MetastoreClientFactoryTest {
  @Test
  void aMetastoreThatDoesNotAnswerIsAMetaException() throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = free.getLocalPort();
    }
    HiveConf conf = new HiveConf();
    conf.setVar(HiveConf.ConfVars.METASTOREURIS, "thrift://127.0.0.1:" + port);
    conf.setIntVar(HiveConf.ConfVars.METASTORETHRIFTCONNECTIONRETRIES, 1);
    conf.setVar(HiveConf.ConfVars.METASTORE_CLIENT_CONNECT_RETRY_DELAY, "0s");

    assertThatThrownBy(() -> MetastoreClientFactory.RETRYING.open(conf))
        .isInstanceOf(MetaException.class)
        .hasMessageContaining("Could not connect to meta store");
  }
}
