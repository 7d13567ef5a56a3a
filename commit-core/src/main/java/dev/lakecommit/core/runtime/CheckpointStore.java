package dev.lakecommit.core.runtime;

import dev.lakecommit.core.JobId;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Durable checkpoints of one job in a {@link BlobStore}: one new object per checkpoint ({@code
 * checkpoint-<id>.ckpt}), never overwritten, checksummed; the newest few are kept. Also counts the job's attempts
 * ({@code attempt-<n>} markers), so that every start of a job stages under names no earlier start used.
 */
public final class CheckpointStore {
  private static final Logger LOG = LoggerFactory.getLogger(CheckpointStore.class);
  private static final String CHECKPOINT_PREFIX = "checkpoint-";
  private static final String CHECKPOINT_SUFFIX = ".ckpt";
  private static final String ATTEMPT_PREFIX = "attempt-";

  private final BlobStore blobs;
  private final int retained;

  /**
   * @param retained how many of the newest checkpoints to keep (at least 2, so a corrupt newest one has a
   *     predecessor)
   */
  public CheckpointStore(BlobStore blobs, int retained) {
    this.blobs = Objects.requireNonNull(blobs, "blobs");
    if (retained < 2) {
      throw new IllegalArgumentException(
          String.format("Invalid checkpoint retention: %s (must be >= 2)", retained));
    }
    this.retained = retained;
  }

  public CheckpointStore(BlobStore blobs) {
    this(blobs, 3);
  }

  public String location() {
    return blobs.location();
  }

  /** Registers a new start of the job and returns its attempt number: 0 for the first start, then 1, 2, ... */
  public int startAttempt() throws IOException {
    List<Long> attempts = ids(ATTEMPT_PREFIX, "");
    int next = attempts.isEmpty() ? 0 : Math.toIntExact(attempts.get(0) + 1);
    try {
      blobs.publish(attemptName(next), new byte[0]);
    } catch (FileAlreadyExistsException e) {
      throw new IOException(
          "Another start of this job registered attempt " + next + " in " + blobs.location()
              + " at the same time; is the job running twice?", e);
    }
    for (int i = 3; i < attempts.size(); i++) {
      blobs.delete(attemptName(attempts.get(i)));
    }
    return next;
  }

  /** Persists a checkpoint durably, then prunes checkpoints older than the retained ones. */
  public void persist(CheckpointRecord record) throws IOException {
    blobs.publish(checkpointName(record.checkpointId()), CheckpointFormat.encode(record));
    List<Long> ids = checkpointIds();
    for (int i = retained; i < ids.size(); i++) {
      try {
        blobs.delete(checkpointName(ids.get(i)));
      } catch (IOException e) {
        LOG.warn("Could not delete old checkpoint {} in {}: {}", ids.get(i), blobs.location(), e.toString());
      }
    }
  }

  /** Ids of the stored checkpoint files, newest first, whether or not they are readable. */
  public List<Long> checkpointIds() throws IOException {
    return ids(CHECKPOINT_PREFIX, CHECKPOINT_SUFFIX);
  }

  /**
   * Reads one checkpoint and checks that it belongs to the job.
   *
   * @throws CorruptCheckpointException if the file fails its checksum or is of another job; names the file
   */
  public CheckpointRecord load(JobId jobId, long checkpointId) throws IOException {
    String name = checkpointName(checkpointId);
    CheckpointRecord record = CheckpointFormat.decode(describe(checkpointId), blobs.read(name));
    if (!record.jobId().equals(jobId) || record.checkpointId() != checkpointId) {
      throw new CorruptCheckpointException(
          describe(checkpointId),
          "holds checkpoint " + record.checkpointId() + " of job " + record.jobId() + ", expected job " + jobId);
    }
    return record;
  }

  /** The file of a checkpoint, for messages. */
  public String describe(long checkpointId) {
    return blobs.location() + "/" + checkpointName(checkpointId);
  }

  static String checkpointName(long checkpointId) {
    return String.format("%s%020d%s", CHECKPOINT_PREFIX, checkpointId, CHECKPOINT_SUFFIX);
  }

  private static String attemptName(long attempt) {
    return String.format("%s%010d", ATTEMPT_PREFIX, attempt);
  }

  private List<Long> ids(String prefix, String suffix) throws IOException {
    List<Long> ids = new ArrayList<>();
    for (String name : blobs.list()) {
      if (name.startsWith(prefix) && name.endsWith(suffix)) {
        String digits = name.substring(prefix.length(), name.length() - suffix.length());
        if (!digits.isEmpty() && digits.chars().allMatch(Character::isDigit)) {
          ids.add(Long.parseLong(digits));
        }
      }
    }
    ids.sort(Comparator.reverseOrder());
    return ids;
  }
}
