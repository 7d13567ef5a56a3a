package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.staging.StagingCleaner;
import dev.lakecommit.staging.StagingLayout;
import java.io.IOException;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.Transactions;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An Iceberg table as a {@link CommitTarget}: identity is the table UUID, the watermark and run epochs are table
 * properties, and staged files live under the table's data location. Reads the table from the catalog at every
 * call. Uses the sink's catalog, which it does not close.
 */
final class IcebergTarget implements CommitTarget {
  private static final Logger LOG = LoggerFactory.getLogger(IcebergTarget.class);
  private static final int CLAIM_ATTEMPTS = 20;
  /** In the summary of the empty snapshot that marks a run's claim on a REST catalog: the claimed epoch. */
  static final String CLAIM_KEY = "lakecommit.claim";

  private final Catalog catalog;
  private final TableIdentifier identifier;
  private final String branch;
  private final StagingLayout layout;
  private int claimConflicts;

  IcebergTarget(Catalog catalog, TableIdentifier identifier, String branch, StagingLayout layout) {
    this.catalog = catalog;
    this.identifier = identifier;
    this.branch = branch == null ? org.apache.iceberg.SnapshotRef.MAIN_BRANCH : branch;
    this.layout = layout;
  }

  @Override
  public String name() {
    return identifier.toString();
  }

  @Override
  public String identity() throws IOException {
    return "iceberg-table-uuid:" + metadata().uuid();
  }

  @Override
  public OptionalLong lastCommittedCheckpoint(JobId jobId) throws IOException {
    return Watermarks.committedUpTo(metadata(), jobId, branch);
  }

  @Override
  public Optional<RunEpoch> currentEpoch(JobId jobId) throws IOException {
    return epochIn(metadata(), jobId);
  }

  /**
   * Sets the job's epoch property to one above the current one in a metadata-only commit whose every catalog
   * attempt checks that the current one is still there: of two runs claiming at once, one wins and the other reads
   * the winner's and claims above it. A claim of unknown outcome is settled by reading the property back (the
   * value holds the run's description, so it is this run's own).
   */
  @Override
  public RunEpoch claimEpoch(JobId jobId, String run) throws IOException {
    RuntimeException last = null;
    for (int attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
      Table table = catalog.loadTable(identifier);
      TableOperations ops = ((HasTableOperations) table).operations();
      Optional<RunEpoch> current = epochIn(ops.current(), jobId);
      RunEpoch claim = new RunEpoch(current.map(RunEpoch::epoch).orElse(0L) + 1, run);
      try {
        Transaction txn = Transactions.newTransaction(table.name(), new ClaimGuard(ops, jobId, current));
        txn.updateProperties().set(RunEpoch.key(jobId), claim.value()).commit();
        if (appliesChangesOnServer(catalog, ops)) {
          markClaim(txn, claim);
        }
        txn.commitTransaction();
        return claim;
      } catch (EpochMoved | CommitFailedException e) {
        claimConflicts++;
        last = e;
        LOG.info("Claiming run epoch {} of job {} in {} raced with another run ({}); reading it again",
            claim.epoch(), jobId, identifier, e.getMessage());
      } catch (CommitStateUnknownException e) {
        Optional<RunEpoch> now = currentEpoch(jobId);
        if (now.isPresent() && now.get().equals(claim)) {
          return claim;
        }
        last = e;
      }
    }
    throw new IOException("Could not claim a run epoch for job " + jobId + " in table " + identifier + " after "
        + CLAIM_ATTEMPTS + " attempts: other runs of the job kept claiming", last);
  }

  /**
   * Whether the catalog commits by sending changes and requirements that the server applies to the table as it is
   * then (a REST catalog), rather than by swapping the whole metadata the client read (Hadoop, JDBC, Hive, Glue,
   * Nessie). A requirement is sent only for what a change touches, and a property change touches nothing: a claim
   * that sets only the epoch property would neither conflict with another claim nor with a commit attempt that
   * checked the older epoch, and both runs would go on committing.
   */
  static boolean appliesChangesOnServer(Catalog catalog, TableOperations ops) {
    return catalog instanceof org.apache.iceberg.rest.RESTCatalog
        || ops.getClass().getName().startsWith("org.apache.iceberg.rest.");
  }

