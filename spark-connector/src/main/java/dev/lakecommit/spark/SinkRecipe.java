package dev.lakecommit.spark;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitProperties;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingManifest;
import java.io.IOException;
import java.io.Serializable;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.apache.iceberg.io.FileIO;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a Spark write goes: a recipe that builds the Lakecommit sink from a configuration supplier, on the driver
 * and on executors alike. Serialized into every task.
 */
abstract class SinkRecipe implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(SinkRecipe.class);

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
      FileIO stagingIO) {

    /** Opens a run of the job on the sink's target, not claimed yet; the caller closes it. */
    TargetRun openRun(JobId jobId, String where) throws IOException {
      if (!(sink instanceof SupportsTarget supports)) {
        throw new IllegalArgumentException("The sink of " + where + " has no CommitTarget; the Spark adapter needs"
            + " one to fence runs and look up commits");
      }
      return TargetRun.open(supports, jobId);
    }

    /** Closes a run; a failure to close is logged, never thrown over what the run did. */
    static void close(TargetRun run) {
      try {
        run.close();
      } catch (IOException e) {
        LOG.warn("Could not close {}: {}", run.name(), e.toString());
      }
    }

    /**
     * The target's properties as they are now, if its committer carries properties in its commits ({@link
     * SupportsCommitProperties}); empty if it cannot.
     */
    Optional<Map<String, String>> committedProperties() throws IOException {
      try (SinkAggregatedCommitter<StagingManifest, A> committer = committing.createAggregatedCommitter()) {
        return committer instanceof SupportsCommitProperties properties
            ? Optional.of(properties.currentProperties()) : Optional.empty();
      }
    }
  }
}
