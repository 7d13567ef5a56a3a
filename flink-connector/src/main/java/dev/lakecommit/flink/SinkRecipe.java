package dev.lakecommit.flink;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.hive.HiveCommittable;
import dev.lakecommit.hive.HiveSink;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.iceberg.CutCommittable;
import dev.lakecommit.iceberg.IcebergCommittable;
import dev.lakecommit.iceberg.IcebergSink;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.iceberg.TableManifests;
import dev.lakecommit.staging.StagingManifestSerializer;
import dev.lakecommit.staging.StagingWriterState;
import dev.lakecommit.staging.WriterManifest;
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
   * A Lakecommit sink of Flink rows, the committers of its combined commits and its target. What the Flink sink asks
   * of the table itself (watermark, run epoch, identity, staged files) goes through a {@link TargetRun} on it.
   */
  record CoreSink(Sink<RowData, ? extends WriterManifest, StagingWriterState> sink,
      SupportsAggregatedCommitter<WriterManifest, Object> committers, SupportsTarget targets) {
    @SuppressWarnings("unchecked")
    static <W extends WriterManifest, S extends Sink<RowData, W, StagingWriterState>
        & SupportsAggregatedCommitter<W, ?> & SupportsTarget> CoreSink of(S sink) {
      return new CoreSink(sink, (SupportsAggregatedCommitter<WriterManifest, Object>) (Object) sink, sink);
    }

    /** A run of the job on the table that claims its epoch here (on the client, when Flink translates the sink). */
    TargetRun openRun(JobId jobId) throws IOException {
      return TargetRun.open(targets, jobId);
    }

    /**
     * The run of the job whose epoch the client claimed, for an operator of it.
     *
     * @param identity the table's identity when the epoch was claimed (empty: unknown, never compared)
     * @param what what the operator would do unfenced, for the message
     * @throws IllegalStateException if no epoch was claimed (the sink was not translated by Flink)
     */
    TargetRun openRun(JobId jobId, long epoch, String identity, String table, String what) throws IOException {
      if (epoch <= 0) {
        throw new IllegalStateException("No run epoch was claimed for job " + jobId + " in table " + table
            + ": the sink claims one when Flink translates it into a job (DataStream.sinkTo); " + what);
      }
      return TargetRun.open(targets, jobId, epoch, identity);
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

  /** Serializer of what one writer reports at a checkpoint, without connecting anywhere. */
  SimpleVersionedSerializer<WriterManifest> writeResultSerializer() {
    return FlinkSerializers.erase(new StagingManifestSerializer());
  }

  /** The start of a job id derived from a job name ({@code <this>-<name>}): the table. */
  String jobIdBase() {
    return table();
  }

  static SinkRecipe iceberg(SerializableSupplier<IcebergSinkConfig> config) {
    return new IcebergRecipe(config);
  }

  static SinkRecipe hive(SerializableSupplier<HiveSinkConfig> config) {
    return new HiveRecipe(config);
  }

  static SinkRecipe icebergTables(IcebergTables tables) {
    return new TablesRecipe(tables);
  }

  private static SimpleVersionedSerializer<Object> erase(SimpleVersionedSerializer<?> serializer) {
    return FlinkSerializers.erase(serializer);
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

  /** Iceberg tables of one catalog, a table per row, committed as one cut per checkpoint ({@link IcebergTables}). */
  private static final class TablesRecipe extends SinkRecipe {
    private static final long serialVersionUID = 1L;
    private final IcebergTables tables;

    TablesRecipe(IcebergTables tables) {
      this.tables = Objects.requireNonNull(tables, "tables");
    }

    @Override
    String table() {
      return "the tables " + tables.routing() + " of catalog " + tables.catalogName();
    }

    @Override
    String describe() {
      return "the Iceberg tables " + tables.routing() + " of catalog " + tables.catalogName();
    }

    @Override
    String jobIdBase() {
      return tables.catalogName();
    }

    @Override
    CoreSink open(RowType rowType) {
      return CoreSink.of(tables.open(rowType));
    }

    @Override
    SimpleVersionedSerializer<Object> committableSerializer() {
      return erase(new CutCommittable.Serializer());
    }

    @Override
    SimpleVersionedSerializer<WriterManifest> writeResultSerializer() {
      return FlinkSerializers.erase(new TableManifests.Serializer());
    }
  }
}
