package dev.lakecommit.core;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one retry helper of Lakecommit: bounded attempts, exponential backoff with jitter, an overall time limit,
 * and retries only of what is declared retryable. Commit-level outcomes are retried here; transport errors are
 * retried by the storage client underneath (never wrap an SDK call in this as well: nested retries multiply).
 */
public final class RetryPolicy {
  private static final Logger LOG = LoggerFactory.getLogger(RetryPolicy.class);

  /** How the policy waits; tests pass one that records the delays instead of sleeping. */
  @FunctionalInterface
  public interface Sleeper {
    void sleep(Duration duration) throws InterruptedException;
  }

  /** Told of every retry, for metrics. */
  @FunctionalInterface
  public interface Listener {
    void onRetry(String what, int failedAttempt, Duration backoff, Throwable cause);
  }

  private final int maxAttempts;
  private final Duration initialBackoff;
  private final Duration maxBackoff;
  private final double multiplier;
  private final double jitter;
  private final Duration totalTimeout;
  private final Predicate<Throwable> retryOn;
  private final Sleeper sleeper;
  private final Listener listener;

  private RetryPolicy(Builder builder) {
    this.maxAttempts = builder.maxAttempts;
    this.initialBackoff = builder.initialBackoff;
    this.maxBackoff = builder.maxBackoff;
    this.multiplier = builder.multiplier;
    this.jitter = builder.jitter;
    this.totalTimeout = builder.totalTimeout;
    this.retryOn = builder.retryOn;
    this.sleeper = builder.sleeper;
    this.listener = builder.listener;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** 8 attempts, 100 ms doubling to at most 10 s, 20 % jitter, 5 minutes overall; retries nothing thrown. */
  public static RetryPolicy defaults() {
    return builder().build();
  }

  public int maxAttempts() {
    return maxAttempts;
  }

  /** How long the attempts of one call may take in all. */
  public Duration totalTimeout() {
    return totalTimeout;
  }

  /**
   * Runs an attempt until it returns, retrying what it throws if the policy's {@code retryOn} accepts it.
   *
   * @throws Exception the last failure, with the earlier ones suppressed, when attempts or time run out, or the
   *     first failure that is not retryable
   */
  public <T> T call(String what, Callable<T> attempt) throws Exception {
    long deadline = deadlineNanos();
    Exception first = null;
    for (int attemptNo = 1; ; attemptNo++) {
      try {
        return attempt.call();
      } catch (Exception e) {
        if (first != null && first != e) {
          e.addSuppressed(first);
        }
        if (!retryOn.test(e) || !mayRetry(attemptNo, deadline)) {
          throw e;
        }
        first = first == null ? e : first;
        backOff(what, attemptNo, e);
      }
    }
  }

  /**
   * Commits until the outcome is final: retries {@link CommitOutcome#isRetryable() retryable} and unknown
   * outcomes (every commit attempt re-checks the target, so retrying an unknown one is safe).
   *
   * @return the last outcome: a success, a fatal failure, or the last retryable one when attempts or time ran out
   */
  public CommitOutcome commit(String what, Supplier<CommitOutcome> attempt) throws InterruptedException {
    long deadline = deadlineNanos();
    for (int attemptNo = 1; ; attemptNo++) {
      CommitOutcome outcome = Objects.requireNonNull(attempt.get(), "commit outcome");
      if (!outcome.isRetryable() || !mayRetry(attemptNo, deadline)) {
        return outcome;
      }
      Throwable cause =
          outcome instanceof CommitOutcome.Retryable r ? r.cause() : ((CommitOutcome.Unknown) outcome).cause();
      backOffInterruptibly(what, attemptNo, cause);
    }
  }

  /** The wait after the given failed attempt (1-based), before jitter. */
  Duration backoff(int failedAttempt) {
    double nanos = initialBackoff.toNanos() * Math.pow(multiplier, failedAttempt - 1);
    return Duration.ofNanos((long) Math.min(nanos, maxBackoff.toNanos()));
  }

  private boolean mayRetry(int attemptNo, long deadline) {
    return attemptNo < maxAttempts && System.nanoTime() < deadline;
  }

  private long deadlineNanos() {
    long now = System.nanoTime();
    long timeout = totalTimeout.toNanos();
    return Long.MAX_VALUE - now < timeout ? Long.MAX_VALUE : now + timeout;
  }

  private void backOff(String what, int attemptNo, Exception cause) throws Exception {
    try {
      backOffInterruptibly(what, attemptNo, cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      cause.addSuppressed(e);
      throw cause;
    }
  }

  private void backOffInterruptibly(String what, int attemptNo, Throwable cause) throws InterruptedException {
    Duration base = backoff(attemptNo);
    double factor = 1.0 + jitter * (2 * ThreadLocalRandom.current().nextDouble() - 1);
    Duration delay = Duration.ofNanos((long) (base.toNanos() * factor));
    LOG.warn("Retrying {} after attempt {}{} failed, in {} ms: {}", what, attemptNo,
        maxAttempts == Integer.MAX_VALUE ? "" : " of " + maxAttempts, delay.toMillis(), cause.toString());
    listener.onRetry(what, attemptNo, delay, cause);
    sleeper.sleep(delay);
  }

  /** Builder; every setting checks its argument. */
  public static final class Builder {
    private int maxAttempts = 8;
    private Duration initialBackoff = Duration.ofMillis(100);
    private Duration maxBackoff = Duration.ofSeconds(10);
    private double multiplier = 2.0;
    private double jitter = 0.2;
    private Duration totalTimeout = Duration.ofMinutes(5);
    private Predicate<Throwable> retryOn = e -> false;
    private Sleeper sleeper = d -> Thread.sleep(d.toMillis(), d.toNanosPart() % 1_000_000);
    private Listener listener = (what, attempt, backoff, cause) -> {};

    private Builder() {}

    public Builder maxAttempts(int attempts) {
      check(attempts >= 1, "Invalid max attempts: %s (must be >= 1)", attempts);
      this.maxAttempts = attempts;
      return this;
    }

    public Builder initialBackoff(Duration backoff) {
      check(!backoff.isNegative(), "Invalid initial backoff: %s (must be >= 0)", backoff);
      this.initialBackoff = backoff;
      return this;
    }

    public Builder maxBackoff(Duration backoff) {
      check(!backoff.isNegative(), "Invalid max backoff: %s (must be >= 0)", backoff);
      this.maxBackoff = backoff;
      return this;
    }

    public Builder multiplier(double factor) {
      check(factor >= 1.0, "Invalid backoff multiplier: %s (must be >= 1)", factor);
      this.multiplier = factor;
      return this;
    }

    public Builder jitter(double fraction) {
      check(fraction >= 0 && fraction < 1, "Invalid jitter: %s (must be in [0, 1))", fraction);
      this.jitter = fraction;
      return this;
    }

    public Builder totalTimeout(Duration timeout) {
      check(timeout.toNanos() > 0, "Invalid total retry timeout: %s (must be > 0)", timeout);
      this.totalTimeout = timeout;
      return this;
    }

    /** Which thrown failures are retried by {@link #call}; nothing by default. */
    public Builder retryOn(Predicate<Throwable> predicate) {
      this.retryOn = Objects.requireNonNull(predicate, "retryOn");
      return this;
    }

    public Builder sleeper(Sleeper value) {
      this.sleeper = Objects.requireNonNull(value, "sleeper");
      return this;
    }

    public Builder listener(Listener value) {
      this.listener = Objects.requireNonNull(value, "listener");
      return this;
    }

    public RetryPolicy build() {
      check(maxBackoff.compareTo(initialBackoff) >= 0,
          "Invalid backoff: max %s is below initial %s", maxBackoff, initialBackoff);
      return new RetryPolicy(this);
    }

    private static void check(boolean condition, String message, Object... args) {
      if (!condition) {
        throw new IllegalArgumentException(String.format(message, args));
      }
    }
  }
}
