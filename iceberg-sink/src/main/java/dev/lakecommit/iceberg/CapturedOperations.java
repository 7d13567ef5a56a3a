package dev.lakecommit.iceberg;

import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.exceptions.CommitFailedException;

/**
 * A table's operations as loaded, except that a transaction's commit is kept rather than made, and a refresh does
 * not reload: the caller commits {@link #updated} from exactly {@link #base} itself (a catalog's compare-and-swap,
 * or a REST request with the base's requirements), so that whatever the change checked of the base holds where it
 * lands.
 */
final class CapturedOperations extends ForwardingTableOperations {
  final TableMetadata base;
  TableMetadata updated;

  CapturedOperations(TableOperations delegate) {
    super(delegate);
    this.base = delegate.current();
  }

  @Override
  public TableMetadata current() {
    return updated != null ? updated : base;
  }

  @Override
  public TableMetadata refresh() {
    return current();
  }

  @Override
  public void commit(TableMetadata from, TableMetadata metadata) {
    if (from != base) {
      throw new CommitFailedException("Cannot commit: stale table metadata");
    }
    updated = metadata;
  }

  /**
   * A change that was never committed: deletes the manifest list its new snapshot wrote (its manifests go with
   * orphan removal). Best effort.
   */
  void discard() {
    if (updated == null) {
      return;
    }
    org.apache.iceberg.Snapshot snapshot = updated.currentSnapshot();
    org.apache.iceberg.Snapshot before = base.currentSnapshot();
    if (snapshot != null && (before == null || snapshot.snapshotId() != before.snapshotId())) {
      try {
        io().deleteFile(snapshot.manifestListLocation());
      } catch (RuntimeException e) {
        org.slf4j.LoggerFactory.getLogger(CapturedOperations.class).debug(
            "Could not delete the unpublished manifest list {}", snapshot.manifestListLocation(), e);
      }
    }
  }
}
