package dev.lakecommit.flink;

import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.hive.HiveCommittable;
import dev.lakecommit.hive.HiveSink;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.iceberg.IcebergCommittable;
import dev.lakecommit.iceberg.IcebergSink;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.io.Serializable;
import java.util.Objects;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.function.SerializableSupplier;

/**
 * Where the Flink sink writes. Serializable: it travels with the job graph and builds the Lakecommit sink (which
 * connects to the catalog or metastore) where it runs, from a config supplier.
 */
abstract class Target implements Serializable {
  private static final long serialVersionUID = 1L;

  /** A Lakecommit sink of Flink rows and the committers of its combined commits. */
  record CoreSink(Sink<RowData, StagingManifest, StagingWriterState> sink,
      SupportsAggregatedCommitter<StagingManifest, Object> committers) {
    @SuppressWarnings("unchecked")
    static <S extends Sink<RowData, StagingManifest, StagingWriterState>
        & SupportsAggregatedCommitter<StagingManifest, ?>> CoreSink of(S sink) {
      return new CoreSink(sink, (SupportsAggregatedCommitter<StagingManifest, Object>) sink);
    }
  }

  /** The table, as the target names it, for the default job id and for messages. */
  abstract String table();

  /**
   * Builds the Lakecommit sink: connects, loads (or creates and checks) the table, and checks that rows of
   * {@code rowType} fit it.
   *
   * @throws IllegalArgumentException naming the column or option that does not fit
   */
  abstract CoreSink open(RowType rowType);

  /** Serializer of the target's combined commits, without connecting anywhere. */
  abstract SimpleVersionedSerializer<Object> committableSerializer();

  static Target iceberg(SerializableSupplier<IcebergSinkConfig> config) {
    return new IcebergTarget(config);
  }

  static Target hive(SerializableSupplier<HiveSinkConfig> config) {
    return new HiveTarget(config);
  }

  @SuppressWarnings("unchecked")
  private static SimpleVersionedSerializer<Object> erase(SimpleVersionedSerializer<?> serializer) {
    return (SimpleVersionedSerializer<Object>) serializer;
  }

  private static final class IcebergTarget extends Target {
    private static final long serialVersionUID = 1L;
    private final SerializableSupplier<IcebergSinkConfig> config;
    private final String table;

    IcebergTarget(SerializableSupplier<IcebergSinkConfig> config) {
      this.config = Objects.requireNonNull(config, "iceberg config");
      this.table = Objects.requireNonNull(config.get(), "The Iceberg config supplier returned null").table()
          .toString();
    }

    @Override
    String table() {
      return table;
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

  private static final class HiveTarget extends Target {
    private static final long serialVersionUID = 1L;
    private final SerializableSupplier<HiveSinkConfig> config;
    private final String table;

    HiveTarget(SerializableSupplier<HiveSinkConfig> config) {
      this.config = Objects.requireNonNull(config, "hive config");
      this.table = Objects.requireNonNull(config.get(), "The Hive config supplier returned null").table();
    }

    @Override
    String table() {
      return table;
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
