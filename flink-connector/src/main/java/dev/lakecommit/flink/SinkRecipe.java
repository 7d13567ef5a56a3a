package dev.lakecommit.flink;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.hive.HiveCommittable;
import dev.lakecommit.hive.HiveSink;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.iceberg.IcebergCommittable;
import dev.lakecommit.iceberg.IcebergSink;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.io.Serializable;
import java.util.Objects;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.function.SerializableSupplier;

/**
 * Where the Flink sink writes. Serializable: it travels with the job graph and builds the Lakecommit sink (which
 * connects to the catalog or metastore) where it runs, from a config supplier.
 */
abstract class SinkRecipe implements Serializable {
  private static final long serialVersionUID = 1L;

  /**
   * A Lakecommit sink of Flink rows and the committers of its combined commits. What the Flink sink asks of the
   * table itself (watermark, run epoch) goes through the sink's {@link CommitTarget}, opened for the call and
   * closed after it.
   */
  record CoreSink(Sink<RowData, StagingManifest, StagingWriterState> sink,
      SupportsAggregatedCommitter<StagingManifest, Object> committers) {
    @SuppressWarnings("unchecked")
    static <S extends Sink<RowData, StagingManifest, StagingWriterState>
        & SupportsAggregatedCommitter<StagingManifest, ?>> CoreSink of(S sink) {
      return new CoreSink(sink, (SupportsAggregatedCommitter<StagingManifest, Object>) sink);
    }

    /** Whether the sink has a {@link CommitTarget}, so that its runs claim epochs and its commits are fenced. */
    boolean hasEpochs() {
      return sink instanceof SupportsTarget;
    }

    /**
     * Claims a new run epoch for the job in the table ({@link CommitTarget#claimEpoch}): from then on every commit
     * of an older run of the job is refused.
     *
     * @return the epoch, or 0 for a sink without a {@link CommitTarget} (no epochs, no fencing)
     * @throws IOException if the claim cannot be written
     */
    long claimEpoch(JobId jobId, String run) throws IOException {
      if (!(sink instanceof SupportsTarget withTarget)) {
        return 0;
      }
      try (CommitTarget target = withTarget.openTarget()) {
        RunEpoch claimed = target.claimEpoch(jobId, run);
        return claimed.epoch();
      }
    }

    /**
     * What makes the table this table ({@link CommitTarget#identity()}), read now; empty for a sink without a
     * {@link CommitTarget} (unknown: never compared).
     *
     * @throws IOException if the table cannot be read
     */
    String identity() throws IOException {
      if (!(sink instanceof SupportsTarget withTarget)) {
        return "";
      }
      try (CommitTarget target = withTarget.openTarget()) {
        return target.identity();
      }
    }

    /**
     * Deletes what runs of epochs {@code 0} to {@code maxEpoch} of the job staged for checkpoints above {@code
     * keep} ({@link CommitTarget#deleteStaged}); nothing for a sink without a {@link CommitTarget}.
     *
     * @return the number of files deleted
     */
    long deleteStaged(JobId jobId, long keep, long maxEpoch) throws IOException {
      if (!(sink instanceof SupportsTarget withTarget)) {
        return 0;
      }
      try (CommitTarget target = withTarget.openTarget()) {
        return target.deleteStaged(jobId, keep, 0, maxEpoch);
      }
    }

    /**
     * Deletes what attempts below {@code attempt} of the run of {@code epoch} staged for checkpoints above {@code
     * keep} ({@link CommitTarget#deleteStagedOfEarlierAttempts}); nothing for a sink without a {@link CommitTarget}.
     *
     * @return the number of files deleted
     */
    long deleteStagedOfEarlierAttempts(JobId jobId, long keep, long epoch, int attempt) throws IOException {
      if (!(sink instanceof SupportsTarget withTarget)) {
        return 0;
      }
      try (CommitTarget target = withTarget.openTarget()) {
        return target.deleteStagedOfEarlierAttempts(jobId, keep, epoch, attempt);
      }
    }

    /**
     * The writer subtask that owns a row's upsert key ({@link IcebergSink#keyRouter()}).
     *
     * @throws IllegalStateException if the sink does not upsert by key
     */
    @SuppressWarnings("unchecked")
    java.util.function.ToIntBiFunction<RowData, Integer> keyRouter() {
      if (!(sink instanceof IcebergSink<?> iceberg)) {
        throw new IllegalStateException("Only Iceberg tables in mode UPSERT route rows by key, not " + sink);
      }
      return ((IcebergSink<RowData>) iceberg).keyRouter();
    }

    /** Maintenance of the table (Iceberg tables only), on the sink's catalog: usable until the sink is closed. */
    java.util.Optional<dev.lakecommit.iceberg.IcebergMaintenance> maintenance() {
      return sink instanceof IcebergSink<?> iceberg ? java.util.Optional.of(iceberg.maintenance())
          : java.util.Optional.empty();
    }

    /**
     * The job's last committed checkpoint in the table, read now; 0 if none.
     *
     * @throws IOException if the table cannot be read: never guessed
     */
    long lastCommitted(JobId jobId) throws IOException {
      if (!(sink instanceof SupportsTarget withTarget)) {
        throw new IllegalStateException("The sink " + sink.getClass().getName() + " has no CommitTarget; the Flink"
            + " sink needs one to number checkpoints above what the table holds for job " + jobId);
      }
      try (CommitTarget target = withTarget.openTarget()) {
        return target.lastCommittedCheckpoint(jobId).orElse(0);
      }
    }
  }

