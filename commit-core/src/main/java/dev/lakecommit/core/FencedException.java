package dev.lakecommit.core;

/**
 * A commit attempt found that the target holds a newer run epoch of the job than the committing run's: another run
 * of the same job started since, and this run must commit nothing more. Not retryable. The committing run may
 * delete only files that it alone wrote (its own epoch's).
 */
public final class FencedException extends RuntimeException {
  private final JobId jobId;
  private final long ownEpoch;
  private final RunEpoch newer;

  public FencedException(String target, JobId jobId, long ownEpoch, RunEpoch newer) {
    super(String.format("Run epoch %s of job %s is fenced in %s: a newer run of the same job holds %s. This run"
        + " commits nothing more; the newer run goes on (stop one of them if both were started by mistake)",
        ownEpoch, jobId, target, newer));
    this.jobId = jobId;
    this.ownEpoch = ownEpoch;
    this.newer = newer;
  }

  public JobId jobId() {
    return jobId;
  }

  public long ownEpoch() {
    return ownEpoch;
  }

  /** The epoch the target holds now. */
  public RunEpoch newer() {
    return newer;
  }
}
