package dev.lakecommit.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The Spark DataSource V2 behind {@link LakecommitSpark}: a write-only table whose batch write is one Lakecommit
 * commit. Spark instantiates it by class name; the write it performs is handed over in the driver's memory under
 * the {@value #HANDLE} option (sink configurations are objects, not strings), so it is not meant to be used with
 * {@code df.write().format(...)} directly.
 */
public final class LakecommitSource implements TableProvider {
  static final String HANDLE = "lakecommit.write-handle";

  private static final Map<String, WriteRun.PartWrite> RUNS = new ConcurrentHashMap<>();

  /** For Spark's reflective instantiation. */
  public LakecommitSource() {}

  static String register(WriteRun.PartWrite run) {
    String handle = UUID.randomUUID().toString();
    RUNS.put(handle, run);
    return handle;
  }

  static void unregister(String handle) {
    RUNS.remove(handle);
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    throw new UnsupportedOperationException(
        "The Lakecommit source writes only, through LakecommitSpark.write(df) or LakecommitSpark.foreachBatch()");
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    String handle = properties.get(HANDLE);
    WriteRun.PartWrite run = handle == null ? null : RUNS.get(handle);
    if (run == null) {
      throw new IllegalArgumentException("No Lakecommit write under option " + HANDLE + "=" + handle
          + ": write with LakecommitSpark.write(df) or LakecommitSpark.foreachBatch(), not df.write().format(...)");
    }
    return new WriteTable(run, schema);
  }

  /** The table Spark's planner sees: the DataFrame's own schema, so rows are passed through as they are. */
  private record WriteTable(WriteRun.PartWrite run, StructType schema) implements SupportsWrite {
    @Override
    public String name() {
      return run.describe();
    }

    // Spark 4.1 still reads a V2 table's schema through this accessor (columns() is derived from it).
    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.ACCEPT_ANY_SCHEMA);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      return new WriteBuilder() {
        @Override
        public Write build() {
          return new Write() {
            @Override
            public String description() {
              return run.describe();
            }

            @Override
            public BatchWrite toBatch() {
              return run;
            }
          };
        }
      };
    }
  }
}
