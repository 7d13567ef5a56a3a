package dev.lakecommit.staging.testing;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Which requests {@link FaultInjectingS3Proxy} breaks, and how: requests whose method and path match are
 * counted; after the first {@code skipFirst} matches, each is broken with the rule's probability (drawn from the
 * proxy's seeded random), until {@code maxFaults} were injected. The fault is one of the rule's faults, chosen
 * at random.
 *
 * <pre>{@code
 * FaultRule.builder().probability(0.1).faults(Fault.SLOW_DOWN, Fault.INTERNAL_ERROR, Fault.RESET).build();
 * FaultRule.builder().methods("PUT", "POST").pathMatching("/lake/.*\\.parquet").faults(Fault.ACCESS_DENIED).build();
 * }</pre>
 */
public final class FaultRule {
  /** What the proxy does to a request a rule breaks. */
  public enum Fault {
    /** {@code 503 SlowDown}, without forwarding: throttling. */
    SLOW_DOWN(503, "SlowDown", "Please reduce your request rate."),
    /** {@code 500 InternalError}, without forwarding. */
    INTERNAL_ERROR(500, "InternalError", "We encountered an internal error. Please try again."),
    /** {@code 403 AccessDenied}, without forwarding: a store that refuses (not retryable). */
    ACCESS_DENIED(403, "AccessDenied", "Access Denied"),
    /** The connection is reset (TCP RST) before the request is forwarded. */
    RESET(0, null, null),
    /** The request is forwarded and applied, then the connection is reset instead of answering: a lost ack. */
    RESET_AFTER_FORWARD(0, null, null),
    /** The request is forwarded after the rule's delay. */
    DELAY(0, null, null);

    final int status;
    final String code;
    final String message;

    Fault(int status, String code, String message) {
      this.status = status;
      this.code = code;
      this.message = message;
    }

    boolean answersWithError() {
      return status > 0;
    }
  }

  private final Set<String> methods;
  private final Pattern path;
  private final List<Fault> faults;
  private final double probability;
  private final long skipFirst;
  private final long maxFaults;
  private final Duration delay;
  private final AtomicLong matches = new AtomicLong();
  private final AtomicLong injected = new AtomicLong();

  private FaultRule(Builder builder) {
    this.methods = builder.methods;
    this.path = builder.path;
    this.faults = builder.faults;
    this.probability = builder.probability;
    this.skipFirst = builder.skipFirst;
    this.maxFaults = builder.maxFaults;
    this.delay = builder.delay;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Every request, with the given probability, one of the given faults. */
  public static FaultRule everyRequest(double probability, Fault... faults) {
    return builder().probability(probability).faults(faults).build();
  }

  boolean matches(String method, String requestPath) {
    return (methods.isEmpty() || methods.contains(method)) && path.matcher(requestPath).matches();
  }

  /** Counts a matching request and decides: the fault to inject, or null. */
  Fault decide(java.util.Random random) {
    long match = matches.incrementAndGet();
    if (match <= skipFirst || injected.get() >= maxFaults) {
      return null;
    }
    double draw;
    int pick;
    synchronized (random) {
      draw = random.nextDouble();
      pick = random.nextInt(faults.size());
    }
    if (draw >= probability || injected.incrementAndGet() > maxFaults) {
      return null;
    }
    return faults.get(pick);
  }

  Duration delay() {
    return delay;
  }

  /** Requests this rule matched so far. */
  public long matched() {
    return matches.get();
  }

  /** Faults this rule injected so far. */
  public long injected() {
    return Math.min(injected.get(), maxFaults);
  }

  @Override
  public String toString() {
    return "FaultRule{" + (methods.isEmpty() ? "any method" : methods) + " " + path.pattern() + ", p="
        + probability + ", " + faults + ", skip " + skipFirst + ", max " + maxFaults + "}";
  }

  /** Builder: by default every request, probability 1, {@link Fault#SLOW_DOWN}, unlimited. */
  public static final class Builder {
    private Set<String> methods = Set.of();
    private Pattern path = Pattern.compile(".*");
    private List<Fault> faults = List.of(Fault.SLOW_DOWN);
    private double probability = 1.0;
    private long skipFirst;
    private long maxFaults = Long.MAX_VALUE;
    private Duration delay = Duration.ZERO;

    private Builder() {}

    /** Only these HTTP methods (default: all). */
    public Builder methods(String... names) {
      this.methods = Set.of(names).stream().map(m -> m.toUpperCase(Locale.ROOT)).collect(Collectors.toSet());
      return this;
    }

    /** Only paths (path style: {@code /bucket/key}, without the query) that match this regex entirely. */
    public Builder pathMatching(String regex) {
      this.path = Pattern.compile(regex);
      return this;
    }

    public Builder faults(Fault... kinds) {
      check(kinds.length > 0, "Missing faults: give at least one");
      this.faults = List.of(kinds);
      return this;
    }

    public Builder probability(double p) {
      check(p >= 0 && p <= 1, "Invalid fault probability: %s (must be in [0, 1])", p);
      this.probability = p;
      return this;
    }

    /** Lets the first n matching requests through. */
    public Builder skipFirst(long n) {
      check(n >= 0, "Invalid skip count: %s (must be >= 0)", n);
      this.skipFirst = n;
      return this;
    }

    /** Injects at most n faults, then lets everything through. */
    public Builder maxFaults(long n) {
      check(n >= 0, "Invalid fault limit: %s (must be >= 0)", n);
      this.maxFaults = n;
      return this;
    }

    /** How long {@link Fault#DELAY} holds a request. */
    public Builder delay(Duration duration) {
      check(!duration.isNegative(), "Invalid delay: %s (must be >= 0)", duration);
      this.delay = duration;
      return this;
    }

    public FaultRule build() {
      return new FaultRule(this);
    }

    private static void check(boolean condition, String message, Object... args) {
      if (!condition) {
        throw new IllegalArgumentException(String.format(message, args));
      }
    }
  }
}
