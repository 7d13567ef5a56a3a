package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.JobResult;
import dev.lakecommit.hive.HiveSink;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.ingest.hive.HiveTarget;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.regex.Pattern;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;

/**
 * {@code ingest --target hive}: the hive-sink configuration from the tool's options, and the report of a run. The
 * table is created (Parquet, identity partitions on {@code --partition-by} columns) unless it exists or
 * {@code --no-create-table} is given; an existing table must have the input's columns.
 */
final class HiveIngest {
  private static final Pattern COLUMN = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  private final TableOptions table;
  private Schema schema;
  private final List<String> partitionBy;
  private final boolean create;
  private String location;
  private boolean external;
  private boolean successFiles;
  private String codec;
  private boolean addNewColumns;

  HiveIngest(TableOptions table, Schema schema, List<String> partitionBy, boolean create) {
    this.table = table;
    this.schema = schema;
    this.partitionBy = List.copyOf(partitionBy);
    this.create = create;
    for (String column : partitionBy) {
      if (!COLUMN.matcher(column.trim()).matches()) {
        throw new IllegalArgumentException("Invalid option --partition-by: '" + column + "' (a Hive table is "
            + "partitioned by columns, e.g. --partition-by region,day; transforms are for Iceberg tables)");
      }
    }
    if (create) { // before the metastore is asked anything
      try {
        HiveSinkConfig.builder().createTable(schema, this.partitionBy.stream().map(String::trim).toList());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("Invalid option --partition-by: " + e.getMessage(), e);
      }
    }
  }

  HiveIngest location(String tableLocation) {
    this.location = tableLocation;
    return this;
  }

  HiveIngest external(boolean isExternal) {
    this.external = isExternal;
    return this;
  }

  HiveIngest successFiles(boolean write) {
    this.successFiles = write;
    return this;
  }

  HiveIngest codec(String parquetCodec) {
    this.codec = parquetCodec;
    return this;
  }

  /** The input's schema as planned against the table (with the columns a scan of the input found). */
  HiveIngest schema(Schema inputSchema) {
    this.schema = inputSchema;
    return this;
  }

  HiveIngest addNewColumns(boolean add) {
    this.addNewColumns = add;
    return this;
  }

  /** Connects to the metastore, creates or checks the table, and returns the sink. */
  HiveSink<Record> sink() {
    HiveSinkConfig.Builder config = HiveSinkConfig.builder()
        .metastoreUri(table.metastoreUri())
        .table(table.table())
        .successFiles(successFiles)
        .addNewColumns(addNewColumns);
    table.hadoopProperties().forEach(config::hadoopProperty);
    if (create) {
      try {
        config.createTable(schema, partitionBy.stream().map(String::trim).toList());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("Invalid option --partition-by: " + e.getMessage(), e);
      }
      String tableLocation = location != null ? location : defaultLocation();
      if (tableLocation != null) {
        config.location(tableLocation);
      }
      config.external(external);
    } else {
      if (location != null || external || !partitionBy.isEmpty()) {
        throw new IllegalArgumentException("Options --table-location, --external and --partition-by describe a "
            + "table the tool creates; they cannot be used with --no-create-table");
      }
      config.schema(schema);
    }
    if (codec != null) {
      config.codec(codec);
    }
    return HiveSink.forRecords(config.build());
  }

  /** {@code <warehouse>/<db>.db/<table>} with {@code -C warehouse}, as Hive lays out managed tables; else none. */
  private String defaultLocation() {
    String warehouse = table.hiveWarehouse();
    if (warehouse == null || warehouse.isBlank()) {
      return null;
    }
    String name = table.table().toLowerCase(Locale.ROOT);
    int dot = name.indexOf('.');
    String root = warehouse.endsWith("/") ? warehouse.substring(0, warehouse.length() - 1) : warehouse;
    return root + "/" + name.substring(0, dot) + ".db/" + name.substring(dot + 1);
  }

  /** What the run did, and what the table holds now: its change counter and the job's watermark. */
  void report(PrintWriter out, JobId jobId, JobResult result) {
    String version;
    OptionalLong watermark;
    String name;
    try (HiveTarget target = table.openHiveTable()) {
      version = target.version();
      watermark = target.watermark(jobId);
      name = target.name();
    }
    String committed = watermark.isPresent() ? Long.toString(watermark.getAsLong()) : "none";
    if (result.recordsRead() == 0 && result.commits() == 0) {
      out.printf("Nothing new to commit: job %s already committed up to checkpoint %d; Hive table %s is at "
          + "version %s (watermark: checkpoint %s)%n", jobId, result.lastCheckpointId(), name, version, committed);
    } else {
      out.printf("Committed %,d rows in %d checkpoint(s) (%d commit(s), %d already committed) to Hive table %s; "
              + "version %s (checkpoint %s of job %s)%n", result.recordsRead(), result.checkpoints(),
          result.commits(), result.skippedCommits(), name, version, committed, jobId);
    }
    out.flush();
  }
}
