package dev.lakecommit.core.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.storage.Formatter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The configuration and storage of a {@link KafkaBroker}: one KRaft node that is broker and controller, on fixed
 * loopback ports, its data in {@code <dir>/data}, its configuration in {@code <dir>/server.properties}.
 */
final class KafkaNode {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaNode.class);
  static final int ID = 1;
  private static final String CONTROLLER_LISTENER = "CONTROLLER";

  private final Path dir;
  private final int port;
  private final int controllerPort;
  private final String clusterId = Uuid.randomUuid().toString();

  KafkaNode(Path dir, int port, int controllerPort) {
    this.dir = dir;
    this.port = port;
    this.controllerPort = controllerPort;
  }

  /** Writes {@code server.properties} (as {@code kafka.Kafka} reads it) and returns its path. */
  Path writeConfig() {
    Properties props = new Properties();
    props.put("process.roles", "broker,controller");
    props.put("node.id", String.valueOf(ID));
    props.put("controller.quorum.voters", ID + "@127.0.0.1:" + controllerPort);
    props.put("listeners",
        "PLAINTEXT://127.0.0.1:" + port + "," + CONTROLLER_LISTENER + "://127.0.0.1:" + controllerPort);
    props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
    props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT," + CONTROLLER_LISTENER + ":PLAINTEXT");
    props.put("controller.listener.names", CONTROLLER_LISTENER);
    props.put("inter.broker.listener.name", "PLAINTEXT");
    props.put("log.dirs", dataDir().toString());
    props.put("auto.create.topics.enable", "false");
    props.put("num.partitions", "1");
    props.put("default.replication.factor", "1");
    props.put("min.insync.replicas", "1");
    props.put("offsets.topic.replication.factor", "1");
    props.put("offsets.topic.num.partitions", "1");
    props.put("transaction.state.log.replication.factor", "1");
    props.put("transaction.state.log.min.isr", "1");
    props.put("transaction.state.log.num.partitions", "1");
    props.put("share.coordinator.state.topic.replication.factor", "1");
    props.put("share.coordinator.state.topic.min.isr", "1");
    props.put("group.initial.rebalance.delay.ms", "0");
    // After a SIGKILL the restarted controller still holds the dead broker's registration and refuses the new one
    // until that session expires (default 9 s); heartbeats every 0.5 s keep a live broker well inside 3 s.
    props.put("broker.session.timeout.ms", "3000");
    props.put("broker.heartbeat.interval.ms", "500");
    // a test broker: few threads on a small machine, a small compaction buffer (the default takes 128 MiB of heap)
    props.put("num.network.threads", "2");
    props.put("num.io.threads", "2");
    props.put("background.threads", "2");
    props.put("log.cleaner.dedupe.buffer.size", String.valueOf(2 * 1024 * 1024));
    props.put("log.cleaner.threads", "1");
    try {
      Files.createDirectories(dataDir());
      Path file = dir.resolve("server.properties");
      try (OutputStream out = Files.newOutputStream(file)) {
        props.store(out, "Lakecommit test broker (KafkaBroker)");
      }
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot write the Kafka broker configuration in " + dir, e);
    }
  }

  /** Formats the storage with Kafka's own {@link Formatter}, as {@code kafka-storage.sh format} does. */
  void format() {
    ByteArrayOutputStream output = new ByteArrayOutputStream();
    try (PrintStream print = new PrintStream(output, true, StandardCharsets.UTF_8)) {
      new Formatter()
          .setPrintStream(print)
          .setNodeId(ID)
          .setClusterId(clusterId)
          .setControllerListenerName(CONTROLLER_LISTENER)
          .setMetadataLogDirectory(dataDir().toString())
          .setDirectories(List.of(dataDir().toString()))
          .setIgnoreFormatted(true)
          .run();
    } catch (Exception e) {
      throw new IllegalStateException("Cannot format the Kafka storage in " + dataDir(), e);
    }
    LOG.debug("Kafka storage in {}: {}", dataDir(), output.toString(StandardCharsets.UTF_8).trim());
  }

  private Path dataDir() {
    return dir.resolve("data");
  }
}
