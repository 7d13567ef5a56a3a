package dev.lakecommit.core;

import java.io.Closeable;
import java.io.IOException;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One run of a job on its target (DESIGN.md rules 10, 11 and 16): a standalone start, a Flink job submission, a
 * Spark write or one start of a streaming query. The run claims a new epoch in the target before it stages
 * anything, fences every committer it uses at that epoch, reads what the target holds of the job, settles a commit
 * of unknown outcome by reading the target back, deletes only what fenced older runs (or it itself) staged, and
 * says which newer run fenced it. Every runtime goes through this object; none reads a watermark, claims an epoch
 * or sweeps staged files on its own.
 *
 * <p>Where the claim is made in one process and the run goes on in others (Flink claims on the client when it
 * translates the job; its operators run on TaskManagers), those processes open the run with the claimed epoch
 * ({@link #open(SupportsTarget, JobId, long, String)}).
 *
 * <p>Not thread-safe for {@link #claim}; the other calls are as thread-safe as the target's.
 */
public final class TargetRun implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(TargetRun.class);

  private final CommitTarget target;
  private final JobId jobId;
  /** This run's epoch: 0 until claimed. */
  private long epoch;
  /** The target's identity when the epoch was claimed; empty until then. */
  private String identity;

  private TargetRun(CommitTarget target, JobId jobId, long epoch, String identity) {
    this.target = Objects.requireNonNull(target, "target");
    this.jobId = Objects.requireNonNull(jobId, "jobId");
    this.epoch = epoch;
    this.identity = identity;
  }

  /** Opens the sink's target for a run of {@code jobId} that has not claimed its epoch yet ({@link #claim}). */
  public static TargetRun open(SupportsTarget sink, JobId jobId) throws IOException {
    return new TargetRun(sink.openTarget(), jobId, 0, "");
  }

  /**
   * Opens the sink's target for a run whose epoch was claimed elsewhere (another process of the same run).
   *
   * @param identity the target's identity when the epoch was claimed (empty: unknown, never compared)
   */
  public static TargetRun open(SupportsTarget sink, JobId jobId, long epoch, String identity) throws IOException {
    if (epoch <= 0) {
      throw new IllegalArgumentException("No run epoch was claimed for job " + jobId + ": refusing to run unfenced");
    }
    return new TargetRun(sink.openTarget(), jobId, epoch, identity);
  }

  /** A run on a target the caller opened; the run closes it. */
  public static TargetRun of(CommitTarget target, JobId jobId) {
    return new TargetRun(target, jobId, 0, "");
  }

  /**
   * Claims a new epoch for the job in the target and reads the target's identity: from now on every commit of an
   * older run of the job is refused, and whatever an older run did before is visible to this one.
   *
   * @param run a description of the claiming run for the target and for messages
   * @throws IOException if the claim cannot be written; nothing was claimed or the claim is safe to repeat
   */
  public RunEpoch claim(String run) throws IOException {
    RunEpoch claimed = target.claimEpoch(jobId, run);
    epoch = claimed.epoch();
    identity = target.identity();
    LOG.info("Job {} runs as {} in {}", jobId, claimed, target.name());
    return claimed;
  }

  public JobId jobId() {
    return jobId;
  }

  /** The target's name, for messages. */
  public String name() {
    return target.name();
  }

  /** The target itself, for what is not part of a run (reports, maintenance). */
  public CommitTarget target() {
    return target;
  }

  /** This run's epoch: staged names carry it; 0 before {@link #claim}. */
  public long epoch() {
    return epoch;
  }

  /** The target's identity when this run claimed its epoch (empty before, or when claimed elsewhere unknown). */
  public String identity() {
    return identity;
  }

  /** The target's identity, read now (a table dropped and created again has another). */
  public String readIdentity() throws IOException {
    return target.identity();
  }

  /** Makes the committer commit only while the target holds this run's epoch. */
  public void fence(SinkAggregatedCommitter<?, ?> committer) {
    if (epoch <= 0) {
      throw new IllegalStateException("Job " + jobId + " has claimed no run epoch in " + target.name()
          + ": refusing to commit unfenced");
    }
    committer.fence(jobId, epoch);
  }

  /**
   * The job's last committed checkpoint in the target, read now.
   *
   * @return empty if the job never committed to the target
   * @throws IOException if the target cannot be read: never guessed
   */
  public OptionalLong lastCommitted() throws IOException {
    return target.lastCommittedCheckpoint(jobId);
  }

  /**
   * Deletes what older runs of the job (all fenced by this run's claim) staged above {@code checkpointId}: none of
   * it can be committed any more, provided the caller keeps nothing above it that refers to them (DESIGN.md rule
   * 11). Call after {@link #claim}.
   *
   * @return the number of files deleted
   */
  public long deleteOlderRuns(long checkpointId) throws IOException {
    if (epoch <= 0) {
      return 0;
    }
    long deleted = target.deleteStaged(jobId, checkpointId, 0, epoch - 1);
    if (deleted > 0) {
      LOG.info("Deleted {} files that older runs (epochs up to {}) of job {} staged above checkpoint {} in {}",
          deleted, epoch - 1, jobId, checkpointId, target.name());
    }
    return deleted;
  }

  /**
   * Deletes what any run of the job up to and including this one staged above {@code checkpointId}, as {@link
   * #deleteOlderRuns} does and more: call after {@link #claim} and before this run stages anything, when a file
   * that carries this run's epoch can only be a leftover (a table dropped and created again under the name starts
   * its epochs over, while the files the older table's runs staged may still be at the same paths).
   *
   * @return the number of files deleted
   */
  public long deleteBeforeStaging(long checkpointId) throws IOException {
    if (epoch <= 0) {
      return 0;
    }
    long deleted = target.deleteStaged(jobId, checkpointId, 0, epoch);
    if (deleted > 0) {
      LOG.info("Deleted {} files that earlier runs (epochs up to {}) of job {} staged above checkpoint {} in {}",
          deleted, epoch, jobId, checkpointId, target.name());
    }
    return deleted;
  }

  /** Deletes what this run staged above {@code checkpointId}: for checkpoints of this run that will never commit. */
  public long deleteOwn(long checkpointId) throws IOException {
    if (epoch <= 0) {
      return 0;
    }
    long deleted = target.deleteStaged(jobId, checkpointId, epoch, epoch);
    if (deleted > 0) {
      LOG.info("Deleted {} files that this run (epoch {}) of job {} staged above checkpoint {} in {}", deleted,
          epoch, jobId, checkpointId, target.name());
    }
    return deleted;
  }

  /**
   * Deletes what attempts below {@code attempt} of this run staged above {@code checkpointId} (see {@link
   * CommitTarget#deleteStagedOfEarlierAttempts}).
   */
  public long deleteOfEarlierAttempts(long checkpointId, int attempt) throws IOException {
    if (epoch <= 0) {
      return 0;
    }
    return target.deleteStagedOfEarlierAttempts(jobId, checkpointId, epoch, attempt);
  }

  /** The newer run that holds the job now, if this run has been fenced; empty if not, or if it cannot be read. */
  public Optional<RunEpoch> fencedBy() {
    if (epoch <= 0) {
      return Optional.empty();
    }
    try {
      return target.currentEpoch(jobId).filter(now -> now.epoch() > epoch);
    } catch (IOException | RuntimeException e) {
      LOG.warn("Cannot read the run epoch of job {} in {}: {}", jobId, target.name(), e.toString());
      return Optional.empty();
    }
  }

  /**
   * Says who fenced whom: {@code what} stopped because a newer run holds the job, and this run commits nothing
   * more. Null if the target still holds this run's epoch (or cannot tell).
   *
   * @param what the run's work, capitalized ({@code "Job j"}, {@code "Write of (j, 4) to table t"})
   */
  public String fencedMessage(String what) {
    return fencedBy().map(newer -> what + " stopped: a newer run of the same job holds " + newer + " in "
        + target.name() + ", so this run (epoch " + epoch + ") is fenced and commits nothing more; it deleted only"
        + " files it staged itself").orElse(null);
  }

  /**
   * After attempts to commit checkpoint {@code checkpointId} whose outcome stayed unknown, asks the target once
   * whether it landed (DESIGN.md rule 4): already committed if the target holds it; otherwise, or if the target
   * cannot answer, the outcome as it was.
   */
  public CommitOutcome settle(long checkpointId, CommitOutcome outcome) {
    if (!(outcome instanceof CommitOutcome.Unknown) && !outcome.isRetryable()) {
      return outcome;
    }
    try {
      OptionalLong committed = target.lastCommittedCheckpoint(jobId);
      if (committed.isPresent() && committed.getAsLong() >= checkpointId) {
        LOG.info("Checkpoint {} of job {} landed in an attempt of unknown outcome ({} holds checkpoint {})",
            checkpointId, jobId, target.name(), committed.getAsLong());
        return CommitOutcome.alreadyCommitted("an attempt of unknown outcome landed");
      }
    } catch (IOException | RuntimeException e) {
      LOG.debug("Could not settle the commit of checkpoint {} of job {} in {}: {}", checkpointId, jobId,
          target.name(), e.toString());
    }
    return outcome;
  }

  @Override
  public void close() throws IOException {
    target.close();
  }
}
