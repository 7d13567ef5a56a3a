package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.FencedException;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.OverwriteFiles;
import org.apache.iceberg.ReplacePartitions;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.SnapshotUpdate;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.Transactions;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.expressions.Expression;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commits one checkpoint as one snapshot, with the watermark property and the schema evolution its files need
 * ({@link SchemaChange}) in the same transaction, exactly once:
 * the idempotency check runs in every catalog attempt ({@link IdempotentOperations}), and a failure of unknown
 * effect is settled by reading the table back. One per committer (not thread-safe): it keeps the table it last
 * committed to and refreshes it at the next commit.
 */
final class TableCommitter {
  private static final Logger LOG = LoggerFactory.getLogger(TableCommitter.class);
  static final String WRITERS_KEY = "lakecommit.writers";
  /** Summary of a coalesced snapshot: the checkpoints it covers, oldest first (comma-separated). */
  static final String COALESCED_KEY = "lakecommit.coalesced-checkpoints";

  private final Catalog catalog;
  private final TableIdentifier identifier;
  private final CommitMode mode;
  private final Expression overwriteFilter;
  private final String branch;
  private final CommitMetrics metrics;
  private boolean idempotencyCheck = true;
  /**
   * The table as last read by a lookup or a commit that ended committed; refreshed, not reloaded, at the next
   * commit.
   */
  private volatile Table loaded;
  private IdempotentOperations.AttemptHook hook = IdempotentOperations.AttemptHook.NONE;
  /** The run epoch the commits must find in the table (0: not fenced). */
  private volatile long epoch;
  /** Set in the transaction of every commit, next to the watermark ({@link dev.lakecommit.core.SupportsCommitProperties}). */
  private volatile java.util.Map<String, String> commitProperties = java.util.Map.of();

  TableCommitter(Catalog catalog, TableIdentifier identifier, CommitMode mode, Expression overwriteFilter,
      String branch, CommitMetrics metrics) {
    this.catalog = catalog;
    this.identifier = identifier;
    this.mode = mode;
    this.overwriteFilter = overwriteFilter;
    this.branch = branch == null ? SnapshotRef.MAIN_BRANCH : branch;
    this.metrics = metrics;
  }

  /** Test-only: commit without the idempotency check; racing or replayed commits then duplicate rows. */
  TableCommitter idempotencyCheck(boolean enabled) {
    this.idempotencyCheck = enabled;
    return this;
  }

  /** Test-only: a hook before each catalog attempt. */
  TableCommitter attemptHook(IdempotentOperations.AttemptHook attemptHook) {
    this.hook = attemptHook;
    return this;
  }

  /** From now on commits only while the table holds {@code runEpoch} for the job. */
  void fence(long runEpoch) {
    this.epoch = runEpoch;
  }

  /** From now on every commit also sets these table properties in its transaction. */
  void commitProperties(java.util.Map<String, String> properties) {
    for (String key : properties.keySet()) {
      if (key.startsWith(CommitId.WATERMARK_KEY_PREFIX)
          || key.startsWith(dev.lakecommit.core.RunEpoch.EPOCH_KEY_PREFIX)) {
        throw new IllegalArgumentException(String.format(
            "Invalid commit property %s for table %s: watermarks and run epochs are the committer's own", key,
            identifier));
      }
    }
    this.commitProperties = java.util.Map.copyOf(properties);
  }

  /** The table's properties, read now; the next commit refreshes the table read here. */
  java.util.Map<String, String> currentProperties() {
    return freshTable().properties();
  }

  CommitMode mode() {
    return mode;
  }

  String branch() {
    return branch;
  }

  /**
   * The outcome of a commit the table holds already, found before anything is planned for it (committer manifests
   * written, files rewritten): looked for only while this committer has no table loaded — at its first commit (a
   * restored checkpoint's replay) and at the retry of a commit that did not end committed, the cases in which it may
   * be there. Empty otherwise, if the table cannot be read now (the commit meets that again), and without the
   * idempotency check.
   */
  Optional<CommitOutcome> committedBefore(CommitId id) {
    if (!idempotencyCheck || loaded != null) {
      return Optional.empty();
    }
    Table table;
    try {
      table = freshTable();
    } catch (RuntimeException e) {
      return Optional.empty();
    }
    return found(table, id);
  }

  /** The skipped outcome of a commit whose checkpoint the table's current metadata holds already, if it does. */
  private Optional<CommitOutcome> found(Table table, CommitId id) {
    return Watermarks.findCommitted(((HasTableOperations) table).operations().current(), id, branch)
        .map(where -> skipped(id, where, 0));
  }

