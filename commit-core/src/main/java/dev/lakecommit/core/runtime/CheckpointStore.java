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
 * Durable checkpoints of one job in a {@link BlobStore}: one new object per checkpoint and run epoch ({@code
 * checkpoint-<id>-e<epoch>.ckpt}; {@code checkpoint-<id>.ckpt} from older versions), never overwritten,
 * checksummed; the newest few are kept. Also counts the job's attempts ({@code attempt-<n>} markers), and records
 * where each run epoch started ({@code epoch-<n>} markers, DESIGN.md rule 10): a checkpoint that an older run
 * persisted above the checkpoint a newer run started from was written by a fenced run, and is never restored.
 */
public final class CheckpointStore {
  private static final Logger LOG = LoggerFactory.getLogger(CheckpointStore.class);
  private static final String CHECKPOINT_PREFIX = "checkpoint-";
  private static final String CHECKPOINT_SUFFIX = ".ckpt";
  private static final String ATTEMPT_PREFIX = "attempt-";
  private static final String EPOCH_PREFIX = "epoch-";
  private static final String RUN_PREFIX = "run-";
  private static final String RUN_SUFFIX = ".json";

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

  /**
   * Publishes what a run says of itself for {@code status} before it has committed anything (where it started
   * reading, where its metrics are): one object per start, named by its time; the newest three are kept.
   */
  public void publishRunInfo(byte[] info) throws IOException {
    String name = String.format("%s%020d-%d%s", RUN_PREFIX, System.currentTimeMillis(),
        ProcessHandle.current().pid(), RUN_SUFFIX);
    blobs.publish(name, info);
    List<String> runs = runInfoNames();
    for (int i = 3; i < runs.size(); i++) {
      blobs.delete(runs.get(i));
    }
  }

  /** What the newest run published with {@link #publishRunInfo}, if any. */
  public java.util.Optional<byte[]> latestRunInfo() throws IOException {
    for (String name : runInfoNames()) {
      try {
        return java.util.Optional.of(blobs.read(name));
      } catch (java.io.FileNotFoundException | java.nio.file.NoSuchFileException e) {
        // deleted by a newer run since the listing: try the next
      }
    }
    return java.util.Optional.empty();
  }

  /** Names of the published run infos, newest first. */
  private List<String> runInfoNames() throws IOException {
    List<String> names = new ArrayList<>();
    for (String name : blobs.list()) {
      if (name.startsWith(RUN_PREFIX) && name.endsWith(RUN_SUFFIX)) {
        names.add(name);
      }
    }
    names.sort(Comparator.reverseOrder());
    return names;
  }

  /** One stored checkpoint file: its checkpoint id and the run epoch that persisted it (-1 if unknown). */
  public record Stored(long checkpointId, long epoch, String name) {}

  /**
   * Persists a checkpoint durably under its run epoch ({@link CheckpointRecord#attempt()}), then prunes: the run's
   * own checkpoints beyond the retained ones, and older runs' checkpoints below those once the run has retained
   * enough of its own and no newer run started. Never a newer run's file.
   */
  public void persist(CheckpointRecord record) throws IOException {
    long epoch = record.attempt();
    blobs.publish(checkpointName(record.checkpointId(), epoch), CheckpointFormat.encode(record));
    List<Stored> own = new ArrayList<>();
    List<Stored> older = new ArrayList<>();
    for (Stored stored : checkpoints()) {
      if (stored.epoch() == epoch) {
        own.add(stored);
      } else if (stored.epoch() < epoch) {
        older.add(stored);
      }
    }
    List<Stored> doomed = new ArrayList<>(own.subList(Math.min(retained, own.size()), own.size()));
    if (own.size() >= retained
        && epochStarts(record.targetIdentity()).keySet().stream().noneMatch(e -> e > epoch)) {
      long oldestKept = own.get(retained - 1).checkpointId();
      older.stream().filter(s -> s.checkpointId() < oldestKept).forEach(doomed::add);
    }
    for (Stored stored : doomed) {
      try {
        blobs.delete(stored.name());
      } catch (IOException e) {
        LOG.warn("Could not delete old checkpoint {} in {}: {}", stored.name(), blobs.location(), e.toString());
      }
    }
  }

  /** Ids of the stored checkpoint files, newest first, whether or not they are readable. */
  public List<Long> checkpointIds() throws IOException {
    return checkpoints().stream().map(Stored::checkpointId).distinct().toList();
  }

  /** The stored checkpoint files, newest first (by id, then by epoch), whether or not they are readable. */
  public List<Stored> checkpoints() throws IOException {
    List<Stored> stored = new ArrayList<>();
    for (String name : blobs.list()) {
      if (!name.startsWith(CHECKPOINT_PREFIX) || !name.endsWith(CHECKPOINT_SUFFIX)) {
        continue;
      }
      String body = name.substring(CHECKPOINT_PREFIX.length(), name.length() - CHECKPOINT_SUFFIX.length());
      int dash = body.indexOf("-e");
      String id = dash < 0 ? body : body.substring(0, dash);
      String epoch = dash < 0 ? "" : body.substring(dash + 2);
      if (isNumber(id) && (dash < 0 || isNumber(epoch))) {
        stored.add(new Stored(Long.parseLong(id), dash < 0 ? -1 : Long.parseLong(epoch), name));
      }
    }
    stored.sort(Comparator.comparingLong(Stored::checkpointId).thenComparingLong(Stored::epoch).reversed());
    return stored;
  }

