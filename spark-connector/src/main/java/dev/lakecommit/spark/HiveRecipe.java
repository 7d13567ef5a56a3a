package dev.lakecommit.spark;

import dev.lakecommit.hive.HiveSink;
import dev.lakecommit.hive.HiveSinkConfig;
import java.util.Objects;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;

/** A Hive table, through {@link HiveSink}. */
final class HiveRecipe extends SinkRecipe {
  private static final long serialVersionUID = 1L;

  private final SerializableSupplier<HiveSinkConfig> config;
  private final String table;

  HiveRecipe(SerializableSupplier<HiveSinkConfig> config) {
    this.config = Objects.requireNonNull(config, "config");
    this.table = build(config).table();
  }

  @Override
  String describe() {
    return "Hive table " + table;
  }

  @Override
  Opened<?, ?> open(StructType schema) {
    HiveSinkConfig built = build(config);
    String where = describe();
    HiveSink<InternalRow> sink = HiveSink.forInput(built, staged -> InternalRowConverter.of(schema, staged, where));
    return new Opened<>(sink, sink);
  }

  private static HiveSinkConfig build(SerializableSupplier<HiveSinkConfig> supplier) {
    return Objects.requireNonNull(supplier.get(), "The Hive sink config supplier returned null");
  }
}