  /**
   * Commits the changes as one snapshot, or finds them already committed.
   *
   * @throws PartiallyCommittedException for a coalesced commit of which the table holds some checkpoints: commit
   *     the remaining ones instead
   */
  CommitOutcome commit(CheckpointChanges changes) {
    CommitId id = changes.commitId();
    long start = System.nanoTime();
    Table table;
    try {
      table = freshTable();
    } catch (NoSuchTableException | ForbiddenException | NotAuthorizedException e) {
      return CommitOutcome.fatal(failure(id, e));
    } catch (RuntimeException e) {
      metrics.failed(id, e, false);
      return CommitOutcome.retryable(e);
    }
    CommitOutcome outcome = commit(table, changes, start);
    if (!(outcome instanceof CommitOutcome.Committed) && !(outcome instanceof CommitOutcome.AlreadyCommitted)) {
      loaded = null;
    }
    return outcome;
  }

  /**
   * The table as the catalog holds it now: loaded at the first lookup or commit, refreshed at later ones (a
   * refresh reads the metadata again only if it changed). Dropped after any commit that did not end committed,
   * so that the next attempt starts from a new load.
   */
  private Table freshTable() {
    Table table = loaded;
    if (table == null) {
      table = catalog.loadTable(identifier);
    } else {
      try {
        table.refresh();
      } catch (RuntimeException e) {
        // Whatever a refresh trips over (a dropped or replaced table, a lost connection), a load settles it.
        loaded = null;
        LOG.debug("Refreshing {} failed ({}); loading it again", identifier, e.toString());
        table = catalog.loadTable(identifier);
      }
    }
    if (((HasTableOperations) table).operations().current() == null) {
      loaded = null;
      throw new NoSuchTableException("Table does not exist: %s", identifier);
    }
    loaded = table;
    return table;
  }

  private CommitOutcome commit(Table table, CheckpointChanges changes, long start) {
    CommitId id = changes.commitId();
    TableOperations ops = ((HasTableOperations) table).operations();
    if (idempotencyCheck) {
      Optional<CommitOutcome> found = found(table, id);
      if (found.isPresent()) {
        return found.get();
      }
      IdempotentOperations.checkNoneCommitted(ops.current(), id, changes.firstCheckpointId(), branch);
    }
    IdempotentOperations guarded =
        new IdempotentOperations(ops, id, changes.firstCheckpointId(), branch, idempotencyCheck, hook, epoch,
            identifier.toString());
    try {
      Transaction txn = Transactions.newTransaction(table.name(), guarded);
      apply(txn, changes);
      org.apache.iceberg.UpdateProperties properties = txn.updateProperties()
          .set(CommitId.watermarkKey(id.jobId()), Long.toString(id.checkpointId()));
      commitProperties.forEach(properties::set);
      properties.commit();
      txn.commitTransaction();
      long snapshotId = txn.table().currentSnapshot() == null ? -1 : snapshotOf(txn.table(), branch);
      long duration = System.nanoTime() - start;
      metrics.committed(id, snapshotId, duration, guarded.attempts(), guarded.conflicts(), changes.fileCount(),
          changes.records(), changes.bytes());
      LOG.info("Committed {} to {} as snapshot {} ({} files, {} records, {} attempts) in {} ms", id, identifier,
          snapshotId, changes.fileCount(), changes.records(), guarded.attempts(), duration / 1_000_000);
      return CommitOutcome.committed("snapshot " + snapshotId);
    } catch (AlreadyCommittedException e) {
      return skipped(id, e.getMessage(), guarded.conflicts());
    } catch (FencedException e) {
      metrics.failed(id, e, false);
      LOG.warn("Commit of {} to {} refused: {}", id, identifier, e.getMessage());
      loaded = null;
      return CommitOutcome.fatal(e);
    } catch (PartiallyCommittedException e) {
      loaded = null;
      throw e;
    } catch (ForbiddenException | NotAuthorizedException | NoSuchTableException | ValidationException
        | IllegalArgumentException e) {
      return CommitOutcome.fatal(failure(id, e));
    } catch (CommitFailedException e) {
      // Iceberg's own conflict retries (commit.retry.* table properties) ran out: retry the commit later.
      metrics.failed(id, e, false);
      return CommitOutcome.retryable(e);
    } catch (CommitStateUnknownException e) {
      return settle(id, e);
    } catch (RuntimeException e) {
      // The catalog contract says other failures did not commit; reading back costs one load and is always safe.
      return settle(id, e);
    }
  }

  /** The last checkpoint of the job in the table, read now; the next commit refreshes the table read here. */
  OptionalLong lastCommitted(dev.lakecommit.core.JobId jobId) {
    Table table = freshTable();
    return Watermarks.committedUpTo(((HasTableOperations) table).operations().current(), jobId, branch);
  }

