package dev.lakecommit.iceberg;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.Transactions;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Several tables' changes committed one after the other, each with its catalog's own compare-and-swap (Hadoop,
 * Hive, Glue, any catalog): not atomic over the tables ({@link #atomic} is false). Each table's change is made on
 * the table as loaded and committed from exactly that base, so a change that checks something of the table (the
 * idempotency check) checks the state it lands on; a conflict loads the table again and makes the change again.
 */
public final class TableByTableCommit implements MultiTableCommit {
  private static final Logger LOG = LoggerFactory.getLogger(TableByTableCommit.class);

  /** Test-only: told after each table's commit, so that tests can crash between two tables. */
  interface TableHook {
    TableHook NONE = (table, committed) -> {};

    void committed(TableIdentifier table, int committed);
  }

  private final Catalog catalog;
  private final int maxAttempts;
  private TableHook hook = TableHook.NONE;

  public TableByTableCommit(Catalog catalog, int maxAttempts) {
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be at least 1, not " + maxAttempts);
    }
    this.catalog = catalog;
    this.maxAttempts = maxAttempts;
  }

  TableByTableCommit hook(TableHook tableHook) {
    this.hook = tableHook;
    return this;
  }

  @Override
  public String describe() {
    return "catalog " + catalog.name() + " (table by table)";
  }

  @Override
  public boolean atomic() {
    return false;
  }

  /** A REST catalog's server checks the requirements the client sends: the branch, not the properties. */
  @Override
  public boolean conflictsOnlyOnSnapshots() {
    return catalog instanceof org.apache.iceberg.rest.RESTCatalog;
  }

  @Override
  public Result commit(Map<TableIdentifier, TableChange> changes) {
    List<TableIdentifier> order = new ArrayList<>(changes.keySet());
    order.sort(Comparator.comparing(TableIdentifier::toString));
    Map<TableIdentifier, String> committed = new LinkedHashMap<>();
    int attempts = 1;
    for (TableIdentifier table : order) {
      for (int attempt = 1; ; attempt++) {
        Table loaded = catalog.loadTable(table);
        TableOperations ops = ((HasTableOperations) loaded).operations();
        CapturedOperations capture = new CapturedOperations(ops);
        Transaction transaction = Transactions.newTransaction(loaded.name(), capture);
        changes.get(table).apply(transaction);
        transaction.commitTransaction();
        if (capture.updated == null) {
          break;
        }
        try {
          ops.commit(capture.base, capture.updated);
          committed.put(table, ops.current().metadataFileLocation());
          hook.committed(table, committed.size());
          attempts = Math.max(attempts, attempt);
          break;
        } catch (CommitFailedException e) {
          capture.discard();
          if (attempt >= maxAttempts) {
            throw new CommitFailedException(e, "Cannot commit to table %s of %s: other writers changed it during"
                + " each of %s attempts (tables committed before it: %s)", table, describe(), attempt,
                committed.keySet());
          }
          LOG.info("Commit to {}: another writer changed it meanwhile (attempt {}); making the change again",
              table, attempt);
        }
      }
    }
    return new Result(committed, attempts);
  }
}
