package dev.lakecommit.core.runtime;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.TargetRun;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.NavigableMap;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When a run's pending commits ({@link PendingCommits}) are made: each by {@link CommitAttempts}, oldest first,
 * on the coordinator's thread or on a committer thread of its own.
 *
 * <p>Synchronous (at most 0 uncommitted checkpoints): {@link #persisted} commits on the calling thread before it
 * returns, so reading waits for every commit. Pipelined (at most K ≥ 1): one committer thread commits the
 * persisted checkpoints while the coordinator reads and writes the next ones; {@link #awaitRoom} holds the
 * coordinator at a checkpoint while K persisted checkpoints are not yet committed, and a failed commit is thrown
 * to the coordinator at its next record or checkpoint. Either way only checkpoints that are durable are ever
 * committed (persist before commit), commits run one at a time in checkpoint order, and every pending commit stays
 * in the checkpoint records until its outcome is final, so a restore commits it again (idempotently) if a crash
 * cut it short.
 */
final class CheckpointCommitter<A> implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CheckpointCommitter.class);

  private record Persisted(long checkpointId, long recordCount) {}

  private final StandaloneJob<?> job;
  private final JobId jobId;
  private final StallWatchdog watchdog;
  private final JobListener listener;
  private final PendingCommits<A> pending = new PendingCommits<>();
  private final CommitAttempts<A> attempts;
  private final int maxUncommitted;
  /** How long a stalled run waits for its interrupted committer thread before it goes on without it. */
  private final long stopTimeoutMillis;

  /** Guards the queue of persisted checkpoints and the committer thread's state. */
  private final Object lock = new Object();
  /** Held by whoever commits: commits never overlap, so they land in checkpoint order. */
  private final Object commitLock = new Object();
  /** Persisted checkpoints whose commits (of them and everything before) are not all done, oldest first. */
  private final Deque<Persisted> uncommitted = new ArrayDeque<>();
  private Thread thread;
  private boolean stopping;
  /**
   * The run gave up waiting for the committer thread (a call that ignores interrupts) and closes the sink's
   * committer and target: the thread starts no further call on them, and tells nobody of what it finishes.
   */
  private boolean abandoned;
  private volatile Throwable failure;

  CheckpointCommitter(StandaloneJob<?> job, CommitPath<?, A> path, TargetRun run, StallWatchdog watchdog) {
    this.job = job;
    this.jobId = job.jobId;
    this.watchdog = watchdog;
    this.maxUncommitted = job.maxUncommittedCheckpoints;
    this.stopTimeoutMillis = job.committerStopTimeout.toMillis();
    // Listener steps come from two threads when pipelined; a listener sees them one at a time.
    this.listener = maxUncommitted == 0 ? job.listener : new SerializedListener(job.listener);
    this.attempts = new CommitAttempts<>(job, path, run, pending, watchdog, listener, this::checkNotAbandoned);
  }

  JobListener listener() {
    return listener;
  }

  boolean pipelined() {
    return maxUncommitted > 0;
  }

  /** Adds the combined commit of a checkpoint that is about to be persisted. */
  void add(long checkpointId, A committable, byte[] bytes, String commitPosition) {
    pending.add(checkpointId, committable, bytes, commitPosition);
  }

  /** The pending commits for a checkpoint record: every commit whose outcome is not final yet. */
  NavigableMap<Long, byte[]> pendingBytes() {
    return pending.bytes();
  }

  NavigableMap<Long, String> pendingPositions() {
    return pending.positions();
  }

  int pendingCount() {
    return pending.size();
  }

  /** Starts the committer thread of a pipelined run (after the restored pending commits are done). */
  void start() {
    if (!pipelined()) {
      return;
    }
    thread = new Thread(this::commitLoop, "lakecommit-committer-" + jobId.value());
    thread.setDaemon(true);
    thread.start();
  }

  /**
   * Waits, pipelined, until fewer than K persisted checkpoints wait for their commits, so that the next checkpoint
   * keeps the bound; throws a commit's failure. Tells the listener when it has to wait.
   */
  void awaitRoom(long nextCheckpointId) throws InterruptedException {
    if (!pipelined()) {
      return;
    }
    synchronized (lock) {
      rethrowFailure();
      if (uncommitted.size() < maxUncommitted) {
        return;
      }
    }
    listener.onWaitingForCommits(nextCheckpointId, maxUncommitted);
    watchdog.phase("waiting before checkpoint " + nextCheckpointId + ": " + maxUncommitted
        + " persisted checkpoint(s) wait for their commits");
    synchronized (lock) {
      while (uncommitted.size() >= maxUncommitted && failure == null) {
        lock.wait();
      }
      rethrowFailure();
    }
  }

  /** Whether persisted checkpoints wait for their commits (never, synchronous). */
  boolean waiting() {
    if (!pipelined()) {
      return false;
    }
    synchronized (lock) {
      return !uncommitted.isEmpty();
    }
  }

  /** Throws a failure of the committer thread (cheap: called per record). */
  void checkFailed() throws InterruptedException {
    if (failure != null) {
      synchronized (lock) {
        rethrowFailure();
      }
    }
  }

  /**
   * The checkpoint is durable: its pending commits may be made. Synchronous, they are made now; pipelined, the
   * committer thread makes them.
   */
  void persisted(long checkpointId, long recordCount) throws InterruptedException {
    if (!pipelined()) {
      commitUpTo(checkpointId);
      listener.onCheckpointComplete(checkpointId, recordCount);
      return;
    }
    synchronized (lock) {
      rethrowFailure();
      uncommitted.addLast(new Persisted(checkpointId, recordCount));
      lock.notifyAll();
    }
  }

  /** Commits every pending checkpoint up to and including this one on the calling thread. */
  void commitNow(long checkpointId) throws InterruptedException {
    commitUpTo(checkpointId);
  }

  /** Waits until every persisted checkpoint is committed (end of input, a stop); throws a commit's failure. */
  void drain() throws InterruptedException {
    if (!pipelined()) {
      return;
    }
    synchronized (lock) {
      while (!uncommitted.isEmpty() && failure == null) {
        lock.wait();
      }
      rethrowFailure();
    }
  }

  /**
   * Stops the committer thread after the commit it is making, if any; commits nothing more. A stalled run's
   * thread was interrupted by the watchdog and is waited for at most the stop timeout (30 s), also when the
   * watchdog interrupts this wait (a commit that hangs while a failed run cleans up). A thread still running then
   * is abandoned: the run closes the sink's committer and target, so the thread starts no further call on them
   * (no retry, no lookup) and reports nothing; the commit it was making stays pending in the checkpoint records,
   * and the next run settles it.
   *
   * @throws InterruptedException if the wait was interrupted; the thread was waited for or abandoned even so
   */
  @Override
  public void close() throws InterruptedException {
    Thread running;
    synchronized (lock) {
      stopping = true;
      lock.notifyAll();
      running = thread;
    }
    if (running == null) {
      return;
    }
    InterruptedException interrupted = null;
    try {
      if (watchdog.stalled()) {
        running.join(stopTimeoutMillis);
      } else {
        running.join();
      }
    } catch (InterruptedException e) {
      // The watchdog interrupted the committer too; it gets the time a stalled run gives it to end.
      interrupted = e;
      running.join(stopTimeoutMillis);
    }
    if (running.isAlive()) {
      synchronized (lock) {
        abandoned = true;
      }
      LOG.warn("The committer of job {} did not stop within {} ms of being interrupted (a call that ignores"
          + " interrupts); it makes no further call, and the commit it was making is settled by the next run",
          jobId, stopTimeoutMillis);
    }
    if (interrupted != null) {
      throw interrupted;
    }
  }

  /** Throws if the run abandoned this committer: nothing may call the closed committer or target any more. */
  private void checkNotAbandoned(long checkpointId) {
    synchronized (lock) {
      if (abandoned) {
        throw new IllegalStateException("The committer of job " + jobId + " was abandoned by its run (stalled);"
            + " the commit of checkpoint " + checkpointId + " is left to the next run");
      }
    }
  }

  /** Interrupts the committer thread (a stalled job), without waiting for it. */
  void interrupt() {
    Thread running;
    synchronized (lock) {
      running = thread;
    }
    if (running != null) {
      running.interrupt();
    }
  }

  int commits() {
    return attempts.commits();
  }

  int skippedCommits() {
    return attempts.skippedCommits();
  }

  int commitRetries() {
    return attempts.commitRetries();
  }

  long commitRetryNanos() {
    return attempts.commitRetryNanos();
  }

  private void rethrowFailure() throws InterruptedException {
    Throwable t = failure;
    if (t == null) {
      return;
    }
    if (t instanceof Error error) {
      throw error;
    }
    if (t instanceof RuntimeException runtime) {
      throw runtime;
    }
    if (t instanceof InterruptedException) {
      InterruptedException interrupted = new InterruptedException("The committer of job " + jobId
          + " was interrupted");
      interrupted.initCause(t);
      throw interrupted;
    }
    throw new JobFailedException("The committer of job " + jobId + " failed: " + t, t);
  }

  /**
   * The committer thread: one commit at a time of what is persisted, oldest first. With a backlog (commits slower
   * than checkpoints) every persisted checkpoint is due at once, so a committer that coalesces (e.g. Iceberg's
   * {@code coalescePendingAppends}) catches up in one commit; checkpoints not yet persisted are never due.
   */
  private void commitLoop() {
    try {
      while (true) {
        long newestPersisted;
        synchronized (lock) {
          while (uncommitted.isEmpty() && !stopping) {
            lock.wait();
          }
          if (stopping) {
            return;
          }
          newestPersisted = uncommitted.peekLast().checkpointId();
        }
        synchronized (commitLock) {
          TreeMap<Long, A> due = due(newestPersisted);
          if (!due.isEmpty()) {
            attempts.commitNext(due);
          }
        }
        completeCommitted();
      }
    } catch (Throwable t) {
      synchronized (lock) {
        failure = t;
        lock.notifyAll();
      }
      if (!(t instanceof Error)) {
        LOG.debug("The committer of job {} failed", jobId, t);
      }
    }
  }

  /** Completes, oldest first, every persisted checkpoint with no pending commit at or below it. */
  private void completeCommitted() {
    while (true) {
      Persisted first;
      synchronized (lock) {
        first = uncommitted.peekFirst();
        if (abandoned || first == null || pending.anyAtOrBelow(first.checkpointId())) {
          return;
        }
      }
      listener.onCheckpointComplete(first.checkpointId(), first.recordCount());
      synchronized (lock) {
        uncommitted.removeFirst();
        lock.notifyAll();
      }
    }
  }

  private TreeMap<Long, A> due(long lastId) {
    return pending.due(lastId);
  }

  /** Commits every pending checkpoint up to {@code lastId} on the calling thread, oldest first. */
  private void commitUpTo(long lastId) throws InterruptedException {
    synchronized (commitLock) {
      for (TreeMap<Long, A> due = due(lastId); !due.isEmpty(); due = due(lastId)) {
        attempts.commitNext(due);
      }
    }
  }

  /** Passes the steps of two threads (coordinator and committer) to a listener one at a time. */
  private static final class SerializedListener implements JobListener {
    private final JobListener delegate;

    SerializedListener(JobListener delegate) {
      this.delegate = delegate;
    }

    @Override
    public synchronized void onStart(int attempt, long restoredCheckpointId, long recordCount) {
      delegate.onStart(attempt, restoredCheckpointId, recordCount);
    }

    @Override
    public synchronized void onCheckpointPrepared(long checkpointId) {
      delegate.onCheckpointPrepared(checkpointId);
    }

    @Override
    public synchronized void onCheckpointPersisted(long checkpointId) {
      delegate.onCheckpointPersisted(checkpointId);
    }

    @Override
    public synchronized void onCommitted(long checkpointId, CommitOutcome outcome, long durationNanos) {
      delegate.onCommitted(checkpointId, outcome, durationNanos);
    }

    @Override
    public synchronized void onCommitAttemptFailed(long checkpointId, int attempt, Throwable cause) {
      delegate.onCommitAttemptFailed(checkpointId, attempt, cause);
    }

    @Override
    public synchronized void onCheckpointComplete(long checkpointId, long recordCount) {
      delegate.onCheckpointComplete(checkpointId, recordCount);
    }

    @Override
    public synchronized void onWaitingForCommits(long nextCheckpointId, int uncommitted) {
      delegate.onWaitingForCommits(nextCheckpointId, uncommitted);
    }
  }
}
