package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.SortedMap;
import java.util.TreeMap;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The tables of a {@link MultiTableSink} job as one {@link CommitTarget}: a run claims its epoch in the job's state
 * and in every table the job registered; the last committed checkpoint is the job's last cut; staged files are
 * listed and swept in every registered table, including those the job never committed to.
 */
final class MultiTableTarget implements CommitTarget {
  private static final Logger LOG = LoggerFactory.getLogger(MultiTableTarget.class);
  private static final int CLAIM_ATTEMPTS = 20;

  private final MultiTableSink<?> sink;
  private final Map<JobId, CutCommitter> cuts = new java.util.HashMap<>();
  private Runnable beforeClaim = () -> {};
  private int claimConflicts;

  MultiTableTarget(MultiTableSink<?> sink) {
    this.sink = sink;
  }

  @Override
  public String name() {
    return "the tables of " + sink.stateLocation();
  }

  /** The job's state location: what a checkpoint belongs to. Each table's UUID is checked at every claim. */
  @Override
  public String identity() {
    return "lakecommit-job-tables:" + sink.stateLocation();
  }

  private synchronized CutCommitter cut(JobId jobId) {
    return cuts.computeIfAbsent(jobId, sink::cutCommitter);
  }

  /** The registered tables, each loaded once and checked to be the table the job registered. */
  private Map<TableIdentifier, Table> loaded(JobId jobId) throws IOException {
    Map<TableIdentifier, Table> tables = new java.util.LinkedHashMap<>();
    for (Map.Entry<TableIdentifier, String> entry : sink.jobTables(jobId).tables().entrySet()) {
      Table table;
      try {
        table = sink.catalog().loadTable(entry.getKey());
      } catch (NoSuchTableException e) {
        throw new IOException("Table " + entry.getKey() + ", which job " + jobId + " writes, does not exist (dropped"
            + " while the job ran?): register its metadata again to resume the job, or start it afresh with a new"
            + " job id", e);
      } catch (RuntimeException e) {
        throw new IOException("Cannot read table " + entry.getKey() + ": " + e.getMessage(), e);
      }
      String uuid = ((HasTableOperations) table).operations().current().uuid();
      if (!uuid.equals(entry.getValue())) {
        throw new IllegalStateException(JobTables.recreated(entry.getKey(), entry.getValue(), uuid));
      }
      tables.put(entry.getKey(), table);
    }
    return tables;
  }

  private List<TableIdentifier> tables(JobId jobId) throws IOException {
    return List.copyOf(loaded(jobId).keySet());
  }

  /** One call per registered table, as a one-table target on its staged files, with the table as just loaded. */
  private interface PerTable<T> {
    T apply(IcebergTarget target, Table table) throws IOException;
  }

  private <T> List<T> eachTable(JobId jobId, PerTable<T> call) throws IOException {
    List<T> results = new ArrayList<>();
    for (Map.Entry<TableIdentifier, Table> table : loaded(jobId).entrySet()) {
      results.add(call.apply(new IcebergTarget(sink.catalog(), table.getKey(), SnapshotRef.MAIN_BRANCH,
          MultiTableSink.layout(table.getValue())), table.getValue()));
    }
    return results;
  }

  @Override
  public OptionalLong lastCommittedCheckpoint(JobId jobId) throws IOException {
    List<TableIdentifier> tables = tables(jobId);
    try {
      return cut(jobId).lastCut(jobId, tables, List.of()).map(cut -> OptionalLong.of(cut.checkpointId()))
          .orElse(OptionalLong.empty());
    } catch (RuntimeException e) {
      throw new IOException("Cannot read the last cut of job " + jobId + ": " + e.getMessage(), e);
    }
  }

