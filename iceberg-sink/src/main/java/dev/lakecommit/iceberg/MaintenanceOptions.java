package dev.lakecommit.iceberg;

import java.io.Serializable;
import java.time.Duration;
import java.util.Optional;

/**
 * What one maintenance round does ({@link IcebergMaintenance#round}): compaction of the files older than the
 * newest {@code keepCheckpoints} checkpoint commits, the manifest rewrite, and optionally snapshot expiry and
 * orphan removal, all under the table's {@link MaintenanceLock}. Serializable, so that it travels in a Flink job
 * graph.
 *
 * @param keepCheckpoints files of the newest this many checkpoint commits are not compacted; 0 turns compaction off
 * @param minSmallManifests manifests are rewritten once there are this many small ones, or once one lists deleted
 *     files (as a compaction's commit leaves them); 0 turns the rewrite off
 * @param retainLast snapshots kept by expiry beyond those younger than {@code expireOlderThan}; 0: no expiry
 * @param expireOlderThan only snapshots older than this are expired
 * @param orphanAge orphan files older than this are removed; null: no orphan removal
 * @param leaseDuration how long the round's lease lasts between renewals (longer than any one step)
 */
public record MaintenanceOptions(int keepCheckpoints, int minSmallManifests, int retainLast,
    Duration expireOlderThan, Duration orphanAge, Duration leaseDuration) implements Serializable {

  public MaintenanceOptions {
    check(keepCheckpoints >= 0, "keep checkpoints", keepCheckpoints, ">= 0");
    check(minSmallManifests == 0 || minSmallManifests >= 2, "min small manifests", minSmallManifests,
        "0 or >= 2");
    check(retainLast >= 0, "snapshots to retain", retainLast, ">= 0");
    check(!expireOlderThan.isNegative(), "expire older than", expireOlderThan, ">= 0");
    check(orphanAge == null || !orphanAge.isNegative(), "orphan age", orphanAge, ">= 0");
    check(!leaseDuration.isNegative() && !leaseDuration.isZero(), "lease duration", leaseDuration, "> 0");
  }

  private static void check(boolean valid, String what, Object value, String must) {
    if (!valid) {
      throw new IllegalArgumentException(String.format("Invalid %s: %s (must be %s)", what, value, must));
    }
  }

  /** Compaction (newest 10 checkpoints kept), manifest rewrite; no expiry, no orphan removal; 10-minute lease. */
  public static Builder builder() {
    return new Builder();
  }

  public Optional<Duration> orphanRemoval() {
    return Optional.ofNullable(orphanAge);
  }

  /** Builder; every setter checks its value at {@link #build}. */
  public static final class Builder {
    private int keepCheckpoints = IcebergMaintenance.DEFAULT_KEEP_CHECKPOINTS;
    private int minSmallManifests = IcebergMaintenance.DEFAULT_MIN_SMALL_MANIFESTS;
    private int retainLast;
    private Duration expireOlderThan = Duration.ZERO;
    private Duration orphanAge;
    private Duration leaseDuration = MaintenanceLock.DEFAULT_DURATION;

    private Builder() {}

    /** Leaves the files of the newest N checkpoint commits alone (default 10); 0 turns compaction off. */
    public Builder keepCheckpoints(int n) {
      this.keepCheckpoints = n;
      return this;
    }

    /** Rewrites small manifests once there are N (default 10); 0 turns the rewrite off. */
    public Builder minSmallManifests(int n) {
      this.minSmallManifests = n;
      return this;
    }

    /**
     * Expires snapshots older than {@code olderThan} beyond the newest {@code retainLast} of each branch; a job's
     * watermark and the history its restart needs are kept (see {@link SnapshotExpiry}).
     */
    public Builder expire(int retainLast, Duration olderThan) {
      this.retainLast = retainLast;
      this.expireOlderThan = olderThan;
      return this;
    }

    /** Removes orphan files older than {@code age} (see {@link OrphanFiles}); off by default. */
    public Builder removeOrphans(Duration age) {
      this.orphanAge = age;
      return this;
    }

    /** How long a round's lease lasts between renewals (default 10 minutes). */
    public Builder leaseDuration(Duration duration) {
      this.leaseDuration = duration;
      return this;
    }

    public MaintenanceOptions build() {
      return new MaintenanceOptions(keepCheckpoints, minSmallManifests, retainLast, expireOlderThan, orphanAge,
          leaseDuration);
    }
  }
}