  /** The table, as the target names it, for the default job id and for messages. */
  abstract String table();

  /**
   * The target as a changelog row that it cannot take names it: {@code Iceberg table db.t in mode APPEND}, {@code
   * Hive table db.t}. Reads the config (no connection).
   */
  String describe() {
    return "table " + table();
  }

  /** Whether rows must reach writers by key: an Iceberg table in mode UPSERT (reads the config, no connection). */
  boolean upserts() {
    return false;
  }

  /** Whether the target is an Iceberg table (which the post-commit maintenance stage can maintain). */
  boolean iceberg() {
    return this instanceof IcebergRecipe;
  }

  /**
   * Builds the Lakecommit sink: connects, loads (or creates and checks) the table, and checks that rows of
   * {@code rowType} fit it.
   *
   * @throws IllegalArgumentException naming the column or option that does not fit
   */
  abstract CoreSink open(RowType rowType);

  /** Serializer of the target's combined commits, without connecting anywhere. */
  abstract SimpleVersionedSerializer<Object> committableSerializer();

  static SinkRecipe iceberg(SerializableSupplier<IcebergSinkConfig> config) {
    return new IcebergRecipe(config);
  }

  static SinkRecipe hive(SerializableSupplier<HiveSinkConfig> config) {
    return new HiveRecipe(config);
  }

  @SuppressWarnings("unchecked")
  private static SimpleVersionedSerializer<Object> erase(SimpleVersionedSerializer<?> serializer) {
    return (SimpleVersionedSerializer<Object>) serializer;
  }

  private static final class IcebergRecipe extends SinkRecipe {
    private static final long serialVersionUID = 1L;
    private final SerializableSupplier<IcebergSinkConfig> config;
    private final String table;

    IcebergRecipe(SerializableSupplier<IcebergSinkConfig> config) {
      this.config = Objects.requireNonNull(config, "iceberg config");
      this.table = Objects.requireNonNull(config.get(), "The Iceberg config supplier returned null").table()
          .toString();
    }

    @Override
    String table() {
      return table;
    }

    @Override
    String describe() {
      return "Iceberg table " + table + " in mode " + config.get().mode();
    }

    @Override
    boolean upserts() {
      return config.get().mode() == dev.lakecommit.iceberg.CommitMode.UPSERT;
    }

    @Override
    CoreSink open(RowType rowType) {
      return CoreSink.of(IcebergSink.forInput(config.get(), schema -> RowDataRecord.of(rowType, schema, false)));
    }

    @Override
    SimpleVersionedSerializer<Object> committableSerializer() {
      return erase(new IcebergCommittable.Serializer());
    }
  }

  private static final class HiveRecipe extends SinkRecipe {
    private static final long serialVersionUID = 1L;
    private final SerializableSupplier<HiveSinkConfig> config;
    private final String table;

    HiveRecipe(SerializableSupplier<HiveSinkConfig> config) {
      this.config = Objects.requireNonNull(config, "hive config");
      this.table = Objects.requireNonNull(config.get(), "The Hive config supplier returned null").table();
    }

    @Override
    String table() {
      return table;
    }

    @Override
    String describe() {
      return "Hive table " + table;
    }

    @Override
    CoreSink open(RowType rowType) {
      // Hive matches column names case-insensitively.
      return CoreSink.of(HiveSink.forInput(config.get(), schema -> RowDataRecord.of(rowType, schema, true)));
    }

    @Override
    SimpleVersionedSerializer<Object> committableSerializer() {
      return erase(new HiveCommittable.Serializer());
    }
  }
}
