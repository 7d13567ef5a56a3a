package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.staging.StagingManifest;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
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
      SupportsAggregatedCommitter<StagingManifest, Object> committers = new SupportsAggregatedCommitter<>() {
        @Override
        public SinkAggregatedCommitter<StagingManifest, Object> createAggregatedCommitter() {
          return new SinkAggregatedCommitter<>() {
            @Override
            public Object combine(CommitId commitId, List<StagingManifest> infos) {
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
      return new CoreSink(null, committers);
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
    return new LakecommitCommitter(target, TestJobs.ROW_TYPE, RetryPolicy.builder().maxAttempts(attempts)
        .initialBackoff(Duration.ZERO).maxBackoff(Duration.ZERO).sleeper(d -> { }).build(), JOB, 0,
        java.util.OptionalLong.empty());
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
