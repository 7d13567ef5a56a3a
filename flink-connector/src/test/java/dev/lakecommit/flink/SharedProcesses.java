package dev.lakecommit.flink;

import dev.lakecommit.core.testing.KafkaBroker;
import dev.lakecommit.hive.testing.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The servers the process-level tests ({@link FlinkKafkaProcessIT}, {@link FlinkKafkaRescaleIT}) share: one Kafka
 * broker in a child JVM and one {@link FlinkProcessCluster} (a JobManager and {@value #TASK_MANAGERS} TaskManagers
 * of {@value #SLOTS} slots, RocksDB with incremental checkpoints on local disk), started once per test JVM on first
 * use and stopped when the JVM exits, as iceberg-sink's {@code SharedServers} are; and, on first use, an embedded
 * PostgreSQL for JDBC catalogs. Starting the broker and the cluster is most of a short run's time (half a minute to
 * a minute and a half on a loaded machine), so each test class pays it only if it runs alone.
 *
 * <p>What the tests keep to so that they can share: each writes its own topic, table (in its own warehouse or
 * database), job name and savepoint directory; each ends its jobs before it returns (a failed test cancels them);
 * each replaces a TaskManager it kills, so the next test finds {@value #TASK_MANAGERS} live ones.
 *
 * <p>With {@code -D}{@value #KEEP_PROPERTY}{@code =true} the directory (the JobManager's and TaskManagers' logs,
 * checkpoints, savepoints, the broker's data) is kept at exit and its path printed, for reading a failed run.
 */
final class SharedProcesses {
  /** Slots per TaskManager: the rescale test's job takes 4 (a source subtask per partition, slot sharing). */
  static final int SLOTS = 3;
  static final int TASK_MANAGERS = 2;
  /** The system property that keeps the processes' directory at exit. */
  static final String KEEP_PROPERTY = "lakecommit.test.keep-processes-dir";

  private static SharedProcesses instance;

  private final Path dir;
  private final KafkaBroker kafka;
  private final FlinkProcessCluster cluster;
  private EmbeddedPostgres postgres;

  private SharedProcesses(Path dir, KafkaBroker kafka, FlinkProcessCluster cluster) {
    this.dir = dir;
    this.kafka = kafka;
    this.cluster = cluster;
  }

  /** The shared broker and cluster, started now if this is their first use in this JVM. */
  static synchronized SharedProcesses get() {
    if (instance == null) {
      Path dir;
      try {
        dir = Files.createTempDirectory("lakecommit-flink-processes-");
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot create a directory for the shared Flink cluster and broker", e);
      }
      long start = System.nanoTime();
      KafkaBroker kafka = KafkaBroker.childJvm(dir.resolve("kafka"));
      FlinkProcessCluster cluster;
      try {
        cluster = new FlinkProcessCluster(dir.resolve("flink"), SLOTS, Map.of(
            "state.backend.type", "rocksdb",
            "execution.checkpointing.incremental", "true",
            "execution.checkpointing.dir", dir.resolve("checkpoints").toUri().toString(),
            "execution.checkpointing.savepoint-dir", dir.resolve("savepoints").toUri().toString()));
        cluster.start(TASK_MANAGERS);
      } catch (RuntimeException | Error e) {
        kafka.close();
        throw e;
      }
      System.out.printf("SharedProcesses: Kafka broker and Flink cluster (%d TaskManagers) up in %d s under %s%n",
          TASK_MANAGERS, (System.nanoTime() - start) / 1_000_000_000, dir);
      instance = new SharedProcesses(dir, kafka, cluster);
      Runtime.getRuntime().addShutdownHook(new Thread(instance::close, "shared-flink-processes-close"));
    }
    return instance;
  }

  KafkaBroker kafka() {
    return kafka;
  }

  FlinkProcessCluster cluster() {
    return cluster;
  }

  /** The shared embedded PostgreSQL, started now if this is its first use. */
  synchronized EmbeddedPostgres postgres() {
    if (postgres == null) {
      postgres = EmbeddedPostgres.startNew();
    }
    return postgres;
  }

  private synchronized void close() {
    try {
      cluster.close();
    } finally {
      try {
        kafka.close();
      } finally {
        if (postgres != null) {
          postgres.close();
        }
        if (Boolean.getBoolean(KEEP_PROPERTY)) {
          System.out.printf("SharedProcesses: kept %s (-D%s)%n", dir, KEEP_PROPERTY);
        } else {
          deleteRecursively(dir);
        }
      }
    }
  }

  private static void deleteRecursively(Path root) {
    try (Stream<Path> paths = Files.walk(root)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      System.err.println("Cannot delete " + root + ": " + e);
    }
  }
}
