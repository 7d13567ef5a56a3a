package dev.lakecommit.core.testing;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * A target held in memory, for sinks whose tests are about the runtime and not about the table: it keeps run
 * epochs, reads the watermark of a job from the sink, and stages nothing of its own.
 */
public final class MemoryTarget implements CommitTarget {
  private final Function<JobId, OptionalLong> watermarks;
  private final Map<JobId, RunEpoch> epochs = new ConcurrentHashMap<>();

  /** @param watermarks the last committed checkpoint of a job, as the sink's commits hold it */
  public MemoryTarget(Function<JobId, OptionalLong> watermarks) {
    this.watermarks = watermarks;
  }

  @Override
  public String name() {
    return "memory target";
  }

  @Override
  public String identity() {
    return "";
  }

  @Override
  public OptionalLong lastCommittedCheckpoint(JobId jobId) {
    return watermarks.apply(jobId);
  }

  @Override
  public RunEpoch claimEpoch(JobId jobId, String run) {
    return epochs.compute(jobId, (job, now) -> new RunEpoch(now == null ? 1 : now.epoch() + 1, run));
  }

  @Override
  public Optional<RunEpoch> currentEpoch(JobId jobId) {
    return Optional.ofNullable(epochs.get(jobId));
  }

  @Override
  public List<String> listStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) {
    return List.of();
  }

  @Override
  public long deleteStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) {
    return 0;
  }

  @Override
  public long deleteStagedOfEarlierAttempts(JobId jobId, long checkpointId, long epoch, int attempt) {
    return 0;
  }

  @Override
  public List<String> committedLeftovers(JobId jobId) {
    return List.of();
  }

  @Override
  public long deleteCommittedLeftovers(JobId jobId) {
    return 0;
  }

  @Override
  public SortedMap<String, JobState> jobs() {
    SortedMap<String, JobState> jobs = new TreeMap<>();
    epochs.forEach((job, epoch) -> jobs.put(job.value(), new JobState(watermarks.apply(job), Optional.of(epoch))));
    return jobs;
  }

  @Override
  public void close() {}
}
