package dev.lakecommit.bench;

import java.util.Map;
import org.apache.iceberg.LocationProviders;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.inmemory.InMemoryFileIO;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.LocationProvider;

/**
 * A table kept in memory as a {@link TableMetadata} object: commits swap it (compare-and-swap on the base, as a
 * catalog does) without writing or re-reading a metadata file, and manifests go to an {@link InMemoryFileIO}.
 * For preparing long table histories quickly; single-threaded use.
 */
final class MemoryTableOperations implements TableOperations {
  private static final String LOCATION = "memory://bench/events";
  private final FileIO io = new InMemoryFileIO();
  private TableMetadata current;

  private MemoryTableOperations(TableMetadata initial) {
    this.current = initial;
  }

  static MemoryTableOperations create(Schema schema, Map<String, String> properties) {
    return new MemoryTableOperations(TableMetadata.newTableMetadata(
        schema, PartitionSpec.unpartitioned(), SortOrder.unsorted(), LOCATION, properties));
  }

  @Override
  public TableMetadata current() {
    return current;
  }

  @Override
  public TableMetadata refresh() {
    return current;
  }

  @Override
  public void commit(TableMetadata base, TableMetadata metadata) {
    if (base != current) {
      throw new CommitFailedException("Cannot commit: stale table metadata");
    }
    // As if written and read back, like a catalog: the pending change list starts empty again (Iceberg scans it
    // on every update, so keeping it would make each commit slower than the last).
    current = metadata.changes().isEmpty() ? metadata : TableMetadata.buildFrom(metadata).discardChanges().build();
  }

  @Override
  public FileIO io() {
    return io;
  }

  @Override
  public String metadataFileLocation(String fileName) {
    return LOCATION + "/metadata/" + fileName;
  }

  @Override
  public LocationProvider locationProvider() {
    return LocationProviders.locationsFor(current.location(), current.properties());
  }
}
