package dev.lakecommit.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {
  private final List<Duration> slept = new ArrayList<>();

  private RetryPolicy.Builder policy() {
    return RetryPolicy.builder()
        .initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofSeconds(1))
        .multiplier(2)
        .sleeper(slept::add);
  }

  @Test
  void backsOffExponentiallyUpToTheMaximum() {
    RetryPolicy retry = policy().build();
    assertThat(List.of(retry.backoff(1), retry.backoff(2), retry.backoff(3), retry.backoff(4), retry.backoff(9)))
        .containsExactly(Duration.ofMillis(100), Duration.ofMillis(200), Duration.ofMillis(400),
            Duration.ofMillis(800), Duration.ofSeconds(1));
  }

  @Test
  void retriesOnlyWhatIsDeclaredRetryable() {
    RetryPolicy retry = policy().maxAttempts(5).retryOn(e -> e instanceof IOException).build();
    AtomicInteger calls = new AtomicInteger();

    assertThatThrownBy(() -> retry.call("op", () -> {
      calls.incrementAndGet();
      throw new IllegalStateException("no");
    })).isInstanceOf(IllegalStateException.class);
    assertThat(calls).hasValue(1);
    assertThat(slept).isEmpty();
  }

  @Test
  void succeedsAfterRetryableFailures() throws Exception {
    RetryPolicy retry = policy().maxAttempts(5).jitter(0).retryOn(e -> e instanceof IOException).build();
    AtomicInteger calls = new AtomicInteger();

    String result = retry.call("op", () -> {
      if (calls.incrementAndGet() < 3) {
        throw new IOException("throttled");
      }
      return "ok";
    });

    assertThat(result).isEqualTo("ok");
    assertThat(slept).containsExactly(Duration.ofMillis(100), Duration.ofMillis(200));
  }

  @Test
  void stopsAfterMaxAttemptsWithEveryFailureAttached() {
    List<String> retried = new ArrayList<>();
    RetryPolicy retry = policy().maxAttempts(3).retryOn(e -> true)
        .listener((what, attempt, backoff, cause) -> retried.add(what + "#" + attempt)).build();
    AtomicInteger calls = new AtomicInteger();

    assertThatThrownBy(() -> retry.call("op", () -> {
      throw new IOException("failure " + calls.incrementAndGet());
    })).hasMessage("failure 3").satisfies(e -> assertThat(e.getSuppressed()).hasSize(1));
    assertThat(calls).hasValue(3);
    assertThat(retried).containsExactly("op#1", "op#2");
  }

  @Test
  void jitterStaysWithinItsFraction() throws Exception {
    RetryPolicy retry = policy().maxAttempts(200).maxBackoff(Duration.ofMillis(100)).jitter(0.2).build();
    AtomicInteger calls = new AtomicInteger();
    retry.commit("c", () -> calls.incrementAndGet() < 200
        ? CommitOutcome.retryable(new IOException("conflict"))
        : CommitOutcome.committed("s1"));

    assertThat(slept).hasSize(199).allSatisfy(d ->
        assertThat(d).isBetween(Duration.ofMillis(80), Duration.ofMillis(120)));
    assertThat(slept.stream().distinct().count()).as("jitter varies the delays").isGreaterThan(1);
  }

  @Test
  void commitRetriesRetryableAndUnknownOutcomesButNotFatalOnes() throws Exception {
    RetryPolicy retry = policy().maxAttempts(5).build();
    List<CommitOutcome> outcomes = new ArrayList<>(List.of(
        CommitOutcome.retryable(new IOException("conflict")),
        CommitOutcome.unknown(new IOException("timeout")),
        CommitOutcome.alreadyCommitted("watermark")));

    assertThat(retry.commit("c", () -> outcomes.remove(0))).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    assertThat(slept).hasSize(2);

    CommitOutcome fatal = CommitOutcome.fatal(new IOException("denied"));
    assertThat(retry.commit("c", () -> fatal)).isSameAs(fatal);
    assertThat(slept).hasSize(2);
  }

  @Test
  void commitReturnsTheLastRetryableOutcomeWhenAttemptsRunOut() throws Exception {
    RetryPolicy retry = policy().maxAttempts(4).build();
    AtomicInteger calls = new AtomicInteger();
    CommitOutcome last = retry.commit("c", () ->
        CommitOutcome.retryable(new IOException("conflict " + calls.incrementAndGet())));
    assertThat(last.isRetryable()).isTrue();
    assertThat(((CommitOutcome.Retryable) last).cause()).hasMessage("conflict 4");
  }

  @Test
  void stopsAtTheOverallTimeout() throws Exception {
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(1000).totalTimeout(Duration.ofNanos(1))
        .sleeper(slept::add).build();
    AtomicInteger calls = new AtomicInteger();
    retry.commit("c", () -> {
      calls.incrementAndGet();
      return CommitOutcome.retryable(new IOException("conflict"));
    });
    assertThat(calls.get()).isLessThan(1000);
  }

  @Test
  void checksItsSettings() {
    assertThatThrownBy(() -> RetryPolicy.builder().maxAttempts(0))
        .hasMessage("Invalid max attempts: 0 (must be >= 1)");
    assertThatThrownBy(() -> RetryPolicy.builder().jitter(1.5)).hasMessage("Invalid jitter: 1.5 (must be in [0, 1))");
    assertThatThrownBy(() -> RetryPolicy.builder().initialBackoff(Duration.ofSeconds(5))
        .maxBackoff(Duration.ofSeconds(1)).build()).hasMessageContaining("max PT1S is below initial PT5S");
  }

  @Test
  void outcomesSayWhatCleanupIsAllowed() {
    IOException cause = new IOException("x");
    assertThat(CommitOutcome.committed("s").stagedFilesDeletable()).isFalse();
    assertThat(CommitOutcome.alreadyCommitted("w").stagedFilesDeletable()).isFalse();
    assertThat(CommitOutcome.retryable(cause).stagedFilesDeletable()).isFalse();
    assertThat(CommitOutcome.unknown(cause).stagedFilesDeletable()).isFalse();
    assertThat(CommitOutcome.fatal(cause).stagedFilesDeletable()).isTrue();
    assertThat(CommitOutcome.unknown(cause).isRetryable()).isTrue();
    assertThat(CommitOutcome.fatal(cause).isRetryable()).isFalse();
  }
}
