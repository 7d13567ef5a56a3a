package dev.lakecommit.core;

import java.io.Closeable;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Everything a sink knows of its one target table, as one closeable object: its identity, the last committed
 * checkpoint of a job, the run epoch claim, and the staged files of a job by checkpoint and epoch. The standalone
 * runtime, the engine adapters and the tool use it; none of them parses a watermark or sweeps a prefix on its own.
 *
 * <p>Thread-safe for the calls below; opened by {@link SupportsTarget#openTarget()} and closed by its caller.
 */
public interface CommitTarget extends Closeable {

  /** The target's name for messages (for example {@code db.orders}). */
  String name();

  /**
   * What makes this table this table (Iceberg: the table UUID; Hive: create time and location). A checkpoint
   * records it, and a restore against another identity stops (a table dropped and created again under the same
   * name is another table).
   *
   * @throws IOException if the target cannot be read
   */
  String identity() throws IOException;

  /**
   * The highest checkpoint of the job committed in the target, read now: the job's watermark, or, where the
   * watermark is missing (a user removed the property), the newest checkpoint of the job in the whole commit
   * history. Never a guess.
   *
   * @return empty if the job never committed to this target
   * @throws IOException if the target cannot be read
   */
  OptionalLong lastCommittedCheckpoint(JobId jobId) throws IOException;

  /**
   * Claims a new run epoch for the job, greater than every epoch claimed before, with a compare-and-swap in the
   * target. From then on every commit of an older epoch of the job fails with {@link FencedException}. Called once
   * per run, before the run stages anything.
   *
   * @param run a description of the claiming run for messages (see {@link RunEpoch#thisProcess()})
   * @throws IOException if the claim cannot be written; nothing was claimed or the claim is safe to repeat
   */
  RunEpoch claimEpoch(JobId jobId, String run) throws IOException;

  /** The epoch the target holds for the job now, or empty if no run of the job claimed one. */
  Optional<RunEpoch> currentEpoch(JobId jobId) throws IOException;

  /**
   * What the job staged for checkpoints above {@code checkpointId} in runs of epochs {@code minEpoch} to
   * {@code maxEpoch} (inclusive; names without epoch count as epoch 0): the files {@link #deleteStaged} with the same
   * arguments deletes. For dry runs and orphan reports.
   */
  List<String> listStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException;

  /**
   * Deletes what the job staged for checkpoints above {@code checkpointId} in runs of epochs {@code minEpoch} to
   * {@code maxEpoch} (inclusive). The caller proves that none of these files can be committed: their checkpoints
   * are above what the target holds and the runs of those epochs are fenced, or the epoch is the caller's own.
   *
   * @return the number of files deleted
   */
  long deleteStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException;

  /**
   * Deletes what attempts below {@code attempt} of the run of {@code epoch} staged for checkpoints above {@code
   * checkpointId}: after a failover within a run (an engine restarting its tasks from the run's last completed
   * checkpoint), what the failed attempts staged for checkpoints that never completed. The caller is that run, and
   * proves that none of these files can be committed: its restored state refers to nothing above {@code
   * checkpointId}, the target holds nothing of the job above it, and every task of the run now runs in attempt
   * {@code attempt} or later. Files of other runs and of later attempts are never touched.
   *
   * @return the number of files deleted
   * @throws IOException if listing or deleting fails; the call can be repeated
   */
  long deleteStagedOfEarlierAttempts(JobId jobId, long checkpointId, long epoch, int attempt) throws IOException;

  /**
   * What the job staged for committed checkpoints that the target does not hold: for a sink whose commit moves
   * staged files into the table (Hive), whatever is still staged for a checkpoint at or below the watermark (a
   * crashed attempt's file, a copy a failed delete left); for a sink whose staged files are the table's own data
   * files (Iceberg), those of them and the committer's manifests that no snapshot references.
   */
  List<String> committedLeftovers(JobId jobId) throws IOException;

  /**
   * Deletes {@link #committedLeftovers}: they can never be committed.
   *
   * @return the number of files deleted
   */
  long deleteCommittedLeftovers(JobId jobId) throws IOException;

  /**
   * Every job that committed to the target or claimed a run epoch in it, as the target holds them now: its
   * watermark (empty if it never committed) and its newest run epoch (empty if it never claimed one). For reports.
   *
   * @throws IOException if the target cannot be read
   */
  SortedMap<String, JobState> jobs() throws IOException;

  /**
   * What a target holds of one job.
   *
   * @param committed the job's watermark: its last committed checkpoint
   * @param epoch the newest run epoch claimed
   * @param sourcePosition where the job's source stands after its last committed checkpoint, as the source wrote it
   *     ({@link CommitId#sourcePositionKey}); empty for sources that record none
   */
  record JobState(OptionalLong committed, Optional<RunEpoch> epoch, Optional<String> sourcePosition) {

    public JobState(OptionalLong committed, Optional<RunEpoch> epoch) {
      this(committed, epoch, Optional.empty());
    }

    /**
     * The jobs recorded in a table's properties (Iceberg) or parameters (Hive): the one parser of the
     * {@link CommitId#WATERMARK_KEY_PREFIX} and {@link RunEpoch#EPOCH_KEY_PREFIX} keys.
     *
     * @param table the table's name, for the message of a corrupt value
     * @throws IllegalStateException naming the key and table if a value is corrupt
     */
    public static SortedMap<String, JobState> fromProperties(String table, Map<String, String> properties) {
      SortedMap<String, OptionalLong> watermarks = new TreeMap<>();
      SortedMap<String, Optional<RunEpoch>> epochs = new TreeMap<>();
      SortedMap<String, String> positions = new TreeMap<>();
      properties.forEach((key, value) -> {
        if (key.startsWith(CommitId.WATERMARK_KEY_PREFIX)) {
          String job = key.substring(CommitId.WATERMARK_KEY_PREFIX.length());
          try {
            watermarks.put(job, OptionalLong.of(Long.parseLong(value.trim())));
          } catch (NumberFormatException e) {
            throw new IllegalStateException("Corrupt watermark " + key + "=" + value + " of table " + table
                + ": not a checkpoint id", e);
          }
        } else if (key.startsWith(RunEpoch.EPOCH_KEY_PREFIX)) {
          String job = key.substring(RunEpoch.EPOCH_KEY_PREFIX.length());
          epochs.put(job, Optional.of(RunEpoch.parse(JobId.of(job), value)));
        } else if (key.startsWith(CommitId.SOURCE_POSITION_KEY_PREFIX)) {
          positions.put(key.substring(CommitId.SOURCE_POSITION_KEY_PREFIX.length()), value);
        }
      });
      SortedMap<String, JobState> jobs = new TreeMap<>();
      watermarks.forEach((job, committed) -> jobs.put(job, new JobState(committed,
          epochs.getOrDefault(job, Optional.empty()), Optional.ofNullable(positions.get(job)))));
      epochs.forEach((job, epoch) -> jobs.putIfAbsent(job, new JobState(OptionalLong.empty(), epoch)));
      return jobs;
    }
  }
}