  /**
   * Publishes the claim in the job's state, then claims it in every table registered by then, all at once where
   * the catalog allows. A writer that registers a table after this read finds the claim and is fenced; one that
   * registered before has its table claimed here.
   */
  @Override
  public RunEpoch claimEpoch(JobId jobId, String run) throws IOException {
    JobTables state = sink.jobTables(jobId);
    CutCommitter cut = cut(jobId);
    RuntimeException last = null;
    for (int attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
      long highest = state.highestClaimedEpoch();
      for (Table table : loaded(jobId).values()) {
        highest = Math.max(highest, IcebergTarget.epochIn(((HasTableOperations) table).operations().current(), jobId)
            .map(RunEpoch::epoch).orElse(0L));
      }
      RunEpoch claim = new RunEpoch(highest + 1, run);
      beforeClaim.run();
      boolean alone;
      try {
        alone = state.publishClaim(claim);
      } catch (FileAlreadyExistsException e) {
        alone = false;
      }
      if (!alone) {
        claimConflicts++;
        LOG.info("Another run of job {} claimed epoch {} at the same moment; claiming above it", jobId,
            claim.epoch());
        pause(attempt);
        continue;
      }
      try {
        cut.claimAt(jobId, claim, tables(jobId));
        sink.claimed(jobId, claim);
        return claim;
      } catch (CommitFailedException e) {
        last = e;
        LOG.info("Claim of epoch {} for job {} met another claim ({}); claiming above it", claim.epoch(), jobId,
            e.getMessage());
      }
    }
    throw new IOException("Could not claim a run epoch for job " + jobId + " in " + name() + " after "
        + CLAIM_ATTEMPTS + " attempts: other runs of the job kept claiming", last);
  }

  /** Test-only: runs after a claim's epoch is chosen, before it is published. */
  MultiTableTarget beforeClaim(Runnable hook) {
    this.beforeClaim = hook;
    return this;
  }

  /** Claims that met another run's claim of the same epoch (for tests: a race must be seen, not assumed). */
  int claimConflicts() {
    return claimConflicts;
  }

  /** A random pause before claiming again: two runs that met do not meet again at the next epoch. */
  private static void pause(int attempt) throws IOException {
    try {
      Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextLong(1, 20L * attempt));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("Interrupted while claiming a run epoch");
    }
  }

  @Override
  public Optional<RunEpoch> currentEpoch(JobId jobId) throws IOException {
    Optional<RunEpoch> newest = sink.jobTables(jobId).newestClaim();
    for (Table table : loaded(jobId).values()) {
      Optional<RunEpoch> held = IcebergTarget.epochIn(((HasTableOperations) table).operations().current(), jobId);
      if (held.isPresent() && (newest.isEmpty() || held.get().epoch() > newest.get().epoch())) {
        newest = held;
      }
    }
    return newest;
  }

  /**
   * What each table's runs staged above {@code checkpointId} and above the table's own last checkpoint of the job:
   * a table can hold a checkpoint the job's last cut does not (committed table by table, the cut record not yet
   * published), and its files of that checkpoint are committed where they were staged (DESIGN.md rule 11).
   */
  @Override
  public List<String> listStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
    return eachTable(jobId, (target, table) -> target.listStaged(jobId, aboveCommitted(table, jobId, checkpointId),
        minEpoch, maxEpoch)).stream().flatMap(List::stream).toList();
  }

  /** Deletes what {@link #listStaged} lists. */
  @Override
  public long deleteStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
    return eachTable(jobId, (target, table) -> target.deleteStaged(jobId,
        aboveCommitted(table, jobId, checkpointId), minEpoch, maxEpoch)).stream().mapToLong(Long::longValue).sum();
  }

  private static long aboveCommitted(Table table, JobId jobId, long checkpointId) {
    return Math.max(checkpointId, Watermarks.committedUpTo(((HasTableOperations) table).operations().current(),
        jobId, SnapshotRef.MAIN_BRANCH).orElse(0));
  }

  @Override
  public long deleteStagedOfEarlierAttempts(JobId jobId, long checkpointId, long epoch, int attempt)
      throws IOException {
    return eachTable(jobId, (target, table) -> target.deleteStagedOfEarlierAttempts(jobId,
        aboveCommitted(table, jobId, checkpointId), epoch, attempt)).stream().mapToLong(Long::longValue).sum();
  }

  @Override
  public List<String> committedLeftovers(JobId jobId) throws IOException {
    return eachTable(jobId, (target, table) -> target.committedLeftovers(jobId)).stream().flatMap(List::stream)
        .toList();
  }

  @Override
  public long deleteCommittedLeftovers(JobId jobId) throws IOException {
    return eachTable(jobId, (target, table) -> target.deleteCommittedLeftovers(jobId)).stream()
        .mapToLong(Long::longValue).sum();
  }

  /** Not kept per job across tables: a multi-table job is read with {@link #lastCommittedCheckpoint}. */
  @Override
  public SortedMap<String, JobState> jobs() {
    return new TreeMap<>();
  }

  @Override
  public synchronized void close() {
    cuts.values().forEach(CutCommitter::close);
    cuts.clear();
  }
}
