package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The process cluster of the kill tests starts even when a port it picked is taken before its JobManager binds it. */
class FlinkProcessClusterIT {
  @TempDir Path dir;

  @Test
  void aJobManagerWhosePortWasTakenIsStartedAgainOnOtherPorts() throws Exception {
    FlinkProcessCluster cluster = new FlinkProcessCluster(dir, 1, Map.of());
    int taken = cluster.restPort();
    // What a CI run met: between the pick and the bind, someone else got the port.
    try (ServerSocket squatter = new ServerSocket(taken, 1, InetAddress.getLoopbackAddress());
        FlinkProcessCluster started = cluster.start(1)) {
      assertThat(started.restPort()).isNotEqualTo(taken);
      assertThat(started.rest("/overview").path("taskmanagers").asInt()).isEqualTo(1);
      assertThat(Files.readString(dir.resolve("jm-attempt-1.log"), StandardCharsets.UTF_8))
          .as("the first attempt failed on the taken port").contains("java.net.BindException");
      assertThat(started.liveTaskManagers()).hasSize(1);
      // what a test that stalls prints: stacks and log lines of every process, and what the job's REST says
      String diagnosis = started.diagnose("no-such-job");
      assertThat(diagnosis).contains("=== jm (pid", "=== tm-0 (pid", "--- last warnings and errors of tm-0.log",
          "no checkpoint statistics").doesNotContain("no diagnosis");
      assertThat(diagnosis).containsPattern("=== jm \\(pid \\d+\\)\n(?s).*\\([1-9]\\d* threads, \\d+ shown\\)");
    }
  }
}