  private void apply(Transaction txn, CheckpointChanges changes) {
    CommitId id = changes.commitId();
    // First, so that the snapshot that adds the files already has the evolved schema as its schema.
    changes.schemaChange().applyTo(txn, id, identifier.toString());
    SnapshotUpdate<?> update;
    switch (mode) {
      case APPEND -> {
        AppendFiles append = txn.newFastAppend();
        changes.dataFiles().forEach(append::appendFile);
        changes.manifests().forEach(append::appendManifest);
        addedSizeOfManifests(append, changes);
        update = append;
      }
      case OVERWRITE_PARTITIONS -> {
        ReplacePartitions replace = txn.newReplacePartitions();
        allFiles(txn, changes).forEach(replace::addFile);
        update = replace;
      }
      case OVERWRITE_BY_FILTER -> {
        OverwriteFiles overwrite = txn.newOverwrite().overwriteByRowFilter(overwriteFilter);
        allFiles(txn, changes).forEach(overwrite::addFile);
        update = overwrite;
      }
      case UPSERT -> {
        // One row delta: the new rows and the deletes that replace older rows of their keys become visible
        // together; equality deletes get this snapshot's sequence number and so apply to older data only.
        RowDelta delta = txn.newRowDelta();
        allFiles(txn, changes).forEach(delta::addRows);
        changes.deleteFiles().forEach(delta::addDeletes);
        update = delta;
      }
      default -> throw new IllegalStateException("Unknown mode " + mode);
    }
    update.set(CommitId.JOB_ID_KEY, id.jobId().value());
    update.set(CommitId.CHECKPOINT_ID_KEY, Long.toString(id.checkpointId()));
    update.set(WRITERS_KEY, Integer.toString(changes.writers()));
    if (changes.coalesced()) {
      update.set(COALESCED_KEY, String.join(",", changes.checkpoints().stream().map(String::valueOf).toList()));
    }
    if (!SnapshotRef.MAIN_BRANCH.equals(branch)) {
      update.toBranch(branch);
    }
    update.commit();
  }

  /**
   * Iceberg counts the files and records of an appended manifest in the snapshot summary, but not their bytes
   * (a manifest records no file sizes in its header), so {@code added-files-size} would be missing and
   * {@code total-files-size}, which engines read as the table's size, would not grow. The staged files' sizes are
   * known: the summary gets them, and Iceberg adds them to the total as for added files. Only when every file comes
   * in a manifest: Iceberg writes the size of files added one by one itself.
   */
  private static void addedSizeOfManifests(AppendFiles append, CheckpointChanges changes) {
    if (!changes.manifests().isEmpty() && changes.dataFiles().isEmpty() && changes.deleteFiles().isEmpty()) {
      append.set(SnapshotSummary.ADDED_FILE_SIZE_PROP, Long.toString(changes.bytes()));
    }
  }

  private static Iterable<DataFile> allFiles(Transaction txn, CheckpointChanges changes) {
    java.util.List<DataFile> files = new java.util.ArrayList<>(changes.dataFiles());
    for (ManifestFile manifest : changes.manifests()) {
      try (var reader = org.apache.iceberg.ManifestFiles.read(manifest, txn.table().io(), txn.table().specs())) {
        reader.forEach(file -> files.add(file.copy()));
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException("Cannot read staged manifest " + manifest.path(), e);
      }
    }
    return files;
  }

  private static long snapshotOf(Table table, String branch) {
    var ref = table.refs().get(branch);
    return ref == null ? -1 : ref.snapshotId();
  }

  private CommitOutcome skipped(CommitId id, String where, int conflicts) {
    metrics.skipped(id, where, conflicts);
    LOG.info("{} is already in {} ({}); skipped", id, identifier, where);
    return CommitOutcome.alreadyCommitted(where);
  }

  /** Settles a commit of unknown effect by reading the table back; never by guessing. */
  private CommitOutcome settle(CommitId id, RuntimeException cause) {
    metrics.failed(id, cause, true);
    try {
      TableMetadata metadata = ((HasTableOperations) catalog.loadTable(identifier)).operations().current();
      Optional<String> found = Watermarks.findCommitted(metadata, id, branch);
      if (found.isPresent()) {
        LOG.warn("Commit of {} to {} failed with {} but the table holds it ({}): committed", id, identifier,
            cause.toString(), found.get());
        return CommitOutcome.committed("settled by reading back: " + found.get());
      }
      LOG.warn("Commit of {} to {} failed with {} and the table does not hold it: will retry", id, identifier,
          cause.toString());
      return CommitOutcome.retryable(cause);
    } catch (RuntimeException readBack) {
      cause.addSuppressed(readBack);
      LOG.warn("Commit of {} to {} failed with {} and the table cannot be read back: state unknown", id,
          identifier, cause.toString());
      return CommitOutcome.unknown(cause);
    }
  }

  private RuntimeException failure(CommitId id, RuntimeException cause) {
    metrics.failed(id, cause, false);
    return new IllegalStateException(
        String.format("Cannot commit %s to table %s: %s", id, identifier, cause.getMessage()), cause);
  }
}
