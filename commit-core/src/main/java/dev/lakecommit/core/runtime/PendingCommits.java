package dev.lakecommit.core.runtime;

import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The book of a run's pending commits: every combined commit whose outcome is not final yet, by checkpoint id, as
 * the committer holds it, as the checkpoint record stores it, and with the source position it commits. A commit
 * leaves the book only when it is committed (or found committed); until then every checkpoint record carries it.
 * Thread-safe.
 *
 * @param <A> the sink's combined commit
 */
final class PendingCommits<A> {
  private final TreeMap<Long, A> commits = new TreeMap<>();
  private final TreeMap<Long, byte[]> bytes = new TreeMap<>();
  /** The source's commit position of each pending checkpoint that has one (CheckpointedSource#commitPosition). */
  private final TreeMap<Long, String> positions = new TreeMap<>();

  /** Adds the combined commit of a checkpoint (about to be persisted, or restored). */
  synchronized void add(long checkpointId, A committable, byte[] serialized, String commitPosition) {
    commits.put(checkpointId, committable);
    bytes.put(checkpointId, serialized);
    if (commitPosition != null) {
      positions.put(checkpointId, commitPosition);
    }
  }

  /** The pending commits for a checkpoint record. */
  synchronized NavigableMap<Long, byte[]> bytes() {
    return new TreeMap<>(bytes);
  }

  synchronized NavigableMap<Long, String> positions() {
    return new TreeMap<>(positions);
  }

  synchronized int size() {
    return commits.size();
  }

  /** The pending commits of checkpoints up to and including {@code lastId}, oldest first. */
  synchronized TreeMap<Long, A> due(long lastId) {
    return new TreeMap<>(commits.headMap(lastId, true));
  }

  /** Whether a commit of a checkpoint at or below {@code checkpointId} is still pending. */
  synchronized boolean anyAtOrBelow(long checkpointId) {
    return !commits.isEmpty() && commits.firstKey() <= checkpointId;
  }

  /** The source position the commit of {@code checkpointId} records, or null. */
  synchronized String position(long checkpointId) {
    return positions.get(checkpointId);
  }

  /** The commit of {@code checkpointId} is final. */
  synchronized void remove(long checkpointId) {
    commits.remove(checkpointId);
    bytes.remove(checkpointId);
    positions.remove(checkpointId);
  }
}
