package dev.lakecommit.core.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Loopback ports for servers that tests stop and start again on the same port (a metastore, a database, a broker
 * after an outage) or hand to a child process to bind. A port from {@code new ServerSocket(0)} is free only until
 * it is closed: while the server is down, another test JVM of the build (Surefire's parallel forks, a module built
 * beside this one) may be handed the same port by the kernel. The ports here come from below the kernel's
 * ephemeral range, which the kernel never hands out, and each is held for the life of the JVM by a lock file that
 * every test JVM of the machine checks, so no other test takes it while its server is down. The kernel releases
 * the lock when the JVM ends, however it ends.
 */
public final class LoopbackPorts {
  private static final Path LOCKS = Path.of(System.getProperty("java.io.tmpdir"), "lakecommit-test-ports");
  private static final int SPAN = 12_000;
  private static final Set<Integer> HELD = new HashSet<>();
  // Kept reachable: a lock is released when its channel is closed or collected.
  private static final List<FileLock> LOCKS_HELD = new ArrayList<>();

  private LoopbackPorts() {}

  /**
   * A loopback port that no other test JVM on this machine gets and the kernel does not hand out, held until
   * this JVM ends; nothing listens on it when this returns.
   */
  public static synchronized int reserve() {
    int[] range = range();
    int size = range[1] - range[0];
    if (size < 1_000) {
      throw new IllegalStateException("The kernel's ephemeral ports start at " + range[1]
          + ": too low to keep test ports below them (net.ipv4.ip_local_port_range)");
    }
    int offset = ThreadLocalRandom.current().nextInt(size);
    try {
      Files.createDirectories(LOCKS);
      for (int i = 0; i < size; i++) {
        int port = range[0] + (offset + i) % size;
        if (HELD.contains(port)) {
          continue;
        }
        FileChannel channel = FileChannel.open(LOCKS.resolve(port + ".lock"), StandardOpenOption.CREATE,
            StandardOpenOption.WRITE);
        FileLock lock = channel.tryLock();
        if (lock == null) {
          channel.close();
          continue;
        }
        if (!bindable(port)) {
          lock.release();
          channel.close();
          continue;
        }
        HELD.add(port);
        LOCKS_HELD.add(lock);
        return port;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot reserve a loopback port under " + LOCKS, e);
    }
    throw new IllegalStateException("No free loopback port in " + range[0] + ".." + (range[1] - 1));
  }

  /** The ports just below the kernel's ephemeral range (Linux: net.ipv4.ip_local_port_range), end exclusive. */
  static int[] range() {
    int ephemeralLow = 32768;
    try {
      // readAllLines, not readString: on some kernels readString returns only the first byte of a /proc file.
      String[] bounds = Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).get(0).trim()
          .split("\\s+");
      ephemeralLow = Integer.parseInt(bounds[0]);
    } catch (IOException | RuntimeException e) {
      // Not Linux, or not readable: the IANA ephemeral range starts higher than Linux's default.
    }
    int high = Math.min(ephemeralLow, 65536);
    int low = Math.max(1024, high - SPAN);
    return new int[] {low, high};
  }

  private static boolean bindable(int port) {
    try (ServerSocket socket = new ServerSocket()) {
      socket.setReuseAddress(true);
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
      return true;
    } catch (IOException e) {
      return false;
    }
  }
}
