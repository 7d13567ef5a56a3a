package dev.lakecommit.ingest.source;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Says once when the brokers stop answering the consumer and once when they answer again, with how long they were
 * gone, in place of the Kafka client's own warning per connection attempt (kept for {@code --verbose}).
 *
 * <p>A consumer with partitions to fetch gets a response at least every {@code fetch.max.wait.ms} (a fetch returns
 * empty when there is nothing new), so the count of responses it received ({@code response-total} of
 * {@code consumer-metrics}) standing still for a few of those intervals while it fetches means nobody answers. A
 * consumer whose partitions are all paused asks nothing, and its silence is not an outage.
 */
final class BrokerReachability {
  private static final Logger LOG = LoggerFactory.getLogger(BrokerReachability.class);

  /** No response for this long while fetching is an outage; at least 3 s, and four fetch waits. */
  static Duration quietLimit(Map<String, String> consumerProperties) {
    long fetchWaitMillis = 500;
    String configured = consumerProperties.get("fetch.max.wait.ms");
    if (configured != null) {
      try {
        fetchWaitMillis = Long.parseLong(configured.trim());
      } catch (NumberFormatException e) {
        // the client itself refuses the value when it starts; nothing to add here
      }
    }
    return Duration.ofMillis(Math.max(3_000, 4 * fetchWaitMillis));
  }

  private final String servers;
  private final long quietNanos;
  private double responses = -1;
  private long lastAnswer;
  private long lastPoll;
  private long silentNanos;
  /** Time spent inside polls since the last answer: what {@link #answeredLately} judges. */
  private long polledSilentNanos;
  private boolean down;
  private Metric responseMetric;

  BrokerReachability(String servers, Duration quietLimit, long nowNanos) {
    this.servers = servers;
    this.quietNanos = quietLimit.toNanos();
    this.lastAnswer = nowNanos;
    this.lastPoll = nowNanos;
  }

  /**
   * After a poll of {@code consumer}: reads its response count.
   *
   * @param fetching whether some partition of the consumer is not paused (it asked the brokers for something)
   * @param polledNanos how long the poll itself took
   */
  void afterPoll(Consumer<?, ?> consumer, boolean fetching, long polledNanos) {
    if (responseMetric == null) {
      responseMetric = responseMetric(consumer.metrics());
    }
    Object value = responseMetric == null ? null : responseMetric.metricValue();
    observe(value instanceof Number number ? number.doubleValue() : Double.NaN, fetching, System.nanoTime(),
        polledNanos);
  }

  /**
   * @param responsesNow the consumer's responses received so far (NaN if its metrics do not say)
   * @param fetching whether the consumer had partitions to fetch since the last observation
   * @param polledNanos how much of the time since the last observation was spent inside the poll
   * @return whether the brokers are taken to be gone
   */
  boolean observe(double responsesNow, boolean fetching, long nowNanos, long polledNanos) {
    if (Double.isNaN(responsesNow)) {
      return down;
    }
    // The client talks to the brokers only inside a poll: a stretch without polls (the writers were busy) counts as
    // at most a third of the limit.
    long sincePoll = nowNanos - lastPoll;
    lastPoll = nowNanos;
    if (responsesNow != responses) {
      if (down) {
        LOG.info("Kafka at {} answers again after {} without an answer; reading on", servers,
            seconds(nowNanos - lastAnswer));
      }
      responses = responsesNow;
      lastAnswer = nowNanos;
      silentNanos = 0;
      polledSilentNanos = 0;
      down = false;
      return false;
    }
    if (!fetching) {
      silentNanos = 0; // nothing was asked: no answer is due
      polledSilentNanos = 0;
      return down;
    }
    silentNanos += Math.min(sincePoll, quietNanos / 3);
    polledSilentNanos += Math.max(0, Math.min(polledNanos, sincePoll));
    if (!down && silentNanos >= quietNanos) {
      down = true;
      LOG.warn("Kafka at {} has not answered for {}: the job keeps what it read, commits it at its checkpoints and "
          + "retries the connection until the brokers answer (the client's messages are shown with --verbose)",
          servers, seconds(nowNanos - lastAnswer));
    }
    return down;
  }

  /**
   * Whether the brokers answered lately: within a third of the limit of time spent polling (1 s by default), so a
   * fetch in flight may still bring records. Only the polls' own time counts: the client asks nothing between
   * polls, so a stretch in which the job did not poll (its writers or a commit were busy) says nothing about the
   * brokers. Records held back for a partition that is behind wait only for a fetch that can come; during an outage
   * they are handed out, so that what was read before it is one checkpoint, not one record per hold.
   */
  boolean answeredLately() {
    return !down && polledSilentNanos < quietNanos / 3;
  }

  private static String seconds(long nanos) {
    return String.format(Locale.ROOT, "%.1f s", nanos / 1e9);
  }

  /** The consumer's {@code consumer-metrics} / {@code response-total}, or null where the client has no such metric. */
  static Metric responseMetric(Map<MetricName, ? extends Metric> metrics) {
    return clientMetric(metrics, "consumer-metrics", "response-total");
  }

  /** A consumer-wide metric (not one of a topic's), or null where the client has no such metric. */
  static Metric clientMetric(Map<MetricName, ? extends Metric> metrics, String group, String name) {
    for (Map.Entry<MetricName, ? extends Metric> entry : metrics.entrySet()) {
      MetricName key = entry.getKey();
      if (name.equals(key.name()) && group.equals(key.group()) && !key.tags().containsKey("topic")) {
        return entry.getValue();
      }
    }
    return null;
  }
}
