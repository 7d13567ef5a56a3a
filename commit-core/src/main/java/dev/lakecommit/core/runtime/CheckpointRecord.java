package dev.lakecommit.core.runtime;

import dev.lakecommit.core.JobId;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.TreeMap;

/**
 * What one durable checkpoint holds: the source position, every writer's state, and the combined commits not yet
 * known to be committed (pending), keyed by checkpoint id. States and commits are stored as their serializers
 * wrote them, version included.
 *
 * @param jobId the job
 * @param checkpointId the checkpoint
 * @param attempt the attempt of the job that took it
 * @param recordCount records read from the source up to this checkpoint, over all attempts
 * @param sourcePosition where a restored reader resumes
 * @param writerStates one versioned state per writer, by writer index
 * @param pendingCommits versioned combined commits, by checkpoint id, oldest first
 * @param targetIdentity what the target was when the checkpoint was taken ({@code CommitTarget#identity}), empty
 *     if unknown: a restore against another identity stops
 * @param commitPositions the source position of each pending checkpoint in its text form ({@link
 *     CheckpointedSource#commitPosition}), set in the table with its commit; empty for sources that record none
 */
public record CheckpointRecord(
    JobId jobId,
    long checkpointId,
    int attempt,
    long recordCount,
    byte[] sourcePosition,
    List<byte[]> writerStates,
    NavigableMap<Long, byte[]> pendingCommits,
    String targetIdentity,
    NavigableMap<Long, String> commitPositions) {

  /** A checkpoint whose source records no commit positions. */
  public CheckpointRecord(JobId jobId, long checkpointId, int attempt, long recordCount, byte[] sourcePosition,
      List<byte[]> writerStates, NavigableMap<Long, byte[]> pendingCommits, String targetIdentity) {
    this(jobId, checkpointId, attempt, recordCount, sourcePosition, writerStates, pendingCommits, targetIdentity,
        new TreeMap<>());
  }

  /** A checkpoint that records no target identity. */
  public CheckpointRecord(JobId jobId, long checkpointId, int attempt, long recordCount, byte[] sourcePosition,
      List<byte[]> writerStates, NavigableMap<Long, byte[]> pendingCommits) {
    this(jobId, checkpointId, attempt, recordCount, sourcePosition, writerStates, pendingCommits, "");
  }

  public CheckpointRecord {
    Objects.requireNonNull(jobId, "jobId");
    Objects.requireNonNull(targetIdentity, "targetIdentity");
    Objects.requireNonNull(sourcePosition, "sourcePosition");
    writerStates = List.copyOf(writerStates);
    pendingCommits = Collections.unmodifiableNavigableMap(new TreeMap<>(pendingCommits));
    commitPositions = Collections.unmodifiableNavigableMap(new TreeMap<>(commitPositions));
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof CheckpointRecord other)) {
      return false;
    }
    if (writerStates.size() != other.writerStates.size()
        || !pendingCommits.keySet().equals(other.pendingCommits.keySet())) {
      return false;
    }
    for (int i = 0; i < writerStates.size(); i++) {
      if (!Arrays.equals(writerStates.get(i), other.writerStates.get(i))) {
        return false;
      }
    }
    for (var entry : pendingCommits.entrySet()) {
      if (!Arrays.equals(entry.getValue(), other.pendingCommits.get(entry.getKey()))) {
        return false;
      }
    }
    return jobId.equals(other.jobId)
        && checkpointId == other.checkpointId
        && attempt == other.attempt
        && recordCount == other.recordCount
        && targetIdentity.equals(other.targetIdentity)
        && commitPositions.equals(other.commitPositions)
        && Arrays.equals(sourcePosition, other.sourcePosition);
  }

  @Override
  public int hashCode() {
    return Objects.hash(jobId, checkpointId, attempt, recordCount, Arrays.hashCode(sourcePosition),
        writerStates.size(), pendingCommits.keySet());
  }

  @Override
  public String toString() {
    return "CheckpointRecord{job=" + jobId + ", checkpoint=" + checkpointId + ", attempt=" + attempt
        + ", records=" + recordCount + ", writers=" + writerStates.size() + ", pending="
        + pendingCommits.keySet() + "}";
  }
}
