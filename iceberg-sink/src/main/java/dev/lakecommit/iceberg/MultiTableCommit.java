package dev.lakecommit.iceberg;

import java.util.Map;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * One commit over several tables of one catalog. Where it is {@link #atomic}, every table's change shows at once or
 * none does: an Iceberg JDBC catalog's database transaction ({@link JdbcMultiTableCommit}), or a REST catalog's
 * multi-table commit on a server that applies it atomically ({@link RestMultiTableCommit}). Otherwise
 * ({@link TableByTableCommit}) each table shows its change when its own commit lands.
 */
public interface MultiTableCommit extends AutoCloseable {
  /**
   * A change of one table, made on a transaction of it; made again, on fresh metadata, after a conflict. A change
   * that changes nothing leaves its table out of the commit.
   */
  @FunctionalInterface
  interface TableChange {
    void apply(Transaction transaction);
  }

  /** What a commit did: each changed table's new metadata location (where known), and the attempts it took. */
  record Result(Map<TableIdentifier, String> metadataLocations, int attempts) {}

  /**
   * Makes every change: all at once or none where the commit is {@link #atomic}, else table by table.
   *
   * @throws org.apache.iceberg.exceptions.CommitFailedException if other writers' changes kept conflicting
   *     (nothing of this commit is visible)
   * @throws org.apache.iceberg.exceptions.CommitStateUnknownException if the catalog's answer was lost (read the
   *     tables back before trying again)
   * @throws org.apache.iceberg.exceptions.NoSuchTableException if a table is not in the catalog
   */
  Result commit(Map<TableIdentifier, TableChange> changes);

  /** The catalog, for messages: its name and kind. */
  String describe();

  /**
   * Whether the catalog sees a conflict only where a table's branch moved (a REST catalog checks the requirements
   * the client sends: the branch's snapshot, not its properties). A change that must conflict with every later
   * commit based on the metadata before it — a claim of the job's epoch — then also moves the branch.
   */
  default boolean conflictsOnlyOnSnapshots() {
    return false;
  }

  /**
   * Whether every table's change shows at once. False for {@link TableByTableCommit}: each table shows its change
   * when its own commit lands, and a reader needs the cut record to see one checkpoint of all of them.
   */
  default boolean atomic() {
    return true;
  }

  /** Releases what the commit holds; the default holds nothing. */
  @Override
  default void close() {}
}
