package dev.lakecommit.core;

import java.util.Objects;

/**
 * One run's claim on a job in a target: a number that only grows per job, taken with a compare-and-swap in the
 * target itself (DESIGN.md rule 10), and a description of the run that took it (host, process, start time) so that
 * a fenced run can name the run that fenced it. Staged file names carry the epoch, so no two runs share a name.
 *
 * @param epoch the claim, {@code >= 1}
 * @param run who claimed it, for messages; never holds credentials
 */
public record RunEpoch(long epoch, String run) {
  /** Prefix of the per-job epoch property (Iceberg) or parameter (Hive): {@code lakecommit.epoch.<job-id>}. */
  public static final String EPOCH_KEY_PREFIX = "lakecommit.epoch.";

  public RunEpoch {
    if (epoch < 1) {
      throw new IllegalArgumentException(String.format("Invalid run epoch: %s (must be >= 1)", epoch));
    }
    Objects.requireNonNull(run, "run");
  }

  /** The table property or parameter that holds the job's current epoch. */
  public static String key(JobId jobId) {
    return EPOCH_KEY_PREFIX + jobId.value();
  }

  /** The stored form: {@code <epoch> <run>}. */
  public String value() {
    return run.isEmpty() ? Long.toString(epoch) : epoch + " " + run;
  }

  /**
   * Parses a stored value ({@code <epoch>[ <run>]}).
   *
   * @throws IllegalStateException naming the key if the value does not start with an epoch number
   */
  public static RunEpoch parse(JobId jobId, String value) {
    String trimmed = value.trim();
    int space = trimmed.indexOf(' ');
    String number = space < 0 ? trimmed : trimmed.substring(0, space);
    try {
      return new RunEpoch(Long.parseLong(number), space < 0 ? "" : trimmed.substring(space + 1));
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException(
          String.format("Corrupt run epoch %s=%s: not an epoch number", key(jobId), value), e);
    }
  }

  /** A description of this process, for {@link #run}: {@code pid 1234 on host at 2026-12-01T02:10:00Z}. */
  public static String thisProcess() {
    String host;
    try {
      host = java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException e) {
      host = "unknown host";
    }
    return "pid " + ProcessHandle.current().pid() + " on " + host + " at " + java.time.Instant.now();
  }

  @Override
  public String toString() {
    return "epoch " + epoch + (run.isEmpty() ? "" : " (" + run + ")");
  }
}
