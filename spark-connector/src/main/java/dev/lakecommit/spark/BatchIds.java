package dev.lakecommit.spark;

import dev.lakecommit.core.JobId;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * How the micro-batch ids of the streaming queries that write as one pinned job map onto the job's core checkpoint
 * ids. Spark numbers a query's batches from 0 per checkpoint location; the core needs one id sequence per job that
 * only grows. So each query run continues a <em>segment</em>: {@code checkpoint = base + batch + 1}, where a query
 * keeps its segment across restarts on the same checkpoint location (a replayed batch maps to the same checkpoint,
 * which the table finds committed), and a query the table's segment does not name starts a new one whose first
 * checkpoint is just above what the table holds for the job (nothing of it is taken for committed).
 *
 * <p>The table holds the segment under {@link #key}, written in the transaction of each commit of the run, so it
 * is in the table exactly when a commit of it is. With it, the last batch each earlier query committed (newest first,
 * at most {@value #HISTORY}): an earlier query that comes back (its old checkpoint location restarted) skips the
 * batches it committed and starts a new segment above the table for the rest. Stored form, version 1:
 * {@code 1 <query>:<first batch>:<base>[ <query>:<last batch>]...}.
 *
 * <p>Immutable.
 */
final class BatchIds {
  /** The table property of a job's segment: {@code lakecommit.spark.batches.<job-id>}. */
  static final String KEY_PREFIX = "lakecommit.spark.batches.";
  /** The query id of batches written outside a streaming query (the function called directly). */
  static final String NO_QUERY = "-";
  static final int HISTORY = 16;
  private static final int VERSION = 1;

  /** Batches {@code >= firstBatch} of {@code queryId} are checkpoints {@code base + batch + 1}. */
  record Segment(String queryId, long firstBatch, long base) {}

  /** An earlier query of the job: its batches up to {@code lastBatch} are in the table (or were never written). */
  record Finished(String queryId, long lastBatch) {}

  private final Segment current;
  private final List<Finished> history;

  private BatchIds(Segment current, List<Finished> history) {
    this.current = current;
    this.history = List.copyOf(history);
  }

  /** The mapping of a job that belongs to one query alone (the job id is the query's): checkpoint = batch + 1. */
  static BatchIds ofOwnQuery(String queryId) {
    return new BatchIds(new Segment(checkQuery(queryId), 0, 0), List.of());
  }

  static String key(JobId jobId) {
    return KEY_PREFIX + jobId.value();
  }

  /**
   * The mapping for a run of {@code queryId} whose first micro-batch is {@code firstBatch}, given what the table
   * holds for the job: its stored segment, if any, and its last committed checkpoint. The stored segment's own query
   * keeps it; any other query gets a new segment above {@code committed}, and the stored one becomes history.
   */
  static BatchIds forRun(Optional<BatchIds> stored, String queryId, long firstBatch, OptionalLong committed) {
    checkQuery(queryId);
    if (firstBatch < 0) {
      throw new IllegalArgumentException(String.format("Invalid batch id: %s (must be >= 0)", firstBatch));
    }
    if (stored.isPresent() && stored.get().current.queryId().equals(queryId)) {
      return stored.get();
    }
    long watermark = committed.orElse(0);
    long start = firstBatch;
    List<Finished> history = new ArrayList<>();
    if (stored.isPresent()) {
      Segment previous = stored.get().current;
      // The table's watermark is the previous segment's last commit, or that segment committed nothing.
      history.add(new Finished(previous.queryId(),
          Math.max(previous.firstBatch() - 1, watermark - previous.base() - 1)));
      for (Finished finished : stored.get().history) {
        if (finished.queryId().equals(queryId)) {
          start = Math.max(start, finished.lastBatch() + 1);
        } else if (history.size() < HISTORY) {
          history.add(finished);
        }
      }
    }
    return new BatchIds(new Segment(queryId, start, Math.max(0, watermark - start)), history);
  }

  /**
   * The checkpoint of a micro-batch of this segment's query, or empty if the batch is below the segment: an earlier
   * run of the query committed it (or it was never written under this job), and it must be skipped.
   */
  OptionalLong checkpointOf(long batchId) {
    if (batchId < current.firstBatch()) {
      return OptionalLong.empty();
    }
    return OptionalLong.of(Math.addExact(current.base(), batchId + 1));
  }

  Segment current() {
    return current;
  }

  List<Finished> history() {
    return history;
  }

  /** The stored form (see the class comment). */
  String value() {
    StringBuilder out = new StringBuilder().append(VERSION).append(' ').append(current.queryId()).append(':')
        .append(current.firstBatch()).append(':').append(current.base());
    for (Finished finished : history) {
      out.append(' ').append(finished.queryId()).append(':').append(finished.lastBatch());
    }
    return out.toString();
  }

  /**
   * Parses a stored value.
   *
   * @throws IllegalStateException naming the key if the value is not of a known version or is corrupt
   */
  static BatchIds parse(JobId jobId, String value) {
    String[] parts = value.trim().split(" ");
    if (!parts[0].equals(Integer.toString(VERSION))) {
      throw new IllegalStateException(String.format("Unknown version %s of %s=%s (this version reads %s); written"
          + " by a newer Lakecommit?", parts[0], key(jobId), value, VERSION));
    }
    try {
      String[] segment = parts[1].split(":");
      if (segment.length != 3) {
        throw new IllegalArgumentException("segment " + parts[1]);
      }
      List<Finished> history = new ArrayList<>();
      for (int i = 2; i < parts.length; i++) {
        String[] finished = parts[i].split(":");
        if (finished.length != 2) {
          throw new IllegalArgumentException("entry " + parts[i]);
        }
        history.add(new Finished(finished[0], Long.parseLong(finished[1])));
      }
      return new BatchIds(new Segment(segment[0], Long.parseLong(segment[1]), Long.parseLong(segment[2])),
          history);
    } catch (RuntimeException e) {
      throw new IllegalStateException(String.format("Corrupt %s=%s: %s", key(jobId), value, e.getMessage()), e);
    }
  }

  private static String checkQuery(String queryId) {
    Objects.requireNonNull(queryId, "queryId");
    if (queryId.isEmpty() || queryId.contains(":") || queryId.chars().anyMatch(Character::isWhitespace)) {
      throw new IllegalArgumentException(String.format("Invalid query id: '%s' (must be non-empty, no ':' or"
          + " spaces)", queryId));
    }
    return queryId;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof BatchIds other && current.equals(other.current) && history.equals(other.history);
  }

  @Override
  public int hashCode() {
    return Objects.hash(current, history);
  }

  @Override
  public String toString() {
    return "segment " + current + ", earlier queries " + history;
  }
}
