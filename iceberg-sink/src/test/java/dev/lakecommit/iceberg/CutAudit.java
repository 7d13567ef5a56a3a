package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * A multi-table job's tables read back as its cuts, for tests: each checkpoint a table holds, and every table as of
 * a checkpoint (its newest snapshot of a checkpoint at or below it).
 */
public final class CutAudit {
  private final Catalog catalog;
  private final Map<TableIdentifier, TableMetadata> tables = new LinkedHashMap<>();

  /** The tables as they are now; a table that does not exist is left out. */
  public CutAudit(Catalog catalog, Collection<TableIdentifier> tables) {
    this.catalog = catalog;
    for (TableIdentifier table : tables) {
      if (catalog.tableExists(table)) {
        this.tables.put(table, ((HasTableOperations) catalog.loadTable(table)).operations().current());
      }
    }
  }

  /** Every checkpoint a snapshot of any of the tables was committed for; each such snapshot names its cut. */
  public SortedSet<Long> checkpoints() {
    SortedSet<Long> checkpoints = new TreeSet<>();
    for (TableMetadata metadata : tables.values()) {
      for (Snapshot snapshot : metadata.snapshots()) {
        String checkpoint = snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY);
        if (checkpoint != null) {
          if (!snapshot.summary().containsKey(CutCommitter.CUT_TABLES_KEY)) {
            throw new AssertionError("Snapshot " + snapshot.snapshotId() + " of checkpoint " + checkpoint
                + " names no cut");
          }
          checkpoints.add(Long.parseLong(checkpoint));
        }
      }
    }
    return checkpoints;
  }

  /** Each table's rows as of the cut of {@code checkpoint}; a table without a snapshot by then has none. */
  public Map<TableIdentifier, List<Record>> at(long checkpoint) {
    Map<TableIdentifier, List<Record>> cut = new LinkedHashMap<>();
    tables.forEach((table, metadata) -> {
      Snapshot snapshot = newestAtOrBelow(metadata, checkpoint);
      cut.put(table, snapshot == null ? List.of() : rows(catalog.loadTable(table), snapshot.snapshotId()));
    });
    return cut;
  }

  /** The rows of {@code table} at a snapshot, or now if {@code snapshotId} is null. */
  public static List<Record> rows(Table table, Long snapshotId) {
    List<Record> rows = new ArrayList<>();
    if (snapshotId == null && table.currentSnapshot() == null) {
      return rows;
    }
    IcebergGenerics.ScanBuilder scan = IcebergGenerics.read(table);
    try (CloseableIterable<Record> records = snapshotId == null ? scan.build() : scan.useSnapshot(snapshotId)
        .build()) {
      records.forEach(rows::add);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return rows;
  }

  private static Snapshot newestAtOrBelow(TableMetadata metadata, long checkpoint) {
    if (metadata.currentSnapshot() == null) {
      return null;
    }
    for (Snapshot snapshot : SnapshotUtil.ancestorsOf(metadata.currentSnapshot().snapshotId(), metadata::snapshot)) {
      String id = snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY);
      if (id != null && Long.parseLong(id) <= checkpoint) {
        return snapshot;
      }
    }
    return null;
  }
}
