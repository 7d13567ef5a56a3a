package dev.lakecommit.iceberg;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.Transactions;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.rest.RESTCatalog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One commit over several tables of an Iceberg REST catalog through its multi-table commit
 * ({@code POST /v1/{prefix}/transactions/commit}, Iceberg's {@link RESTCatalog#commitTransaction}). Each table's
 * change is made on a transaction of the table as loaded, without committing it; the changes go to the server in
 * one request, each with the requirements that the table is the one loaded and its branch still at the snapshot the
 * change was made on. A server that applies the request atomically (Apache Polaris, Lakekeeper) shows every table's
 * change or none. A conflict (HTTP 409) changes nothing: the changes are made again on the tables as they are then,
 * up to a bounded number of attempts.
 *
 * <p>A server checks the requirements the client sends, which cover the branch, not the properties: a change that
 * must conflict with later commits (a claim) moves the branch too ({@link #conflictsOnlyOnSnapshots}).
 */
public final class RestMultiTableCommit implements MultiTableCommit {
  private static final Logger LOG = LoggerFactory.getLogger(RestMultiTableCommit.class);

  private final RESTCatalog catalog;
  private final int maxAttempts;

  private RestMultiTableCommit(RESTCatalog catalog, int maxAttempts) {
    this.catalog = catalog;
    this.maxAttempts = maxAttempts;
  }

  /**
   * @param maxAttempts attempts before a commit that keeps meeting other writers' changes gives up (at least 1)
   * @throws IllegalArgumentException if {@code catalog} is not a REST catalog
   */
  public static RestMultiTableCommit of(Catalog catalog, int maxAttempts) {
    if (!(catalog instanceof RESTCatalog rest)) {
      throw new IllegalArgumentException("Not an Iceberg REST catalog: " + catalog.name() + " ("
          + catalog.getClass().getSimpleName() + ")");
    }
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be at least 1, not " + maxAttempts);
    }
    return new RestMultiTableCommit(rest, maxAttempts);
  }

  @Override
  public String describe() {
    return "REST catalog " + catalog.name();
  }

  @Override
  public boolean conflictsOnlyOnSnapshots() {
    return true;
  }

  /**
   * @throws UnsupportedOperationException if the server does not offer the multi-table commit (nothing of this
   *     commit is visible)
   */
  @Override
  public Result commit(Map<TableIdentifier, TableChange> changes) {
    List<TableIdentifier> order = new ArrayList<>(changes.keySet());
    order.sort(Comparator.comparing(TableIdentifier::toString));
    for (int attempt = 1; ; attempt++) {
      List<TableCommit> commits = new ArrayList<>();
      List<CapturedOperations> captured = new ArrayList<>();
      for (TableIdentifier table : order) {
        Table loaded = catalog.loadTable(table);
        CapturedOperations capture = new CapturedOperations(((HasTableOperations) loaded).operations());
        Transaction transaction = Transactions.newTransaction(loaded.name(), capture);
        changes.get(table).apply(transaction);
        transaction.commitTransaction();
        if (capture.updated != null) {
          captured.add(capture);
          commits.add(TableCommit.create(table, capture.base, capture.updated));
        }
      }
      if (commits.isEmpty()) {
        return new Result(Map.of(), attempt);
      }
      try {
        catalog.commitTransaction(commits);
        Map<TableIdentifier, String> tables = new LinkedHashMap<>();
        commits.forEach(commit -> tables.put(commit.identifier(), "(written by the server)"));
        return new Result(tables, attempt);
      } catch (CommitFailedException e) {
        captured.forEach(CapturedOperations::discard);
        if (attempt >= maxAttempts) {
          throw new CommitFailedException(e, "Cannot commit to tables %s of REST catalog %s at once: other writers"
              + " changed them during each of %s attempts; nothing of this commit is visible", order,
              catalog.name(), attempt);
        }
        LOG.info("Multi-table commit to {} of REST catalog {}: {} (attempt {}); making the changes again on the"
            + " tables as they are now", order, catalog.name(), e.getMessage(), attempt);
      } catch (UnsupportedOperationException e) {
        captured.forEach(CapturedOperations::discard);
        throw e;
      }
    }
  }

}
