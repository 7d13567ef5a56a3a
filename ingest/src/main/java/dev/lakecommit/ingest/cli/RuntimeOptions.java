package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.JobResult;
import dev.lakecommit.core.runtime.RateLimitedSource;
import dev.lakecommit.core.runtime.StandaloneJob;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.StringJoiner;
import picocli.CommandLine.Option;

/**
 * How long a job may go without progress, how often a commit is retried, and how many checkpoints may wait for
 * their commits. Transport errors of storage (S3
 * throttling, resets, 5xx) are not retried here: the storage client owns them ({@code s3.retry.*} for S3FileIO,
 * {@code fs.s3a.*} for S3A, set with {@code -C}); these options cover commit outcomes and the job as a whole.
 */
public final class RuntimeOptions {
  @Option(names = "--stall-timeout", paramLabel = "DURATION", defaultValue = "PT10M",
      converter = DurationConverter.class,
      description = "Fail when the job makes no progress (no row read, no checkpoint written, no commit done) for "
          + "this long, naming the endpoint and the last error; completed checkpoints are kept and the same "
          + "command resumes (default: 10m).")
  Duration stallTimeout;

  @Option(names = "--commit-retries", paramLabel = "N",
      description = "Attempts of one checkpoint's commit on conflicts, catalog and metastore outages and unknown "
          + "outcomes (default: no limit of its own: --commit-retry-timeout bounds them, so an outage is ridden "
          + "through by time).")
  Integer commitAttempts;

  @Option(names = "--commit-retry-timeout", paramLabel = "DURATION", defaultValue = "PT5M",
      converter = DurationConverter.class,
      description = "Longest time spent on one checkpoint's commit with its retries: a catalog or metastore outage "
          + "(a restart) this long is ridden through; backoff doubles from 100ms to at most 10s with 20%% jitter "
          + "(default: 5m).")
  Duration commitRetryTimeout;

  @Option(names = "--max-uncommitted-checkpoints", paramLabel = "N", defaultValue = "0",
      description = "Pipelined commits: up to N checkpoints may be written and durable but not yet committed while "
          + "the job reads on; a committer thread commits them in order, and the job waits at a checkpoint while N "
          + "are uncommitted. 0 commits each checkpoint before reading on (default: ${DEFAULT-VALUE}). With a slow "
          + "catalog, 2 keeps reading at full speed while a commit takes up to two checkpoint intervals.")
  int maxUncommittedCheckpoints;

  @Option(names = "--max-records-per-second", paramLabel = "N",
      description = "Read no more than N records per second (a backfill that must not flood the catalog or the "
          + "store; up to one second's records in a burst after the input was idle). Default: no limit.")
  Double maxRecordsPerSecond;

  /** The job's input, paced when {@code --max-records-per-second} is given. */
  <T> CheckpointedSource<T> paced(CheckpointedSource<T> source) {
    return maxRecordsPerSecond == null ? source : RateLimitedSource.of(source, maxRecordsPerSecond);
  }

  /** Applies the options, and names what the job talks to (without credentials) for its failure messages. */
  <IN> StandaloneJob.Builder<IN> apply(StandaloneJob.Builder<IN> job, TableAccess table) {
    Map<String, String> properties = table.endpointProperties();
    check();
    return job.stallTimeout(stallTimeout)
        .maxUncommittedCheckpoints(maxUncommittedCheckpoints)
        .commitRetry(RetryPolicy.builder().maxAttempts(commitAttempts == null ? Integer.MAX_VALUE : commitAttempts)
            .totalTimeout(commitRetryTimeout).build())
        .endpoints(endpoints(properties))
        .errorProbe(StorageErrors::last);
  }

  /** Fails on option values out of range, naming the option. */
  void check() {
    if (commitAttempts != null && commitAttempts < 1) {
      throw new IllegalArgumentException("Invalid option --commit-retries: " + commitAttempts + " (must be >= 1)");
    }
    if (maxUncommittedCheckpoints < 0) {
      throw new IllegalArgumentException("Invalid option --max-uncommitted-checkpoints: " + maxUncommittedCheckpoints
          + " (must be >= 0)");
    }
    if (maxRecordsPerSecond != null) {
      try {
        RateLimitedSource.checkRate(maxRecordsPerSecond);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("Invalid option --max-records-per-second: " + e.getMessage(), e);
      }
    }
    if (stallTimeout.isNegative() || stallTimeout.isZero()) {
      throw new IllegalArgumentException("Invalid option --stall-timeout: " + stallTimeout + " (must be > 0)");
    }
    if (commitRetryTimeout.isNegative() || commitRetryTimeout.isZero()) {
      throw new IllegalArgumentException(
          "Invalid option --commit-retry-timeout: " + commitRetryTimeout + " (must be > 0)");
    }
  }

  /** The endpoints among catalog / Hadoop properties: catalog URI, metastore, storage endpoints, warehouse. */
  static String endpoints(Map<String, String> properties) {
    StringJoiner named = new StringJoiner(", ");
    properties.forEach((key, value) -> {
      String k = key.toLowerCase(Locale.ROOT);
      boolean endpoint = k.equals("uri") || k.equals("warehouse") || k.endsWith("endpoint")
          || k.equals("hive.metastore.uris");
      if (endpoint && !Redaction.isSecret(key) && value != null && !value.isBlank()) {
        named.add(key + "=" + Redaction.redactText(value));
      }
    });
    return named.length() == 0 ? "local" : named.toString();
  }

  /** One line on commit retries, when there were any. */
  static void report(PrintWriter out, JobResult result) {
    if (result.commitRetries() > 0) {
      out.printf("Commit retries: %d (%,d ms retrying)%n", result.commitRetries(),
          result.commitRetryNanos() / 1_000_000);
    }
  }
}
