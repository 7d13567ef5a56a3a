package dev.lakecommit.spark;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitProperties;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.staging.WriterManifest;
import java.io.IOException;
import java.io.Serializable;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
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
  final String key;

  SinkRecipe() {
    this(UUID.randomUUID().toString());
  }

  SinkRecipe(String key) {
    this.key = key;
  }

  /** What the target is, for messages and logs ({@code Iceberg table db.events}). */
  abstract String describe();

  /** Builds the sink for rows of {@code schema}; connects to the catalog or metastore. */
  abstract Opened<?, ?> open(StructType schema);

  /**
   * The properties {@code keys} of the job's last commit on the target, if its commits carry properties ({@link
   * SupportsCommitProperties}); empty if they cannot.
   */
  Optional<Map<String, String>> committedProperties(Opened<?, ?> opened, JobId jobId, Collection<String> keys)
      throws IOException {
    try (SinkAggregatedCommitter<?, ?> committer = opened.committing().createAggregatedCommitter()) {
      if (!(committer instanceof SupportsCommitProperties properties)) {
        return Optional.empty();
      }
      Map<String, String> current = properties.currentProperties();
      Map<String, String> asked = new HashMap<>();
      for (String key : keys) {
        if (current.containsKey(key)) {
          asked.put(key, current.get(key));
        }
      }
      return Optional.of(asked);
    }
  }

  /**
   * A built sink: writers for executors and the aggregated committer for the driver.
   *
   * @param <M> what one writer reports for a checkpoint
   * @param <A> the sink's combined commit
   */
  record Opened<M extends WriterManifest, A>(
      Sink<InternalRow, M, ?> sink,
      SupportsAggregatedCommitter<M, A> committing) {

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
  }
}
