package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.testing.MemoryTarget;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.staging.WriterManifest;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.table.types.logical.RowType;
import org.junit.jupiter.api.Test;

/**
 * How the committer maps Lakecommit's commit outcomes onto Flink's commit requests: oldest first, retryable and
 * unknown outcomes keep the request (and every later one) pending, fatal ones fail the job, and nothing is ever
 * dropped with {@code signalFailedWithKnownReason}.
 */
class CommitterOutcomesTest {
  private static final JobId JOB = JobId.of("outcomes");

  /** A target whose committer answers from a script and records what it was asked to commit. */
  static final class ScriptedTarget extends SinkRecipe {
    final transient Deque<CommitOutcome> script = new ArrayDeque<>();
    final transient List<Long> attempts = new ArrayList<>();

    @Override
    String table() {
      return "db.scripted";
    }

    @Override
    CoreSink open(RowType rowType) {
      SupportsAggregatedCommitter<WriterManifest, Object> committers = new SupportsAggregatedCommitter<>() {
        @Override
        public SinkAggregatedCommitter<WriterManifest, Object> createAggregatedCommitter() {
          return new SinkAggregatedCommitter<>() {
            @Override
            public Object combine(CommitId commitId, List<WriterManifest> infos) {
              return commitId;
            }

            @Override
            public CommitOutcome commit(Object committable) {
              attempts.add(((CommitId) committable).checkpointId());
              return script.isEmpty() ? CommitOutcome.committed("snapshot") : script.poll();
            }

            @Override
            public CommitId commitId(Object committable) {
              return (CommitId) committable;
            }
          };
        }

        @Override
        public SimpleVersionedSerializer<Object> aggregatedCommitSerializer() {
          throw new UnsupportedOperationException();
        }
      };
      return new CoreSink(null, committers, () -> new MemoryTarget(job -> java.util.OptionalLong.empty()));
    }

    @Override
    SimpleVersionedSerializer<Object> committableSerializer() {
      throw new UnsupportedOperationException();
    }
  }

  private static ReplayTest.Request request(long checkpointId) {
    CommitId id = new CommitId(JOB, checkpointId);
    return new ReplayTest.Request(new CheckpointCommittable(checkpointId, id, id, ""));
  }

  private static LakecommitCommitter committer(ScriptedTarget target, int attempts) {
    return committer(target, attempts, TestJobs.noMetrics());
  }

  private static LakecommitCommitter committer(ScriptedTarget target, int attempts, CommitMetrics metrics) {
    return new LakecommitCommitter(target, TestJobs.ROW_TYPE, RetryPolicy.builder().maxAttempts(attempts)
        .initialBackoff(Duration.ZERO).maxBackoff(Duration.ZERO).sleeper(d -> { }).listener((w, n, b, c) ->
            metrics.retried()).build(), JOB, 1, java.util.OptionalLong.empty(), metrics);
  }

  /** A metric group that keeps what is registered in it, by name. */
  static final class RecordingGroup extends UnregisteredMetricsGroup {
    final Map<String, Metric> metrics = new HashMap<>();

    @Override
    public <C extends Counter> C counter(String name, C counter) {
      metrics.put(name, counter);
      return counter;
    }

    @Override
    public Counter counter(String name) {
      return counter(name, new SimpleCounter());
    }

    @Override
    public <T, G extends Gauge<T>> G gauge(String name, G gauge) {
      metrics.put(name, gauge);
      return gauge;
    }

    @Override
    public <H extends Histogram> H histogram(String name, H histogram) {
      metrics.put(name, histogram);
      return histogram;
    }

    @Override
    public MetricGroup addGroup(String name) {
      return this;
    }

    long count(String name) {
      return ((Counter) metrics.get(name)).getCount();
    }

    Object value(String name) {
      return ((Gauge<?>) metrics.get(name)).getValue();
    }
  }

