package dev.lakecommit.core;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The stable identity of a job across restarts. Together with a checkpoint id it keys every commit: a table
 * records the checkpoints of each job it has committed, so a replay of the same (job, checkpoint) is skipped.
 *
 * <p>The value is embedded in file names, object keys and table property keys, so it is restricted to
 * {@code [A-Za-z0-9][A-Za-z0-9._-]*}, at most 128 characters.
 */
public final class JobId implements Comparable<JobId> {
  private static final Pattern VALID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

  private final String value;

  private JobId(String value) {
    this.value = value;
  }

  /**
   * @throws IllegalArgumentException if the value is not a valid job id; the message says what is allowed
   */
  public static JobId of(String value) {
    Objects.requireNonNull(value, "Invalid job id: null");
    if (!VALID.matcher(value).matches()) {
      throw new IllegalArgumentException(
          String.format(
              "Invalid job id: '%s' (use 1-128 characters of [A-Za-z0-9._-], starting with a letter or digit)",
              value));
    }
    return new JobId(value);
  }

  public String value() {
    return value;
  }

  @Override
  public int compareTo(JobId other) {
    return value.compareTo(other.value);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof JobId other && value.equals(other.value);
  }

  @Override
  public int hashCode() {
    return value.hashCode();
  }

  @Override
  public String toString() {
    return value;
  }
}
