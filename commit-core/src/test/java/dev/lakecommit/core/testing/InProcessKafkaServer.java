package dev.lakecommit.core.testing;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.utils.Exit;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A {@link KafkaBroker} in this JVM: Kafka's own {@link KafkaRaftServer}, as {@code kafka.Kafka} runs it. */
final class InProcessKafkaServer implements KafkaBroker.Server {
  private static final Logger LOG = LoggerFactory.getLogger(InProcessKafkaServer.class);

  static {
    // A broker that meets a fatal error exits its JVM; here that JVM is the test's. Fail the broker's thread instead.
    Exit.setExitProcedure((status, message) -> refuse("exit", status, message));
    Exit.setHaltProcedure((status, message) -> refuse("halt", status, message));
  }

  private KafkaRaftServer server;

  @Override
  public void start(Path config) throws IOException {
    Properties props = new Properties();
    try (InputStream in = Files.newInputStream(config)) {
      props.load(in);
    }
    KafkaRaftServer starting = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
    try {
      starting.startup();
    } catch (RuntimeException e) {
      shutdown(starting);
      throw e;
    }
    server = starting;
  }

  @Override
  public boolean alive() {
    return server != null;
  }

  @Override
  public void checkAlive() {}

  @Override
  public void stop() {
    if (server != null) {
      KafkaRaftServer stopping = server;
      server = null;
      shutdown(stopping);
    }
  }

  @Override
  public void kill() {
    throw new UnsupportedOperationException(
        "An in-process Kafka broker cannot be killed: use KafkaBroker.childJvm for SIGKILL, or stop()");
  }

  @Override
  public void close() {
    stop();
  }

  private static void shutdown(KafkaRaftServer server) {
    server.shutdown();
    server.awaitShutdown();
  }

  private static void refuse(String what, int status, String message) {
    LOG.error("The in-process Kafka broker tried to {} the JVM with status {}: {}", what, status, message);
    throw new IllegalStateException(
        "The in-process Kafka broker tried to " + what + " the JVM with status " + status + ": " + message);
  }
}
