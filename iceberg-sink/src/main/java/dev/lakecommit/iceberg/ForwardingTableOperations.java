package dev.lakecommit.iceberg;

import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.encryption.EncryptionManager;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.LocationProvider;

/** A table's operations passed through to another's; subclasses override the steps they change. */
public abstract class ForwardingTableOperations implements TableOperations {
  private final TableOperations delegate;

  protected ForwardingTableOperations(TableOperations delegate) {
    this.delegate = delegate;
  }

  /** The operations passed through to: the constructor's, unless a subclass replaces them. */
  protected TableOperations delegate() {
    return delegate;
  }

  @Override
  public TableMetadata current() {
    return delegate().current();
  }

  @Override
  public TableMetadata refresh() {
    return delegate().refresh();
  }

  @Override
  public void commit(TableMetadata base, TableMetadata metadata) {
    delegate().commit(base, metadata);
  }

  @Override
  public FileIO io() {
    return delegate().io();
  }

  @Override
  public EncryptionManager encryption() {
    return delegate().encryption();
  }

  @Override
  public String metadataFileLocation(String fileName) {
    return delegate().metadataFileLocation(fileName);
  }

  @Override
  public LocationProvider locationProvider() {
    return delegate().locationProvider();
  }

  @Override
  public TableOperations temp(TableMetadata uncommittedMetadata) {
    return delegate().temp(uncommittedMetadata);
  }

  @Override
  public long newSnapshotId() {
    return delegate().newSnapshotId();
  }

  @Override
  public boolean requireStrictCleanup() {
    return delegate().requireStrictCleanup();
  }
}
