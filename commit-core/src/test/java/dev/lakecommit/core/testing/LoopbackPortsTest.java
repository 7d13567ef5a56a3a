package dev.lakecommit.core.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LoopbackPortsTest {
  @Test
  void reservedPortsAreDistinctFreeAndBelowTheKernelsEphemeralPorts() throws IOException {
    int[] range = LoopbackPorts.range();
    Set<Integer> ports = new HashSet<>();
    for (int i = 0; i < 50; i++) {
      int port = LoopbackPorts.reserve();
      assertThat(port).isBetween(range[0], range[1] - 1);
      assertThat(ports.add(port)).as("port %d handed out twice", port).isTrue();
    }
    // A kernel-chosen port is never one of them.
    try (ServerSocket ephemeral = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      assertThat(ephemeral.getLocalPort()).isGreaterThanOrEqualTo(range[1]);
    }
    for (int port : ports) {
      try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        assertThat(socket.getLocalPort()).isEqualTo(port);
      }
    }
  }
}
