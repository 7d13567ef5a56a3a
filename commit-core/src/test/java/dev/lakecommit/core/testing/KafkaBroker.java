package dev.lakecommit.core.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real single-node Apache Kafka 4 broker in KRaft mode (one process is broker and controller) on 127.0.0.1, for
 * tests: in this JVM ({@link #inProcess}) or in a child JVM started from the test classpath ({@link #childJvm}),
 * with everything it stores under a directory of the test's.
 *
 * <pre>{@code
 * @TempDir static Path dir;
 * static KafkaBroker kafka;
 * @BeforeAll static void start() { kafka = KafkaBroker.inProcess(dir); }    // or childJvm(dir)
 * @AfterAll static void stop() { kafka.close(); }
 *
 * kafka.createTopic("orders", 3);
 * props.put("bootstrap.servers", kafka.bootstrapServers());                 // 127.0.0.1:<port>
 * kafka.stop(); ... kafka.start();                                           // outage: same port, data kept
 * kafka.kill(); kafka.start();                                               // child JVM only: SIGKILL, recovery
 * }</pre>
 *
 * <p>The storage is formatted with Kafka's own {@code Formatter} on the first start ({@link KafkaNode}). Settings
 * are those of a single node: internal topics with replication factor 1 and min ISR 1 (so transactions and consumer
 * groups work), one partition each for the offsets and transaction topics (fast first use), no group rebalance
 * delay, and no automatic topic creation: create topics with {@link #createTopic}.
 *
 * <p>An in-process broker that meets a fatal error fails its thread instead of exiting the test JVM (Kafka's
 * {@code Exit} procedures are replaced for the JVM). Run one in-process broker at a time: brokers in one JVM share
 * Kafka's static metrics and MBean names.
 *
 * <p>The broker logs through SLF4J, at the level of the test's configuration (WARN in this project). A child JVM
 * logs at INFO to {@code <dir>/broker.log}, whose tail is in the message when it does not start. A child JVM never
 * outlives its test JVM: {@link #close()} and a shutdown hook destroy it, and it halts by itself when its parent
 * is gone (a test JVM killed by SIGKILL runs no hooks).
 */
public final class KafkaBroker implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaBroker.class);
  private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(90);
  private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(30);

  /** How a broker is run: in this JVM or in a child. */
  interface Server {
    /** Launches the broker on {@code config} (a formatted storage); returns without waiting for it to answer. */
    void start(Path config) throws Exception;

    /** Whether the broker was started and has not stopped or died since. */
    boolean alive();

    /** Fails with what is known (exit code, log tail) if the broker is certainly gone; else does nothing. */
    void checkAlive();

    /** A graceful shutdown; returns once the broker is down. Does nothing if it is not running. */
    void stop();

    /** Ends the broker at once, without a shutdown (SIGKILL). */
    void kill();

    /** Stops the broker and releases what remains (shutdown hooks). */
    void close();
  }

  private final Path dir;
  private final Server server;
  private final String mode;
  private final int port;
  private final KafkaNode node;
  private Admin admin;
  private boolean running;
  private boolean formatted;
  private boolean closed;

  private KafkaBroker(Path dir, Server server, String mode) {
    this.dir = dir;
    this.server = server;
    this.mode = mode;
    this.port = freePort();
    this.node = new KafkaNode(dir, port, freePort());
  }

  /** Starts a broker in this JVM, its data under {@code dir}. */
  public static KafkaBroker inProcess(Path dir) {
    return started(new KafkaBroker(dir, new InProcessKafkaServer(), "in-process"));
  }

  /** Starts a broker in a child JVM on the test classpath, its data and {@code broker.log} under {@code dir}. */
  public static KafkaBroker childJvm(Path dir) {
    return started(new KafkaBroker(dir, new ChildJvmKafkaServer(dir.resolve("broker.log")), "child JVM"));
  }

  private static KafkaBroker started(KafkaBroker broker) {
    try {
      broker.start();
      return broker;
    } catch (RuntimeException e) {
      broker.close();
      throw e;
    }
  }

  /** {@code 127.0.0.1:<port>}; the same across {@link #stop()} and {@link #start()}. */
  public String bootstrapServers() {
    return "127.0.0.1:" + port;
  }

  /** The directory holding the broker's data, its configuration and (child JVM) its log. */
  public Path dir() {
    return dir;
  }

  /**
   * Starts the broker, formatting its storage the first time, on the same ports and data as before; returns once it
   * answers and every partition has a leader. Does nothing if it runs; starts a child JVM again that died by itself.
   *
   * @throws IllegalStateException if closed, or if the broker does not answer within the startup timeout (the
   *     message has the child's exit code and log tail)
   */
  public synchronized void start() {
    if (closed) {
      throw new IllegalStateException(this + " is closed");
    }
    if (running && server.alive()) {
      return;
    }
    long begin = System.nanoTime();
    Path config = node.writeConfig();
    if (!formatted) {
      node.format();
      formatted = true;
    }
    try {
      server.start(config);
    } catch (Exception e) {
      throw new IllegalStateException("Cannot start " + this, e);
    }
    running = true;
    try {
      awaitReady(begin);
    } catch (RuntimeException e) {
      running = false;
      try {
        server.stop();
      } catch (RuntimeException stopping) {
        e.addSuppressed(stopping);
      }
      throw e;
    }
    LOG.info("{} ready after {} ms", this, (System.nanoTime() - begin) / 1_000_000);
  }

  /** A graceful shutdown; data and ports stay for {@link #start()}. Does nothing if stopped. */
  public synchronized void stop() {
    if (running) {
      running = false;
      server.stop();
    }
  }

  /**
   * SIGKILL of the child JVM: no shutdown, nothing flushed beyond what the OS has; {@link #start()} recovers.
   *
   * @throws UnsupportedOperationException for an in-process broker
   */
  public synchronized void kill() {
    server.kill();
    running = false;
  }

  /** Creates a topic (replication factor 1) and returns once every partition has a leader. */
  public void createTopic(String name, int partitions) {
    await(admin().createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all(), "create topic " + name);
    awaitLeaders(Set.of(name));
  }

  /** Grows {@code name} to {@code totalPartitions} partitions; returns once every partition has a leader. */
  public void addPartitions(String name, int totalPartitions) {
    await(admin().createPartitions(Map.of(name, NewPartitions.increaseTo(totalPartitions))).all(),
        "grow topic " + name + " to " + totalPartitions + " partitions");
    awaitLeaders(Set.of(name));
  }

  /**
   * Deletes the records of a partition before {@code offset}, as retention does: consumers positioned before it get
   * {@code OffsetOutOfRangeException} (or reset). Returns the partition's new earliest offset.
   */
  public long deleteRecordsBefore(String topic, int partition, long offset) {
    TopicPartition tp = new TopicPartition(topic, partition);
    return await(admin().deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(offset))).lowWatermarks().get(tp),
        "delete records of " + tp + " before offset " + offset).lowWatermark();
  }

  /** The end offset (high watermark, transaction markers included) of each partition, in partition order. */
  public Map<TopicPartition, Long> endOffsets(String topic) {
    return offsets(topic, OffsetSpec.latest());
  }

  /** The earliest offset still stored of each partition, in partition order. */
  public Map<TopicPartition, Long> earliestOffsets(String topic) {
    return offsets(topic, OffsetSpec.earliest());
  }

  /**
   * Every record of {@code topic} from its earliest offsets up to its end offsets as of the call, keys and values as
   * UTF-8 text, read by a consumer without a group and with {@code isolationLevel} ({@code read_committed} or
   * {@code read_uncommitted}). With read_committed every transaction must have ended, or this times out.
   */
  public List<ConsumerRecord<String, String>> records(String topic, String isolationLevel) {
    Map<TopicPartition, Long> ends = endOffsets(topic);
    List<ConsumerRecord<String, String>> records = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
        ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolationLevel,
        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false), new StringDeserializer(), new StringDeserializer())) {
      consumer.assign(ends.keySet());
      consumer.seekToBeginning(ends.keySet());
      long deadline = System.nanoTime() + ADMIN_TIMEOUT.toNanos();
      while (ends.entrySet().stream().anyMatch(end -> consumer.position(end.getKey()) < end.getValue())) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(String.format("Cannot read topic %s of %s up to %s (%s) within %d s:"
                  + " at %s", topic, this, ends, isolationLevel, ADMIN_TIMEOUT.toSeconds(),
              ends.keySet().stream().collect(Collectors.toMap(tp -> tp, consumer::position))));
        }
        consumer.poll(Duration.ofMillis(200)).forEach(records::add);
      }
    }
    return records;
  }

  /** Sends one record (no transaction, acks=all) and returns its offset. */
  public long send(String topic, String key, String value) {
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(
        Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()),
        new StringSerializer(), new StringSerializer())) {
      return producer.send(new ProducerRecord<>(topic, key, value)).get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
          .offset();
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("Cannot send a record to topic " + topic + " of " + this, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while sending to topic " + topic + " of " + this, e);
    }
  }

  /** An admin client of this broker, shared and closed with it (it reconnects across restarts). */
  public synchronized Admin admin() {
    if (admin == null) {
      admin = Admin.create(Map.of(
          AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
          AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000,
          AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) ADMIN_TIMEOUT.toMillis(),
          // each failed attempt to connect logs a warning: few while the broker starts
          AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, 100,
          AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 1_000,
          AdminClientConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 500));
    }
    return admin;
  }

  /** Stops the broker (a child JVM for certain) and the admin client. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    running = false;
    try {
      if (admin != null) {
        admin.close(Duration.ofSeconds(5));
      }
    } finally {
      server.close();
    }
  }

  @Override
  public String toString() {
    return "Kafka broker " + bootstrapServers() + " (" + mode + ", " + dir + ")";
  }

  private Map<TopicPartition, Long> offsets(String topic, OffsetSpec spec) {
    TopicDescription description = await(admin().describeTopics(List.of(topic)).allTopicNames(),
        "describe topic " + topic).get(topic);
    Map<TopicPartition, OffsetSpec> request = new LinkedHashMap<>();
    description.partitions().forEach(p -> request.put(new TopicPartition(topic, p.partition()), spec));
    var listed = await(admin().listOffsets(request).all(), "list offsets of topic " + topic);
    Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
    request.keySet().forEach(tp -> offsets.put(tp, listed.get(tp).offset()));
    return offsets;
  }

  private void awaitReady(long begin) {
    long deadline = begin + STARTUP_TIMEOUT.toNanos();
    String waitingFor = "no answer yet";
    while (true) {
      server.checkAlive();
      try {
        if (!listening()) {
          // the admin client would log a warning for each attempt to connect
          waitingFor = "nothing listens on " + bootstrapServers();
          throw new TimeoutException(waitingFor);
        }
        boolean registered = admin().describeCluster().nodes().get(2, TimeUnit.SECONDS).stream()
            .anyMatch(broker -> broker.id() == KafkaNode.ID);
        if (!registered) {
          waitingFor = "the broker is not registered (fenced) yet";
        } else {
          Set<String> topics = admin().listTopics(new ListTopicsOptions().listInternal(true)).names()
              .get(2, TimeUnit.SECONDS);
          String leaderless = leaderless(topics);
          if (leaderless.isEmpty()) {
            return;
          }
          waitingFor = "partitions without a leader: " + leaderless;
        }
      } catch (ExecutionException | TimeoutException e) {
        waitingFor = e.getCause() != null ? e.getCause().toString() : e.getMessage();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted while starting " + this, e);
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(String.format("%s did not start within %d s (%s)%s", this,
            STARTUP_TIMEOUT.toSeconds(), waitingFor,
            server instanceof ChildJvmKafkaServer child ? child.logTail() : ""));
      }
      pause();
    }
  }

  private boolean listening() {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1_000);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private void awaitLeaders(Set<String> topics) {
    long deadline = System.nanoTime() + ADMIN_TIMEOUT.toNanos();
    String leaderless;
    while (!(leaderless = leaderless(topics)).isEmpty()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(this + ": partitions without a leader after "
            + ADMIN_TIMEOUT.toSeconds() + " s: " + leaderless);
      }
      pause();
    }
  }

  /** The partitions of {@code topics} that have no leader, or "" if all have one. */
  private String leaderless(Set<String> topics) {
    if (topics.isEmpty()) {
      return "";
    }
    Map<String, TopicDescription> descriptions;
    try {
      descriptions = await(admin().describeTopics(topics).allTopicNames(), "describe topics " + topics);
    } catch (IllegalStateException e) {
      if (e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException) {
        // a topic just created that the broker's metadata does not hold yet (seen on a loaded machine)
        return String.join(", ", topics);
      }
      throw e;
    }
    return descriptions.values().stream()
        .flatMap(d -> d.partitions().stream()
            .filter(p -> p.leader() == null || p.leader().isEmpty())
            .map(TopicPartitionInfo::partition)
            .map(p -> d.name() + "-" + p))
        .collect(Collectors.joining(", "));
  }

  private <T> T await(KafkaFuture<T> future, String what) {
    try {
      return future.get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw new IllegalStateException("Cannot " + what + " on " + this + ": " + e.getCause(), e.getCause());
    } catch (TimeoutException e) {
      throw new IllegalStateException("Cannot " + what + " on " + this + ": no answer within "
          + ADMIN_TIMEOUT.toSeconds() + " s", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted: " + what + " on " + this, e);
    }
  }

  private static void pause() {
    try {
      Thread.sleep(100);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while waiting for a Kafka broker", e);
    }
  }

  private static int freePort() {
    return LoopbackPorts.reserve();
  }
}