  /**
   * Records that the run of {@code epoch} starts from {@code baseCheckpointId} (0 for none) on the target of
   * {@code targetIdentity}. Written once per run, after its epoch is claimed and the store read, before the run
   * deletes or stages anything. A marker of the same epoch left by another table (dropped and created again under
   * the name, whose epochs start over) is replaced.
   *
   * @throws IOException if the same target's epoch already has a marker: two runs were handed one epoch
   */
  public void markEpochStart(long epoch, long baseCheckpointId, String targetIdentity) throws IOException {
    String name = String.format("%s%020d", EPOCH_PREFIX, epoch);
    byte[] bytes = (baseCheckpointId + "\n" + targetIdentity).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    try {
      blobs.publish(name, bytes);
    } catch (java.nio.file.FileAlreadyExistsException e) {
      String[] existing = marker(name);
      if (existing == null || existing[1].equals(targetIdentity)) {
        throw new IOException("Run epoch " + epoch + " of this job started twice in " + blobs.location()
            + ": the target handed one epoch to two runs", e);
      }
      blobs.delete(name);
      blobs.publish(name, bytes);
    }
  }

  /**
   * Where each recorded run epoch on the target of {@code targetIdentity} started: epoch to the checkpoint it
   * started from. Markers of other targets (a table dropped and created again) are left out.
   */
  public java.util.NavigableMap<Long, Long> epochStarts(String targetIdentity) throws IOException {
    java.util.TreeMap<Long, Long> starts = new java.util.TreeMap<>();
    for (String name : blobs.list()) {
      String digits = name.startsWith(EPOCH_PREFIX) ? name.substring(EPOCH_PREFIX.length()) : "";
      String[] marker = isNumber(digits) ? marker(name) : null;
      if (marker != null && marker[1].equals(targetIdentity)) {
        try {
          starts.put(Long.parseLong(digits), Long.parseLong(marker[0]));
        } catch (NumberFormatException e) {
          // not a marker this store wrote
        }
      }
    }
    return starts;
  }

  /** A marker's base checkpoint and target identity, or null if it is gone. */
  private String[] marker(String name) throws IOException {
    try {
      String text = new String(blobs.read(name), java.nio.charset.StandardCharsets.UTF_8);
      int newline = text.indexOf('\n');
      return newline < 0 ? new String[] {text.trim(), ""}
          : new String[] {text.substring(0, newline).trim(), text.substring(newline + 1)};
    } catch (java.io.FileNotFoundException | java.nio.file.NoSuchFileException e) {
      return null;
    }
  }

  /**
   * Whether a stored checkpoint was persisted by a run that a newer run had already fenced: a newer epoch started
   * from a lower checkpoint. Such a checkpoint holds rows of a run that can never commit them, and its staged
   * files may be gone.
   */
  public static boolean fencedOut(Stored stored, java.util.NavigableMap<Long, Long> epochStarts) {
    return epochStarts.tailMap(stored.epoch(), false).values().stream().anyMatch(base -> base < stored.checkpointId());
  }

  /**
   * Reads the newest stored file of one checkpoint and checks that it belongs to the job.
   *
   * @throws CorruptCheckpointException if the file fails its checksum or is of another job; names the file
   */
  public CheckpointRecord load(JobId jobId, long checkpointId) throws IOException {
    for (Stored stored : checkpoints()) {
      if (stored.checkpointId() == checkpointId) {
        return load(jobId, stored);
      }
    }
    throw new java.io.FileNotFoundException("No checkpoint " + checkpointId + " in " + blobs.location());
  }

  /**
   * Reads one stored checkpoint and checks that it belongs to the job.
   *
   * @throws CorruptCheckpointException if the file fails its checksum or holds another checkpoint than its name;
   *     names the file
   * @throws JobFailedException if the file is a checkpoint of another job: the location is that job's
   */
  public CheckpointRecord load(JobId jobId, Stored stored) throws IOException {
    String file = blobs.location() + "/" + stored.name();
    CheckpointRecord record = CheckpointFormat.decode(file, blobs.read(stored.name()));
    if (!record.jobId().equals(jobId)) {
      throw new JobFailedException("The checkpoint location " + blobs.location() + " belongs to job "
          + record.jobId() + " (" + stored.name() + " is its checkpoint " + record.checkpointId() + "), not to job "
          + jobId + ": give each job a checkpoint location of its own (--checkpoint-dir), or run job "
          + record.jobId() + " to resume it");
    }
    if (record.checkpointId() != stored.checkpointId()) {
      throw new CorruptCheckpointException(
          file, "holds checkpoint " + record.checkpointId() + " of job " + record.jobId() + ", expected job " + jobId);
    }
    return record;
  }

  /** The file of a checkpoint, for messages. */
  public String describe(Stored stored) {
    return blobs.location() + "/" + stored.name();
  }

  static String checkpointName(long checkpointId, long epoch) {
    return String.format("%s%020d-e%d%s", CHECKPOINT_PREFIX, checkpointId, epoch, CHECKPOINT_SUFFIX);
  }

  private static boolean isNumber(String digits) {
    if (digits.isEmpty() || digits.length() > 20 || !digits.chars().allMatch(Character::isDigit)) {
      return false;
    }
    try {
      Long.parseLong(digits);
      return true;
    } catch (NumberFormatException e) {
      return false;
    }
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
