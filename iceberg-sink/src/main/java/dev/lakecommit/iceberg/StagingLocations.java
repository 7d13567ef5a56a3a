package dev.lakecommit.iceberg;

import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.StagingLayout;
import java.util.LinkedHashSet;
import java.util.Set;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.io.LocationProvider;

/**
 * Puts the files of Iceberg's own writers where Lakecommit stages files: a view of the table whose location
 * provider names every new file by {@link StagingLayout} ({@code <job>-<checkpoint>-<writer>-<attempt>-<seq>}
 * under the checkpoint's prefix) instead of Iceberg's random names, so leftovers are found by prefix and every
 * location is remembered until the checkpoint is reported. The view is for writing only: it never commits.
 */
final class StagingLocations implements LocationProvider {
  private final StagingLayout layout;
  private final WriterContext context;
  private final Set<String> created = new LinkedHashSet<>();
  private long checkpointId;
  private int sequence;

  StagingLocations(StagingLayout layout, WriterContext context) {
    this.layout = layout;
    this.context = context;
  }

  /** Files from now on are named after {@code checkpoint}, numbered from 0. */
  void nameAfter(long checkpoint) {
    this.checkpointId = checkpoint;
    this.sequence = 0;
  }

  /** Every location handed out since the last {@link #forget}. */
  Set<String> created() {
    return Set.copyOf(created);
  }

  void forget() {
    created.clear();
  }

  /** A view of {@code table} that writes new files at this provider's locations. */
  Table tableView(Table table) {
    TableOperations ops = ((org.apache.iceberg.HasTableOperations) table).operations();
    return new BaseTable(new WriteOnlyOperations(ops, this), table.name());
  }

  @Override
  public String newDataLocation(String filename) {
    return next("");
  }

  @Override
  public String newDataLocation(PartitionSpec spec, StructLike partitionData, String filename) {
    return next(spec.isUnpartitioned() ? "" : spec.partitionToPath(partitionData));
  }

  private String next(String partitionPath) {
    String location = layout.fileLocation(context, checkpointId, partitionPath, sequence++, FileFormat.PARQUET);
    created.add(location);
    return location;
  }

  /** The table's operations with this location provider; commits are refused. */
  private static final class WriteOnlyOperations extends ForwardingTableOperations {
    private final LocationProvider locations;

    WriteOnlyOperations(TableOperations delegate, LocationProvider locations) {
      super(delegate);
      this.locations = locations;
    }

    @Override
    public TableMetadata refresh() {
      return current();
    }

    @Override
    public void commit(TableMetadata base, TableMetadata metadata) {
      throw new UnsupportedOperationException("A staging view of " + base.location() + " never commits");
    }

    @Override
    public LocationProvider locationProvider() {
      return locations;
    }
  }
}