  @Test
  void metricsCountRetriesPendingCommitsAndReplays() throws Exception {
    ScriptedTarget target = new ScriptedTarget();
    target.script.add(CommitOutcome.retryable(new RuntimeException("conflict")));
    target.script.add(CommitOutcome.unknown(new RuntimeException("lost answer")));
    RecordingGroup group = new RecordingGroup();
    LakecommitCommitter committer = committer(target, 2, CommitMetrics.register(group));
    ReplayTest.Request five = request(5);
    ReplayTest.Request six = request(6);
    committer.commit(List.of(five, six));
    assertThat(group.value("pendingCheckpoints")).as("5 unsettled after 2 attempts, 6 behind it").isEqualTo(2);
    assertThat(group.count("commitRetries")).isEqualTo(1);
    assertThat(group.count("committedCheckpoints")).isZero();
    assertThat(group.value("lastCommitDurationMs")).isEqualTo(-1L);

    ReplayTest.Request fiveAgain = request(5);
    fiveAgain.retries = 1;
    ReplayTest.Request sixAgain = request(6);
    sixAgain.retries = 1;
    target.script.add(CommitOutcome.alreadyCommitted("the lost answer had landed"));
    committer.commit(List.of(fiveAgain, sixAgain));
    assertThat(group.count("commitRetries")).as("each further call is one more attempt").isEqualTo(3);
    assertThat(group.count("replaysSkipped")).isEqualTo(1);
    assertThat(group.count("committedCheckpoints")).as("6 only: 5 was already in the table").isEqualTo(1);
    assertThat(group.value("pendingCheckpoints")).isEqualTo(0);
    assertThat(((Histogram) group.metrics.get("commitLatencyMs")).getCount()).isEqualTo(1);
    assertThat((Long) group.value("lastCommitDurationMs")).isGreaterThanOrEqualTo(0);
  }

  @Test
  void commitsOldestFirstWhateverOrderFlinkGives() throws Exception {
    ScriptedTarget target = new ScriptedTarget();
    ReplayTest.Request seven = request(7);
    ReplayTest.Request five = request(5);
    ReplayTest.Request six = request(6);
    committer(target, 3).commit(List.of(seven, five, six));
    assertThat(target.attempts).containsExactly(5L, 6L, 7L);
    assertThat(List.of(five.signals, six.signals, seven.signals)).allMatch(List::isEmpty);
  }

  @Test
  void retriesARetryableOutcomeWithThePolicyThenSucceeds() throws Exception {
    ScriptedTarget target = new ScriptedTarget();
    target.script.add(CommitOutcome.retryable(new RuntimeException("conflict")));
    target.script.add(CommitOutcome.unknown(new RuntimeException("lost answer")));
    ReplayTest.Request five = request(5);
    committer(target, 3).commit(List.of(five));
    assertThat(target.attempts).containsExactly(5L, 5L, 5L);
    assertThat(five.signals).isEmpty();
  }

  @Test
  void anUnsettledCommitStaysPendingAndHoldsBackLaterOnes() throws Exception {
    ScriptedTarget target = new ScriptedTarget();
    target.script.add(CommitOutcome.unknown(new RuntimeException("catalog unreachable")));
    target.script.add(CommitOutcome.retryable(new RuntimeException("conflict")));
    ReplayTest.Request five = request(5);
    ReplayTest.Request six = request(6);
    committer(target, 2).commit(List.of(six, five));
    assertThat(target.attempts).as("6 must not commit before 5").containsExactly(5L, 5L);
    assertThat(five.signals).containsExactly("retry-later");
    assertThat(six.signals).containsExactly("retry-later");
  }

  @Test
  void aFatalOutcomeFailsTheJob() throws Exception {
    ScriptedTarget target = new ScriptedTarget();
    target.script.add(CommitOutcome.fatal(new IllegalStateException("schema mismatch")));
    ReplayTest.Request five = request(5);
    ReplayTest.Request six = request(6);
    committer(target, 3).commit(List.of(five, six));
    // Flink's signalFailedWithUnknownReason throws, failing the job; the recording request does not.
    assertThat(five.signals).containsExactly("failed-unknown");
    assertThat(six.signals).containsExactly("retry-later");
    assertThat(target.attempts).as("a fatal outcome is not retried").containsExactly(5L);
  }
}
