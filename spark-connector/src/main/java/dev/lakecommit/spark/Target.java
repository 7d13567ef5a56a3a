package dev.lakecommit.spark;

import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingManifest;
import java.io.Serializable;
import java.util.UUID;
import org.apache.iceberg.io.FileIO;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;

/**
 * Where a Spark write goes: a recipe that builds the Lakecommit sink from a configuration supplier, on the driver
 * and on executors alike. Serialized into every task.
 */
abstract class Target implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Identifies this target within a JVM's {@link SinkCache}: one sink per target and input schema. */
  final String key = UUID.randomUUID().toString();

  /** What the target is, for messages and logs ({@code Iceberg table db.events}). */
  abstract String describe();

  /** Builds the sink for rows of {@code schema}; connects to the catalog or metastore. */
  abstract Opened<?> open(StructType schema);

  /**
   * A built sink: writers for executors, the aggregated committer for the driver, and where it stages files.
   *
   * @param <A> the sink's combined commit
   */
  record Opened<A>(
      Sink<InternalRow, StagingManifest, ?> sink,
      SupportsAggregatedCommitter<StagingManifest, A> committing,
      StagingLayout layout,
      FileIO stagingIO) {}
}
