package dev.lakecommit.spark;

import dev.lakecommit.iceberg.IcebergSink;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.util.Objects;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;

/** An Iceberg table, through {@link IcebergSink}. */
final class IcebergRecipe extends SinkRecipe {
  private static final long serialVersionUID = 1L;

  private final SerializableSupplier<IcebergSinkConfig> config;
  private final String table;

  IcebergRecipe(SerializableSupplier<IcebergSinkConfig> config) {
    this.config = Objects.requireNonNull(config, "config");
    this.table = build(config).table().toString();
  }

  @Override
  String describe() {
    return "Iceberg table " + table;
  }

  @Override
  Opened<?, ?> open(StructType schema) {
    String where = describe();
    IcebergSink<InternalRow> sink = IcebergSink.forInput(build(config),
        tableSchema -> InternalRowConverter.of(schema, tableSchema, where));
    return new Opened<>(sink, sink);
  }

  private static IcebergSinkConfig build(SerializableSupplier<IcebergSinkConfig> supplier) {
    return Objects.requireNonNull(supplier.get(), "The Iceberg sink config supplier returned null");
  }
}
