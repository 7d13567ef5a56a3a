package dev.lakecommit.iceberg;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitStateUnknownException;

/**
 * A real catalog whose Nth table commit fails at the catalog boundary: either the catalog applies the commit and
 * the acknowledgement is lost, or the commit never reaches it — both reported as "state unknown".
 */
final class FaultyCatalog implements Catalog {
  enum Fault {
    ACK_LOST,
    NOT_APPLIED,
    LOAD_FAILS_AFTER_ACK_LOST
  }

  private final Catalog delegate;
  private final Fault fault;
  private final int failingCommit;
  private final AtomicInteger commits = new AtomicInteger();
  private volatile boolean failLoads;

  FaultyCatalog(Catalog delegate, Fault fault, int failingCommit) {
    this.delegate = delegate;
    this.fault = fault;
    this.failingCommit = failingCommit;
  }

  void healLoads() {
    failLoads = false;
  }

  @Override
  public Table loadTable(TableIdentifier identifier) {
    if (failLoads) {
      throw new java.io.UncheckedIOException(new java.io.IOException("catalog unreachable"));
    }
    Table table = delegate.loadTable(identifier);
    TableOperations ops = ((HasTableOperations) table).operations();
    return new BaseTable(new Ops(ops), table.name());
  }

  @Override
  public List<TableIdentifier> listTables(Namespace namespace) {
    return delegate.listTables(namespace);
  }

  @Override
  public boolean dropTable(TableIdentifier identifier, boolean purge) {
    return delegate.dropTable(identifier, purge);
  }

  @Override
  public void renameTable(TableIdentifier from, TableIdentifier to) {
    delegate.renameTable(from, to);
  }

  private final class Ops extends ForwardingTableOperations {
    Ops(TableOperations ops) {
      super(ops);
    }

    @Override
    public void commit(TableMetadata base, TableMetadata metadata) {
      if (commits.incrementAndGet() != failingCommit) {
        delegate().commit(base, metadata);
        return;
      }
      switch (fault) {
        case ACK_LOST -> delegate().commit(base, metadata);
        case LOAD_FAILS_AFTER_ACK_LOST -> {
          delegate().commit(base, metadata);
          failLoads = true;
        }
        case NOT_APPLIED -> { }
      }
      throw new CommitStateUnknownException(new RuntimeException("connection reset while committing"));
    }
  }
}
