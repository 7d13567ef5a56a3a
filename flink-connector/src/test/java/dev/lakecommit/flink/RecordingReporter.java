package dev.lakecommit.flink;

import java.util.List;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/**
 * A Flink metric reporter, loaded through Flink's reporter factory mechanism ({@code metrics.reporter.<name>
 * .factory.class}, the factory listed in {@code META-INF/services}), that keeps every metric ever registered in
 * this JVM — also those of tasks that have ended or failed since, so counters of every task attempt can be summed.
 */
public final class RecordingReporter implements MetricReporter {
  /** One registration: the metric, its full identifier and the Flink job it belongs to. */
  record Registered(String identifier, String jobId, String subtask, Metric metric) {
    long count() {
      return ((Counter) metric).getCount();
    }

    Object value() {
      return ((Gauge<?>) metric).getValue();
    }

    Histogram histogram() {
      return (Histogram) metric;
    }
  }

  static final List<Registered> METRICS = new CopyOnWriteArrayList<>();

  /** Adds this reporter, as {@code name}, to a cluster configuration. */
  static Configuration addTo(Configuration conf, String name) {
    conf.setString("metrics.reporter." + name + ".factory.class", Factory.class.getName());
    return conf;
  }

  /** The lakecommit metrics called {@code name} (in the sink committer's group). */
  static List<Registered> lakecommit(String name) {
    return METRICS.stream().filter(m -> m.identifier().endsWith("." + CommitMetrics.GROUP + "." + name)).toList();
  }

  /** The sum of the counters {@code name} of every registration for which {@code jobId} matches (null: all). */
  static long sum(String name, String jobId) {
    return lakecommit(name).stream().filter(m -> jobId == null || jobId.equals(m.jobId()))
        .mapToLong(Registered::count).sum();
  }

  @Override
  public void open(MetricConfig config) {}

  @Override
  public void close() {}

  @Override
  public void notifyOfAddedMetric(Metric metric, String name, MetricGroup group) {
    METRICS.add(new Registered(group.getMetricIdentifier(name), group.getAllVariables().get("<job_id>"),
        group.getAllVariables().get("<subtask_index>"), metric));
  }

  @Override
  public void notifyOfRemovedMetric(Metric metric, String name, MetricGroup group) {
    // kept: the counters of a failed task attempt still count
  }

  /** The factory Flink instantiates by its class name. */
  public static final class Factory implements MetricReporterFactory {
    @Override
    public MetricReporter createMetricReporter(Properties properties) {
      return new RecordingReporter();
    }
  }
}
