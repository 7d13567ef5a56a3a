package dev.lakecommit.spark;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.SinkAggregatedCommitter;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Optional;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One run of a job on its target (DESIGN.md rules 10-11): a batch write's {@code save()}, or one start of a
 * streaming query. The run claims a new epoch in the target before it stages anything, fences every committer it
 * creates at that epoch, and deletes only what fenced older runs or it itself staged. Driver only; one thread.
 */
final class TargetRun implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(TargetRun.class);

  private final CommitTarget target;
  private final boolean claimsEpochs;
  private final JobId jobId;
  private final String where;
  /** This run's epoch, 0 until claimed (and for a target without epochs). */
  private long epoch;

  private TargetRun(CommitTarget target, boolean claimsEpochs, JobId jobId, String where) {
    this.target = target;
    this.claimsEpochs = claimsEpochs;
    this.jobId = jobId;
    this.where = where;
  }

  /** Opens the target of a run of {@code jobId}; nothing is claimed yet. */
  static TargetRun open(SinkRecipe.Opened<?> opened, JobId jobId, String where) {
    try {
      return new TargetRun(opened.openTarget(where), opened.claimsEpochs(), jobId, where);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot open " + where + " for job " + jobId + ": " + e.getMessage(), e);
    }
  }

  /**
   * Claims a new epoch for the job: from now on every commit of an older run of the job is refused. A target
   * without epochs (a sink that has no {@code CommitTarget} yet) claims nothing.
   *
   * @param run a description of the run for the target and for messages
   */
  TargetRun claim(String run) {
    if (claimsEpochs) {
      try {
        RunEpoch claimed = target.claimEpoch(jobId, run);
        epoch = claimed.epoch();
        LOG.info("Job {} runs as {} in {}", jobId, claimed, where);
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot claim a run epoch for job " + jobId + " in " + where + ": "
            + e.getMessage(), e);
      }
    }
    return this;
  }

  JobId jobId() {
    return jobId;
  }

  /** This run's epoch: staged names carry it (0: none claimed). */
  long epoch() {
    return epoch;
  }

  /** Makes the committer commit only while the target holds this run's epoch. */
  void fence(SinkAggregatedCommitter<?, ?> committer) {
    if (epoch > 0) {
      committer.fence(jobId, epoch);
    }
  }

  /** The job's last committed checkpoint in the target, read now. */
  OptionalLong lastCommitted() {
    try {
      return target.lastCommittedCheckpoint(jobId);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read the commits of job " + jobId + " from " + where + ": "
          + e.getMessage(), e);
    }
  }

  /**
   * Deletes what older, fenced runs of the job staged above {@code committed}: none of it can be committed any more
   * (it is above the table's watermark and its runs' commits are refused). Call after {@link #claim}.
   */
  void deleteOlderRuns(long committed) {
    delete(committed, 0, Math.max(0, epoch - 1), "older runs");
  }

  /** Deletes what this run staged above {@code checkpointId}: for a write of this run that will never commit. */
  void deleteOwn(long checkpointId) {
    delete(checkpointId, epoch, epoch, "this run");
  }

  private void delete(long above, long minEpoch, long maxEpoch, String whose) {
    try {
      long deleted = target.deleteStaged(jobId, above, minEpoch, maxEpoch);
      if (deleted > 0) {
        LOG.info("Deleted {} files that {} of job {} staged above checkpoint {} in {}", deleted, whose, jobId,
            above, where);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot delete staged files of " + whose + " of job " + jobId + " above"
          + " checkpoint " + above + " in " + where + ": " + e.getMessage(), e);
    }
  }

  /** The newer run that holds the job now, if this run has been fenced. */
  Optional<RunEpoch> fencedBy() {
    if (epoch == 0) {
      return Optional.empty();
    }
    try {
      return target.currentEpoch(jobId).filter(now -> now.epoch() > epoch);
    } catch (IOException | RuntimeException e) {
      LOG.warn("Cannot read the run epoch of job {} in {}: {}", jobId, where, e.toString());
      return Optional.empty();
    }
  }

  @Override
  public void close() {
    try {
      target.close();
    } catch (IOException e) {
      LOG.warn("Could not close {}: {}", where, e.toString());
    }
  }
}
