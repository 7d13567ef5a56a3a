package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import java.util.concurrent.atomic.AtomicLong;

/** {@link CommitMetrics} as running totals, plus the time of the last commit (for the lag since it). */
public final class CommitCounters implements CommitMetrics {
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong skipped = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong attempts = new AtomicLong();
  private final AtomicLong conflicts = new AtomicLong();
  private final AtomicLong files = new AtomicLong();
  private final AtomicLong records = new AtomicLong();
  private final AtomicLong bytes = new AtomicLong();
  private final AtomicLong commitNanos = new AtomicLong();
  private final AtomicLong lastCommitMillis = new AtomicLong();
  private final AtomicLong lastCheckpoint = new AtomicLong();

  @Override
  public void committed(CommitId id, long snapshotId, long durationNanos, int attemptCount, int conflictCount,
      int fileCount, long recordCount, long byteCount) {
    commits.incrementAndGet();
    attempts.addAndGet(attemptCount);
    conflicts.addAndGet(conflictCount);
    files.addAndGet(fileCount);
    records.addAndGet(recordCount);
    bytes.addAndGet(byteCount);
    commitNanos.addAndGet(durationNanos);
    lastCommitMillis.set(System.currentTimeMillis());
    lastCheckpoint.accumulateAndGet(id.checkpointId(), Math::max);
  }

  @Override
  public void skipped(CommitId id, String where, int conflictCount) {
    skipped.incrementAndGet();
    conflicts.addAndGet(conflictCount);
    lastCheckpoint.accumulateAndGet(id.checkpointId(), Math::max);
  }

  @Override
  public void failed(CommitId id, Throwable cause, boolean settledByReadBack) {
    failures.incrementAndGet();
  }

  public long commits() {
    return commits.get();
  }

  public long skipped() {
    return skipped.get();
  }

  public long failures() {
    return failures.get();
  }

  public long attempts() {
    return attempts.get();
  }

  public long conflicts() {
    return conflicts.get();
  }

  public long files() {
    return files.get();
  }

  public long records() {
    return records.get();
  }

  public long bytes() {
    return bytes.get();
  }

  public long commitNanos() {
    return commitNanos.get();
  }

  public long lastCheckpoint() {
    return lastCheckpoint.get();
  }

  /** Milliseconds since the last commit, or -1 before the first. */
  public long lagMillis() {
    long last = lastCommitMillis.get();
    return last == 0 ? -1 : System.currentTimeMillis() - last;
  }
}
