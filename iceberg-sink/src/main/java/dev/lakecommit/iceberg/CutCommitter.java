package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.runtime.CutRecords;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.SnapshotUpdate;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.UpdateProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.util.SnapshotUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A job's checkpoints over many tables of one catalog, each one a <b>cut</b> (DESIGN.md rule 14). Where the catalog
 * commits several tables at once, the checkpoint's files land in every table it touched in one
 * {@link MultiTableCommit} — an Iceberg JDBC catalog's database transaction of compare-and-set pointer swaps, or a
 * REST catalog's multi-table commit — so a reader of the catalog sees all of them or none. Elsewhere
 * ({@link TableByTableCommit}) each table commits on its own and then a cut record naming every table's snapshot of
 * the checkpoint is published in one atomic write ({@link CutRecords}); a reader reads the tables as the newest
 * record names them, and a replay of the checkpoint (the next run's, or a retry) commits what is missing and
 * publishes the record.
 *
 * <p>Keyed by (job id, checkpoint id) as a one-table commit is: every table's snapshot carries both in its summary
 * and the job's watermark property moves in the same change. The check runs again on the fresh metadata of every
 * attempt, so a replayed, retried or raced cut adds nothing to a table that holds it. The run's epoch is claimed in
 * every table ({@link #claim}); a table commits its part of a cut only while it holds that epoch, and a cut whose
 * tables do not all hold it commits nothing where the catalog is atomic, and publishes no record elsewhere. The
 * job's position (the cut's properties: source offsets, say) goes into every table the cut touches, so the newest
 * cut ({@link #lastCut}) carries it whole.
 */
public final class CutCommitter implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CutCommitter.class);
  /** In the summary of each snapshot of a cut: how many tables the cut touched. */
  static final String CUT_TABLES_KEY = "lakecommit.cut-tables";
  private static final int CLAIM_ATTEMPTS = 10;
  /** Attempts of one cut's commit against other writers' changes before it is retried as a whole. */
  private static final int COMMIT_ATTEMPTS = 4;

  private final Catalog catalog;
  private final MultiTableCommit commit;
  private final CutRecords records;
  private boolean idempotencyCheck = true;
  private Runnable beforeRecord = () -> {};

  /**
   * For a catalog that commits several tables at once.
   *
   * @param catalog the catalog, for reading tables back
   * @param commit the multi-table commit on the same catalog
   * @throws IllegalArgumentException if {@code commit} is not atomic (it needs cut records)
   */
  public CutCommitter(Catalog catalog, MultiTableCommit commit) {
    this(catalog, commit, null);
  }

  /**
   * @param records where the cut records go; required where {@code commit} is not atomic, unused where it is
   */
  public CutCommitter(Catalog catalog, MultiTableCommit commit, CutRecords records) {
    this.catalog = Objects.requireNonNull(catalog, "catalog");
    this.commit = Objects.requireNonNull(commit, "commit");
    if (!commit.atomic() && records == null) {
      throw new IllegalArgumentException(commit.describe() + " does not commit several tables at once: a job"
          + " that writes several of its tables needs a place for its cut records");
    }
    this.records = commit.atomic() ? null : records;
  }

  /**
   * The catalog property that declares a REST catalog's multi-table commit atomic:
   * {@code lakecommit.rest.atomic-multi-table-commit=true}. Apache Polaris and Lakekeeper apply a multi-table commit
   * atomically; Iceberg's own reference server commits its tables one after the other. Without it a REST catalog's
   * cuts are recorded.
   */
  public static final String REST_ATOMIC_KEY = "lakecommit.rest.atomic-multi-table-commit";

  /**
   * The cut committer a catalog allows: one atomic commit per cut on a JDBC catalog (its database transaction) and
   * on a REST catalog declared atomic ({@link #REST_ATOMIC_KEY}: its multi-table commit); elsewhere tables commit
   * one by one and each cut is a record in {@code records}.
   *
   * @param properties the catalog's properties, as it was built from them
   * @param requireAtomic refuse a catalog that cannot commit several tables at once
   * @throws IllegalArgumentException naming the catalog if {@code requireAtomic} and it cannot
   */
  public static CutCommitter forCatalog(Catalog catalog, Map<String, String> properties, CutRecords records,
      boolean requireAtomic) {
    MultiTableCommit commit;
    String type = properties.getOrDefault(org.apache.iceberg.CatalogUtil.ICEBERG_CATALOG_TYPE, "");
    boolean rest = catalog instanceof org.apache.iceberg.rest.RESTCatalog;
    if (rest && Boolean.parseBoolean(properties.get(REST_ATOMIC_KEY))) {
      commit = RestMultiTableCommit.of(catalog, COMMIT_ATTEMPTS);
    } else if (catalog instanceof org.apache.iceberg.jdbc.JdbcCatalog) {
      String io = properties.getOrDefault(org.apache.iceberg.CatalogProperties.FILE_IO_IMPL,
          "org.apache.iceberg.hadoop.HadoopFileIO");
      commit = JdbcMultiTableCommit.of(catalog.name(), properties,
          org.apache.iceberg.CatalogUtil.loadFileIO(io, properties, HadoopConfs.from(properties)), COMMIT_ATTEMPTS)
          .closingIo();
    } else if (requireAtomic) {
      throw new IllegalArgumentException("Catalog " + catalog.name() + (type.isEmpty() ? "" : " (type " + type
          + ")") + " cannot commit several tables at once — only JDBC catalogs, and REST catalogs whose server"
          + " applies multi-table commits atomically (declared with -C " + REST_ATOMIC_KEY + "=true), can — and an"
          + " atomic cut was required; without that requirement each cut is a record published after its tables'"
          + " commits");
    } else {
      commit = new TableByTableCommit(catalog, COMMIT_ATTEMPTS);
    }
    return new CutCommitter(catalog, commit, records);
  }

  /** Releases what the multi-table commit holds (a JDBC catalog's file IO that {@link #forCatalog} opened). */
  @Override
  public void close() {
    commit.close();
  }

  /** How a cut becomes visible, for the run's start message. */
  public String mode() {
    return records == null ? "one atomic commit per cut (" + commit.describe() + ")"
        : "tables commit one by one; each cut is a record published last at " + records.location();
  }

  /** Test-only: runs after the tables' commits of a cut, before its record is published. */
  CutCommitter beforeRecord(Runnable hook) {
    this.beforeRecord = hook;
    return this;
  }

  /** Test-only: cut without the idempotency check; a replayed cut then adds its files again. */
  CutCommitter idempotencyCheck(boolean enabled) {
    this.idempotencyCheck = enabled;
    return this;
  }

  /** A committed cut: its checkpoint, each table's snapshot of it (or before it), and its properties. */
  public record Cut(long checkpointId, Map<TableIdentifier, Long> snapshots, Map<String, String> properties) {}

  /**
   * Claims the next epoch of the job in every table: one above the highest any of them holds, set in all of them
   * in one multi-table commit (table by table where the catalog has none) whose every table's change finds the
   * epoch it read still there. Of two runs claiming at once, one wins and the other claims above it; from then on
   * every cut of an older run is refused.
   */
  public RunEpoch claim(JobId jobId, String run, Collection<TableIdentifier> tables) {
    RuntimeException last = null;
    for (int attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
      long highest = 0;
      for (TableIdentifier table : tables) {
        highest = Math.max(highest, epochIn(metadata(table), jobId));
      }
      RunEpoch claim = new RunEpoch(highest + 1, run);
      try {
        claimAt(jobId, claim, tables);
        return claim;
      } catch (CommitFailedException e) {
        last = e;
        LOG.info("Claim of epoch {} for job {} met another claim ({}); claiming above it", claim.epoch(), jobId,
            e.getMessage());
      }
    }
    throw new IllegalStateException("Job " + jobId + " could not claim an epoch in " + tables + " in "
        + CLAIM_ATTEMPTS + " attempts: other runs kept claiming", last);
  }

  /**
   * Claims exactly {@code claim} in every table at once (table by table where the catalog commits no several
   * tables together), each table's change finding an epoch below it there.
   *
   * @throws CommitFailedException if a table holds {@code claim}'s epoch or a higher one: claim above it
   */
  public void claimAt(JobId jobId, RunEpoch claim, Collection<TableIdentifier> tables) {
    if (tables.isEmpty()) {
      return;
    }
    Map<TableIdentifier, MultiTableCommit.TableChange> changes = new LinkedHashMap<>();
    for (TableIdentifier table : tables) {
      changes.put(table, transaction -> {
        if (epochIn(current(transaction), jobId) >= claim.epoch()) {
          throw new CommitFailedException("Another run of job %s claimed epoch %s in %s first", jobId,
              claim.epoch(), table);
        }
        setEpoch(transaction, jobId, claim);
      });
    }
    commit.commit(changes);
    LOG.info("Job {} claimed {} in {} tables of {} at once", jobId, claim, tables.size(), commit.describe());
  }

  /**
   * Carries a run's epoch into a table the run is about to stage into for the first time (a table created or
   * first written mid-run, DESIGN.md rule 15): sets it where the table holds an older epoch of the job or none,
   * leaves it where the table holds it already.
   *
   * @throws FencedException if the table holds a newer epoch of the job, or the same epoch claimed by another run
   */
  public void carry(JobId jobId, RunEpoch epoch, TableIdentifier table) {
    for (int attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
      if (epoch.value().equals(metadata(table).properties().get(RunEpoch.key(jobId)))) {
        return;
      }
      try {
        commit.commit(Map.of(table, transaction -> {
          String now = current(transaction).properties().get(RunEpoch.key(jobId));
          if (epoch.value().equals(now)) {
            return;
          }
          long held = now == null ? 0 : RunEpoch.parse(jobId, now).epoch();
          if (held >= epoch.epoch()) {
            // a newer run, or another run that claimed the same epoch at the same moment
            throw new FencedException(table.toString(), jobId, epoch.epoch(), RunEpoch.parse(jobId, now));
          }
          setEpoch(transaction, jobId, epoch);
        }));
        return;
      } catch (CommitFailedException e) {
        LOG.info("Carrying {} of job {} into {} met another change ({}); reading it again", epoch, jobId, table,
            e.getMessage());
      }
    }
    throw new IllegalStateException("Could not carry " + epoch + " of job " + jobId + " into " + table + " in "
        + CLAIM_ATTEMPTS + " attempts: the table kept changing");
  }

  private void setEpoch(Transaction transaction, JobId jobId, RunEpoch claim) {
    transaction.updateProperties().set(RunEpoch.key(jobId), claim.value()).commit();
    if (commit.conflictsOnlyOnSnapshots()) {
      // a snapshot that adds nothing: every cut based on the table before the claim now conflicts
      transaction.newFastAppend().set(IcebergTarget.CLAIM_KEY, claim.value()).commit();
    }
  }

  /**
   * Commits checkpoint {@code id} as one cut: each table's files as one snapshot of it, all visible at once (or,
   * table by table, then its record), or finds the cut there already. A failure is {@link CommitOutcome.Fatal} (its
   * staged files may go) only while no table of the cut holds it; otherwise the outcome keeps the files.
   *
   * @param epoch the run's epoch, which every table must hold (0: not fenced)
   * @param files each table's data files of the checkpoint, at least one table
   * @param properties set in every table the cut touches, in the same change (the job's position)
   */
  public CommitOutcome commit(CommitId id, long epoch, Map<TableIdentifier, List<DataFile>> files,
      Map<String, String> properties) {
    return commit(id, epoch, files, Map.of(), properties);
  }

  /**
   * As {@link #commit(CommitId, long, Map, Map)}, each table of {@code schemaChanges} evolving in the same change as
   * its files land ({@link SchemaChange}): no state of a table has the new columns without the files or the files
   * without the columns.
   */
  CommitOutcome commit(CommitId id, long epoch, Map<TableIdentifier, List<DataFile>> files,
      Map<TableIdentifier, SchemaChange> schemaChanges, Map<String, String> properties) {
    return commit(id, epoch, files, Map.of(), schemaChanges, properties);
  }

  /**
   * As {@link #commit(CommitId, long, Map, Map, Map)}, each table of {@code deletes} taking its files as one row
   * delta with those delete files (a table written by key): its new rows and the deletes that replace or remove
   * older rows of their keys land in the same snapshot.
   */
  CommitOutcome commit(CommitId id, long epoch, Map<TableIdentifier, List<DataFile>> files,
      Map<TableIdentifier, List<DeleteFile>> deletes, Map<TableIdentifier, SchemaChange> schemaChanges,
      Map<String, String> properties) {
    for (String key : properties.keySet()) {
      if (key.startsWith(CommitId.WATERMARK_KEY_PREFIX) || key.startsWith(RunEpoch.EPOCH_KEY_PREFIX)) {
        throw new IllegalArgumentException("Invalid cut property " + key
            + ": watermarks and run epochs are the committer's own");
      }
    }
    if (files.isEmpty()) {
      throw new IllegalArgumentException("A cut of " + id + " needs at least one table");
    }
    long start = System.nanoTime();
    Map<TableIdentifier, MultiTableCommit.TableChange> changes = new LinkedHashMap<>();
    files.forEach((table, dataFiles) -> changes.put(table, transaction -> {
      TableMetadata base = current(transaction);
      if (idempotencyCheck && Watermarks.findCommitted(base, id, SnapshotRef.MAIN_BRANCH).isPresent()) {
        return; // no change: this table is left out of the commit
      }
      IdempotentOperations.checkEpoch(base, id.jobId(), epoch, table.toString());
      schemaChanges.getOrDefault(table, SchemaChange.NONE).applyTo(transaction, id, table.toString());
      List<DeleteFile> deleteFiles = deletes.getOrDefault(table, List.of());
      SnapshotUpdate<?> snapshot;
      if (deleteFiles.isEmpty()) {
        AppendFiles append = transaction.newFastAppend();
        dataFiles.forEach(append::appendFile);
        snapshot = append;
      } else {
        // equality deletes get this snapshot's sequence number and so apply to the table's older rows only
        RowDelta delta = transaction.newRowDelta();
        dataFiles.forEach(delta::addRows);
        deleteFiles.forEach(delta::addDeletes);
        snapshot = delta;
      }
      snapshot.set(CommitId.JOB_ID_KEY, id.jobId().value());
      snapshot.set(CommitId.CHECKPOINT_ID_KEY, Long.toString(id.checkpointId()));
      snapshot.set(CUT_TABLES_KEY, Integer.toString(files.size()));
      snapshot.commit();
      UpdateProperties update = transaction.updateProperties()
          .set(CommitId.watermarkKey(id.jobId()), Long.toString(id.checkpointId()));
      properties.forEach(update::set);
      update.commit();
    }));
    try {
      if (records != null) {
        // Table by table, a run fenced in its last table would have committed the others: every table is checked
        // first. A claim landing while the tables commit is still refused at its table; the cut then has no record.
        for (TableIdentifier table : files.keySet()) {
          IdempotentOperations.checkEpoch(metadata(table), id.jobId(), epoch, table.toString());
        }
      }
      MultiTableCommit.Result result = commit.commit(changes);
      long ms = (System.nanoTime() - start) / 1_000_000;
      CommitOutcome outcome;
      if (result.metadataLocations().isEmpty()) {
        LOG.info("{} is already in all {} tables of its cut; skipped", id, files.size());
        outcome = CommitOutcome.alreadyCommitted("all " + files.size() + " tables hold it");
      } else {
        LOG.info("Committed {} as one cut over {} tables ({} held it already, {} attempts) in {} ms", id,
            files.size(), files.size() - result.metadataLocations().size(), result.attempts(), ms);
        outcome = CommitOutcome.committed("cut of " + result.metadataLocations().size() + " tables");
      }
      return recorded(id, files.keySet(), properties, outcome);
    } catch (FencedException e) {
      LOG.warn("Cut {} refused: {}", id, e.getMessage());
      return fatalUnlessHeld(id, files.keySet(), e);
    } catch (NoSuchTableException | ForbiddenException | NotAuthorizedException | IllegalArgumentException
        | IllegalStateException | org.apache.iceberg.exceptions.BadRequestException e) {
      return fatalUnlessHeld(id, files.keySet(), new IllegalStateException("Cannot commit " + id + " as one cut"
          + " over " + files.keySet() + ": " + e.getMessage(), e));
    } catch (UnsupportedOperationException e) {
      return fatalUnlessHeld(id, files.keySet(), new IllegalStateException(commit.describe() + " does not commit"
          + " several tables at once (" + e.getMessage() + "), which a cut over " + files.size() + " tables needs",
          e));
    } catch (CommitFailedException e) {
      // refused before anything of this attempt was visible (a conflict, or a database that could not be reached)
      return CommitOutcome.retryable(e);
    } catch (RuntimeException e) {
      // a lost answer, a failed request: what landed is read back
      return recorded(id, files.keySet(), properties, settle(id, files.keySet(), e));
    }
  }

  /** A cut whose answer was lost: read back. In every table: committed; in none: retry. */
  private CommitOutcome settle(CommitId id, Collection<TableIdentifier> tables, RuntimeException cause) {
    int holding;
    try {
      holding = holding(id, tables);
    } catch (RuntimeException readBack) {
      cause.addSuppressed(readBack);
      return CommitOutcome.unknown(cause);
    }
    if (holding == tables.size()) {
      LOG.warn("Cut {} failed with {} but every table holds it: committed", id, cause.toString());
      return CommitOutcome.committed("settled by reading back " + holding + " tables");
    }
    if (holding == 0 || records != null) {
      // table by table, some tables holding it is where a failure leaves a cut: the replay commits the others
      return CommitOutcome.retryable(cause);
    }
    return CommitOutcome.unknown(new IllegalStateException(String.format("Cut %s is in %d of its %d tables after"
        + " a failed commit: %s did not apply the cut atomically", id, holding, tables.size(), commit.describe()),
        cause));
  }

  /** Fatal if no table holds the cut (nothing of it is visible, its files may go), else unknown (they stay). */
  CommitOutcome fatalUnlessHeld(CommitId id, Collection<TableIdentifier> tables, RuntimeException cause) {
    try {
      int holding = holding(id, tables);
      if (holding == 0) {
        // a fenced run's cut keeps its FencedException, which the runtime reports as the run being fenced
        return CommitOutcome.fatal(cause instanceof FencedException ? cause : new IllegalStateException(
            cause.getMessage() + "; nothing of " + id + " is visible", cause));
      }
      return CommitOutcome.unknown(new IllegalStateException(cause.getMessage() + "; " + holding + " of the "
          + tables.size() + " tables hold " + id + " already, so its files stay", cause));
    } catch (RuntimeException readBack) {
      cause.addSuppressed(readBack);
      return CommitOutcome.unknown(cause);
    }
  }

  private int holding(CommitId id, Collection<TableIdentifier> tables) {
    int holding = 0;
    for (TableIdentifier table : tables) {
      if (Watermarks.findCommitted(metadata(table), id, SnapshotRef.MAIN_BRANCH).isPresent()) {
        holding++;
      }
    }
    return holding;
  }

  /**
   * Where cuts are recorded: once every table holds the checkpoint, publishes its record naming each table's
   * snapshot of it, with the job's position. A record that cannot be published makes the commit retryable: the
   * tables hold the checkpoint, and its replay publishes the record.
   */
  private CommitOutcome recorded(CommitId id, Collection<TableIdentifier> tables, Map<String, String> properties,
      CommitOutcome outcome) {
    if (records == null || !(outcome instanceof CommitOutcome.Committed
        || outcome instanceof CommitOutcome.AlreadyCommitted)) {
      return outcome;
    }
    beforeRecord.run();
    java.util.SortedMap<String, String> versions = new TreeMap<>();
    try {
      for (TableIdentifier table : tables) {
        Snapshot snapshot = newestOfJob(metadata(table), id.jobId(), id.checkpointId());
        if (snapshot == null || !Long.toString(id.checkpointId())
            .equals(snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY))) {
          return CommitOutcome.unknown(new IllegalStateException("Table " + table + " does not show " + id
              + " in its history after its commit (expired or rolled back?): no cut record is published"));
        }
        versions.put(TableNames.encode(table), "snapshot " + snapshot.snapshotId());
      }
      records.publish(new CutRecords.Cut(id.jobId(), id.checkpointId(), versions, new TreeMap<>(properties)));
      LOG.info("Published the cut record of {} over {} tables at {}", id, tables.size(), records.location());
      return outcome;
    } catch (java.io.IOException | RuntimeException e) {
      LOG.warn("The tables hold {} but its cut record could not be published at {}: {}; retrying publishes it", id,
          records.location(), e.toString());
      return CommitOutcome.retryable(e);
    }
  }

  /**
   * The job's newest cut among {@code tables}: the highest checkpoint any of them holds, each table's newest
   * snapshot of the job at or below it, and the cut's properties as that table holds them. Empty if none holds
   * a checkpoint of the job.
   */
  public Optional<Cut> lastCut(JobId jobId, Collection<TableIdentifier> tables, Collection<String> propertyKeys) {
    if (records != null) {
      return lastRecordedCut(jobId, tables, propertyKeys);
    }
    Map<TableIdentifier, TableMetadata> read = new TreeMap<>(Comparator.comparing(TableIdentifier::toString));
    for (TableIdentifier table : tables) {
      read.put(table, metadata(table));
    }
    long newest = -1;
    TableMetadata holder = null;
    for (TableMetadata metadata : read.values()) {
      OptionalLong upTo = Watermarks.committedUpTo(metadata, jobId, SnapshotRef.MAIN_BRANCH);
      if (upTo.isPresent() && upTo.getAsLong() > newest) {
        newest = upTo.getAsLong();
        holder = metadata;
      }
    }
    if (holder == null) {
      return Optional.empty();
    }
    Map<TableIdentifier, Long> snapshots = new LinkedHashMap<>();
    for (Map.Entry<TableIdentifier, TableMetadata> table : read.entrySet()) {
      Snapshot snapshot = newestOfJob(table.getValue(), jobId, newest);
      if (snapshot != null) {
        snapshots.put(table.getKey(), snapshot.snapshotId());
      }
    }
    Map<String, String> properties = new LinkedHashMap<>();
    for (String key : propertyKeys) {
      String value = holder.properties().get(key);
      if (value != null) {
        properties.put(key, value);
      }
    }
    return Optional.of(new Cut(newest, snapshots, properties));
  }

  /**
   * The newest cut record: its tables' snapshots, and those of the job's other tables as they were at its checkpoint
   * (each one's newest snapshot of the job at or below it: every commit of the job up to a recorded checkpoint is
   * final), and the properties asked for.
   */
  private Optional<Cut> lastRecordedCut(JobId jobId, Collection<TableIdentifier> tables,
      Collection<String> propertyKeys) {
    Optional<CutRecords.Cut> last;
    try {
      last = records.last();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("Cannot read the cut records at " + records.location(), e);
    }
    return last.map(record -> {
      if (!record.jobId().equals(jobId)) {
        throw new IllegalStateException("The cut records at " + records.location() + " are job " + record.jobId()
            + "'s, not " + jobId + "'s: give each job a place of its own for its cut records");
      }
      Map<TableIdentifier, Long> snapshots = new LinkedHashMap<>();
      record.tables().forEach((table, version) -> snapshots.put(TableNames.decode(table),
          Long.parseLong(version.substring("snapshot ".length()))));
      for (TableIdentifier table : tables) {
        if (!snapshots.containsKey(table)) {
          Snapshot snapshot = newestOfJob(metadata(table), jobId, record.checkpointId());
          if (snapshot != null) {
            snapshots.put(table, snapshot.snapshotId());
          }
        }
      }
      Map<String, String> properties = new LinkedHashMap<>();
      for (String key : propertyKeys) {
        String value = record.properties().get(key);
        if (value != null) {
          properties.put(key, value);
        }
      }
      return new Cut(record.checkpointId(), snapshots, properties);
    });
  }

  private static Snapshot newestOfJob(TableMetadata metadata, JobId jobId, long atMost) {
    Snapshot head = metadata.currentSnapshot();
    if (head == null) {
      return null;
    }
    for (Snapshot snapshot : SnapshotUtil.ancestorsOf(head.snapshotId(), metadata::snapshot)) {
      Map<String, String> summary = snapshot.summary();
      if (summary != null && jobId.value().equals(summary.get(CommitId.JOB_ID_KEY))) {
        String checkpoint = summary.get(CommitId.CHECKPOINT_ID_KEY);
        if (checkpoint != null && Long.parseLong(checkpoint) <= atMost) {
          return snapshot;
        }
      }
    }
    return null;
  }

  private TableMetadata metadata(TableIdentifier table) {
    return ((HasTableOperations) catalog.loadTable(table)).operations().current();
  }

  private static TableMetadata current(Transaction transaction) {
    return ((HasTableOperations) transaction.table()).operations().current();
  }

  private static long epochIn(TableMetadata metadata, JobId jobId) {
    String value = metadata.properties().get(RunEpoch.key(jobId));
    return value == null ? 0 : RunEpoch.parse(jobId, value).epoch();
  }
}
