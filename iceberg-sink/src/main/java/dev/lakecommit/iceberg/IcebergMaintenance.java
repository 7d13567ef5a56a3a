package dev.lakecommit.iceberg;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.hadoop.HadoopCatalog;

/**
 * Maintenance of one Iceberg table that Lakecommit jobs write to: compaction of small data files, snapshot
 * expiry, orphan file removal and manifest rewrite. Each operation is its own Iceberg commit, safe to run while
 * jobs commit checkpoints (a conflicting operation is dropped, never forced; a checkpoint commit never fails
 * because of it) and safe to run again after a crash (everything it decides is derived from the table anew). Every
 * operation has a {@code plan...} form that changes nothing (the tool's {@code --dry-run}).
 *
 * <p>Reads the table from the catalog at every call; does not close the catalog.
 */
public final class IcebergMaintenance {
  /** Files of a run that may still commit them, and new files of concurrent commits, are younger than this. */
  public static final Duration DEFAULT_ORPHAN_AGE = Duration.ofDays(3);
  /** Data files added by the newest this many checkpoint commits are not compacted by default. */
  public static final int DEFAULT_KEEP_CHECKPOINTS = 10;
  /** Manifests are rewritten when the current snapshot has at least this many small ones. */
  public static final int DEFAULT_MIN_SMALL_MANIFESTS = 10;

  private final Catalog catalog;
  private final TableIdentifier identifier;
  private Runnable beforeCompactionCommit = () -> {};
  private Runnable beforeOrphanDelete = () -> {};

  private IcebergMaintenance(Catalog catalog, TableIdentifier identifier) {
    this.catalog = catalog;
    this.identifier = identifier;
  }

  /**
   * Maintenance of {@code identifier} in {@code catalog}, which the caller keeps open while it is used. A Hadoop
   * catalog must come from {@link CatalogLoader#load}: Iceberg's own {@code HadoopCatalog} does not keep its commits
   * apart from those of Lakecommit's jobs on the same table (two commits can rename onto one version file, and one
   * of them is lost), so it is refused.
   */
  public static IcebergMaintenance of(Catalog catalog, TableIdentifier identifier) {
    if (catalog instanceof HadoopCatalog && !(catalog instanceof GuardedHadoopCatalog)) {
      throw new IllegalArgumentException("Maintenance of " + identifier + ": catalog " + catalog.name() + " is"
          + " Iceberg's own HadoopCatalog, whose commits are not kept apart from a Lakecommit job's commits to the"
          + " same table (one of two racing commits can be lost); load it with CatalogLoader.load(name, properties,"
          + " conf) instead");
    }
    return new IcebergMaintenance(catalog, identifier);
  }

  /** The table as it is now in the catalog. */
  public Table table() {
    return catalog.loadTable(identifier);
  }

  /**
   * What {@link #compact} would rewrite: per partition, bins of small data files (below 3/4 of the table's
   * {@code write.target-file-size-bytes}) added before the newest {@code keepCheckpoints} checkpoint commits.
   */
  public Compaction.Plan planCompaction(int keepCheckpoints) {
    return Compaction.plan(table(), keepCheckpoints);
  }

  /**
   * Rewrites each bin of the plan into one file and commits all of them in one {@code RewriteFiles} snapshot
   * validated from the snapshot the plan read: rows deleted since stay deleted (the new files get the plan's data
   * sequence number, so later equality deletes apply to them), and a rewrite that conflicts with a concurrent one
   * or with new position deletes is dropped and its new files deleted. A commit of unknown outcome keeps its files
   * (orphan removal finds them if it did not land).
   *
   * @throws IOException if a file cannot be read or written (nothing is committed; new files are deleted)
   */
  public Compaction.Result compact(int keepCheckpoints) throws IOException {
    Table table = table();
    return Compaction.run(table, this::table, Compaction.plan(table, keepCheckpoints), beforeCompactionCommit);
  }

  /**
   * What {@link #expireSnapshots} would remove: snapshots older than {@code olderThan} beyond the newest
   * {@code retainLast} of each branch, except the history a job's restart lookup needs (see
   * {@link SnapshotExpiry}).
   */
  public SnapshotExpiry.Plan planExpiry(Instant olderThan, int retainLast) {
    return SnapshotExpiry.plan(table(), olderThan, retainLast);
  }

  /** Expires what {@link #planExpiry} names, in one commit, and deletes the files only they referenced. */
  public SnapshotExpiry.Result expireSnapshots(Instant olderThan, int retainLast) {
    return SnapshotExpiry.run(this::table, olderThan, retainLast);
  }

  /**
   * Files under the table's locations referenced by no snapshot and older than {@code minAge}, except staged files
   * a run may still commit (see {@link OrphanFiles}).
   */
  public OrphanFiles.Plan planOrphans(Duration minAge) throws IOException {
    return OrphanFiles.plan(table(), minAge, Instant.now());
  }

  /** Deletes what {@link #planOrphans} names; a file already gone counts as deleted. */
  public OrphanFiles.Result removeOrphans(Duration minAge) throws IOException {
    OrphanFiles.Plan plan = OrphanFiles.plan(table(), minAge, Instant.now());
    beforeOrphanDelete.run();
    return OrphanFiles.delete(table(), plan);
  }

  /** The current snapshot's small manifests if there are at least {@code minSmall} of them, else none. */
  public ManifestRewrite.Plan planManifestRewrite(int minSmall) {
    return ManifestRewrite.plan(table(), minSmall);
  }

  /** Rewrites the small manifests of the plan, clustered by partition, in one commit. */
  public ManifestRewrite.Result rewriteManifests(int minSmall) {
    return ManifestRewrite.run(this::table, minSmall);
  }

  /**
   * The table's maintenance lock (a lease in the table, see {@link MaintenanceLock}): one maintenance task at a
   * time per table, across jobs and processes. The operations above do not take it; callers that run them
   * unattended do ({@link #round}, the tool's {@code maintain} and {@code --maintain-every}).
   */
  public MaintenanceLock lock(Duration leaseDuration) {
    return MaintenanceLock.of(catalog, identifier, leaseDuration);
  }

  /**
   * One round of the steps {@code options} asks for, under the table's lease: skipped (nothing done) if another
   * holds it. {@code who} names this round's holder in the table and in messages (job, process, host).
   *
   * @throws IOException if a step cannot read or write a file; the lease is released first
   */
  public MaintenanceRound.Result round(MaintenanceOptions options, String who) throws IOException {
    return MaintenanceRound.run(this, lock(options.leaseDuration()), options, who);
  }

  /** Test hook: runs after a compaction wrote its files and before it commits (to crash or race there). */
  IcebergMaintenance beforeCompactionCommit(Runnable hook) {
    this.beforeCompactionCommit = hook;
    return this;
  }

  /** Test hook: runs after orphans were planned and before they are deleted. */
  IcebergMaintenance beforeOrphanDelete(Runnable hook) {
    this.beforeOrphanDelete = hook;
    return this;
  }

  @Override
  public String toString() {
    return "IcebergMaintenance[" + identifier + "]";
  }
}