  /**
   * Puts the claim on the branch the job commits to as a snapshot that adds nothing (summary
   * {@value #CLAIM_KEY}). Its change of the branch makes the claim require the branch's snapshot that it read, as
   * every checkpoint commit does: of two claims, or of a claim and a commit attempt of the run it fences, that read
   * the same snapshot, only one lands, and the other is retried on the table as it is then (the commit attempt then
   * finds the new epoch and is fenced).
   */
  private void markClaim(Transaction txn, RunEpoch claim) {
    org.apache.iceberg.AppendFiles mark = txn.newFastAppend().set(CLAIM_KEY, claim.value());
    if (!org.apache.iceberg.SnapshotRef.MAIN_BRANCH.equals(branch)) {
      mark.toBranch(branch);
    }
    mark.commit();
  }

  /** Claims that lost a race and were read again (for tests: a race must be seen, not assumed). */
  int claimConflicts() {
    return claimConflicts;
  }

  @Override
  public long deleteStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
    Table table = catalog.loadTable(identifier);
    return new StagingCleaner(table.io(), layout).deleteStaged(jobId, checkpointId, minEpoch, maxEpoch);
  }

  @Override
  public long deleteStagedOfEarlierAttempts(JobId jobId, long checkpointId, long epoch, int attempt)
      throws IOException {
    Table table = catalog.loadTable(identifier);
    return new StagingCleaner(table.io(), layout).deleteStagedOfEarlierAttempts(jobId, checkpointId, epoch, attempt);
  }

  @Override
  public java.util.List<String> listStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch)
      throws IOException {
    Table table = catalog.loadTable(identifier);
    return new StagingCleaner(table.io(), layout).listStaged(jobId, checkpointId, minEpoch, maxEpoch);
  }

  /**
   * Files the job staged for checkpoints at or below its watermark that no snapshot of the table references: the
   * committer manifests and data files of commit attempts that were killed or failed before a later attempt
   * committed the checkpoint with files of its own (each attempt names its committer manifests anew). A checkpoint
   * at or below the watermark is never committed again, so nothing can come to reference them. Reads every
   * manifest of every snapshot once.
   */
  @Override
  public java.util.List<String> committedLeftovers(JobId jobId) throws IOException {
    Table table = catalog.loadTable(identifier);
    long committed = lastCommittedCheckpoint(jobId).orElse(0);
    if (committed == 0) {
      return java.util.List.of();
    }
    java.util.List<String> staged = new StagingCleaner(table.io(), layout).listStagedUpTo(jobId, committed);
    if (staged.isEmpty()) {
      return staged;
    }
    java.util.Set<String> referenced = OrphanFiles.referenced(table);
    return staged.stream().filter(location -> !referenced.contains(OrphanFiles.normalize(location))).toList();
  }

  @Override
  public long deleteCommittedLeftovers(JobId jobId) throws IOException {
    java.util.List<String> leftovers = committedLeftovers(jobId);
    if (!leftovers.isEmpty()) {
      new StagingCleaner(catalog.loadTable(identifier).io(), layout).delete(jobId, leftovers);
      LOG.info("Deleted {} file(s) that job {} staged for committed checkpoints of {} and no snapshot references",
          leftovers.size(), jobId, identifier);
    }
    return leftovers.size();
  }

  @Override
  public java.util.SortedMap<String, JobState> jobs() throws IOException {
    return JobState.fromProperties(name(), metadata().properties());
  }

  @Override
  public void close() {}

  private TableMetadata metadata() throws IOException {
    try {
      return ((HasTableOperations) catalog.loadTable(identifier)).operations().current();
    } catch (RuntimeException e) {
      throw new IOException("Cannot read table " + identifier + ": " + e.getMessage(), e);
    }
  }

  static Optional<RunEpoch> epochIn(TableMetadata metadata, JobId jobId) {
    String value = metadata.properties().get(RunEpoch.key(jobId));
    return value == null ? Optional.empty() : Optional.of(RunEpoch.parse(jobId, value));
  }

  /** The claim's catalog attempts: each checks that the epoch it claims above is still the table's. */
  private static final class ClaimGuard extends ForwardingTableOperations {
    private final JobId jobId;
    private final Optional<RunEpoch> expected;

    ClaimGuard(TableOperations delegate, JobId jobId, Optional<RunEpoch> expected) {
      super(delegate);
      this.jobId = jobId;
      this.expected = expected;
    }

    @Override
    public void commit(TableMetadata base, TableMetadata metadata) {
      Optional<RunEpoch> now = epochIn(base, jobId);
      if (!now.equals(expected)) {
        throw new EpochMoved("the table holds " + now.map(RunEpoch::toString).orElse("no epoch") + " now");
      }
      delegate().commit(base, metadata);
    }
  }

  /** Another run claimed between this claim's read and its catalog attempt. */
  private static final class EpochMoved extends RuntimeException {
    EpochMoved(String message) {
      super(message);
    }
  }
}
