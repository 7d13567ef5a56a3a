package dev.lakecommit.ingest.cli;

import com.sun.net.httpserver.HttpServer;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.runtime.JobListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.kafka.common.TopicPartition;

/**
 * {@code --metrics-port}: the job's metrics in Prometheus text format at {@code /metrics}, from Micrometer's
 * Prometheus registry: committed records and checkpoints, the commit latency (a histogram with p50 and p99),
 * pending checkpoints, commit retries, bad records, and a stream's lag per partition.
 */
final class JobMetrics implements JobListener, AutoCloseable {
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final HttpServer server;
  private final Timer commitLatency;
  private final Counter committedCheckpoints;
  private final Counter committedRecords;
  private final Counter commitRetries;
  private final AtomicLong persisted = new AtomicLong();
  private final AtomicLong committed = new AtomicLong();
  private final Supplier<Map<TopicPartition, Long>> lag;
  private final Set<TopicPartition> lagRegistered = ConcurrentHashMap.newKeySet();
  private long lastCommittedRecords = -1;

  /**
   * The metrics {@code --metrics-port} asks for, served from now on, their address printed; null without the option.
   *
   * @param lag a stream's lag per partition, or null
   * @throws IOException if the port cannot be bound (the message names it)
   */
  static JobMetrics serve(KafkaOptions options, String jobId, AtomicLong badRecords,
      Supplier<Map<TopicPartition, Long>> lag, java.io.PrintWriter out) throws IOException {
    if (options.metricsPort == null) {
      return null;
    }
    JobMetrics metrics = new JobMetrics(options.metricsHost, options.metricsPort, jobId, badRecords, lag);
    out.printf("Metrics at %s%n", metrics.address(options));
    return metrics;
  }

  /** Where the metrics are served: {@code http://HOST:PORT/metrics}. */
  String address(KafkaOptions options) {
    return String.format("http://%s:%d/metrics", options.metricsHost, port());
  }

  /**
   * @param lag a stream's lag per partition, or null
   * @throws IOException if the port cannot be bound (the message names it)
   */
  JobMetrics(String host, int port, String jobId, AtomicLong badRecords, Supplier<Map<TopicPartition, Long>> lag)
      throws IOException {
    this.lag = lag;
    registry.config().commonTags("job", jobId);
    commitLatency = Timer.builder("lakecommit.commit.latency")
        .description("Checkpoint persisted to commit visible in the table")
        .publishPercentiles(0.5, 0.99).publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofMinutes(5))
        .register(registry);
    // Prometheus computes quantiles from the histogram's buckets; p50 and p99 are also exported as they are, for
    // dashboards without histogram_quantile().
    for (double quantile : new double[] {0.5, 0.99}) {
      Gauge.builder("lakecommit.commit.latency.quantile", commitLatency, timer -> percentile(timer, quantile))
          .description("Commit latency at a quantile (client-side, over the job's run)")
          .tag("quantile", Double.toString(quantile)).baseUnit("seconds").register(registry);
    }
    committedCheckpoints = Counter.builder("lakecommit.committed.checkpoints")
        .description("Checkpoints committed (or found already committed)").register(registry);
    committedRecords = Counter.builder("lakecommit.committed.records")
        .description("Records read into committed checkpoints").register(registry);
    commitRetries = Counter.builder("lakecommit.commit.retries")
        .description("Commit attempts that failed and were retried").register(registry);
    Gauge.builder("lakecommit.pending.checkpoints", () -> Math.max(0, persisted.get() - committed.get()))
        .description("Checkpoints persisted but not yet committed").register(registry);
    Gauge.builder("lakecommit.bad.records", badRecords::get)
        .description("Records diverted to dead-letter files by the job, over all its runs").register(registry);
    try {
      server = HttpServer.create(new InetSocketAddress(host, port), 0);
    } catch (IOException e) {
      throw new IOException("Cannot serve metrics on " + host + ":" + port + " (--metrics-port): " + e.getMessage(),
          e);
    }
    server.createContext("/metrics", exchange -> {
      registerLag();
      byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
  }

  private static double percentile(Timer timer, double quantile) {
    for (io.micrometer.core.instrument.distribution.ValueAtPercentile value : timer.takeSnapshot().percentileValues()) {
      if (value.percentile() == quantile) {
        return value.value(java.util.concurrent.TimeUnit.SECONDS);
      }
    }
    return Double.NaN;
  }

  /** The port it listens on (the one given, or the one chosen for 0). */
  int port() {
    return server.getAddress().getPort();
  }

  private void registerLag() {
    if (lag == null) {
      return;
    }
    for (TopicPartition partition : lag.get().keySet()) {
      if (lagRegistered.add(partition)) {
        Gauge.builder("lakecommit.kafka.lag.records", () -> lag.get().getOrDefault(partition, 0L))
            .description("Records behind the partition's end offset").tag("topic", partition.topic())
            .tag("partition", Integer.toString(partition.partition())).register(registry);
      }
    }
  }

  @Override
  public void onStart(int attempt, long restoredCheckpointId, long recordCount) {
    lastCommittedRecords = recordCount;
  }

  @Override
  public void onCheckpointPersisted(long checkpointId) {
    persisted.incrementAndGet();
  }

  @Override
  public void onCommitAttemptFailed(long checkpointId, int attempt, Throwable cause) {
    commitRetries.increment();
  }

  @Override
  public void onCommitted(long checkpointId, CommitOutcome outcome, long durationNanos) {
    committed.incrementAndGet();
    committedCheckpoints.increment();
    commitLatency.record(Duration.ofNanos(durationNanos));
  }

  @Override
  public void onCheckpointComplete(long checkpointId, long recordCount) {
    // a checkpoint is complete when its commit (and every older one) is done: its records are in the table
    if (lastCommittedRecords >= 0 && recordCount > lastCommittedRecords) {
      committedRecords.increment(recordCount - lastCommittedRecords);
    }
    lastCommittedRecords = recordCount;
    committed.set(persisted.get());
    registerLag();
  }

  @Override
  public void close() {
    server.stop(0);
    registry.close();
  }
}
