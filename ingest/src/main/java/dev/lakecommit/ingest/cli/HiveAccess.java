package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.Sink;
import dev.lakecommit.hive.HiveSink;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.ingest.hive.HiveTableView;
import dev.lakecommit.ingest.verify.HiveTableRows;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.thrift.TException;

/**
 * A Hive table (Parquet) in a Hive Metastore, through hive-sink ({@code --target hive}). An ingest creates the
 * table (identity partitions on {@code --partition-by} columns) unless it exists or {@code --no-create-table} is
 * given; an existing table must have the input's columns.
 */
final class HiveAccess implements TableAccess {
  private static final Pattern COLUMN = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  private final TableOptions options;

  HiveAccess(TableOptions options) {
    this.options = options;
  }

  @Override
  public void checkIngestOptions(IngestSettings settings) {
    options.metastoreUri();
    settings.write().checkHive();
    for (String column : settings.partitionBy()) {
      if (!COLUMN.matcher(column.trim()).matches()) {
        throw new IllegalArgumentException("Invalid option --partition-by: '" + column + "' (a Hive table is "
            + "partitioned by columns, e.g. --partition-by region,day; transforms are for Iceberg tables)");
      }
    }
    if (!settings.createTable()
        && (settings.tableLocation() != null || settings.external() || !settings.partitionBy().isEmpty())) {
      throw new IllegalArgumentException("Options --table-location, --external and --partition-by describe a "
          + "table the tool creates; they cannot be used with --no-create-table");
    }
  }

  @Override
  public void planSchema(dev.lakecommit.ingest.source.FileSource source,
      dev.lakecommit.ingest.source.SchemaDrift drift, IngestSettings settings) {
    if (settings.createTable()) { // before the metastore is asked anything
      try {
        HiveSinkConfig.builder().createTable(drift.inputSchema(),
            settings.partitionBy().stream().map(String::trim).toList());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("Invalid option --partition-by: " + e.getMessage(), e);
      }
    }
    Map<String, String> types = existingTypes();
    if (types != null) {
      drift.checkHiveStructs(types, options.table());
    }
    source.evolve(drift.planByName(types == null ? null : existingColumns(), settings.addNewColumns(),
        options.table()));
  }

  /** The data columns of the table and their Hive types if it exists, else null. */
  private Map<String, String> existingTypes() {
    return ifExists(HiveTableView::columns);
  }

  /** The data and partition columns of the table if it exists, else null. */
  private List<String> existingColumns() {
    return ifExists(view -> {
      List<String> columns = new java.util.ArrayList<>(view.columns().keySet());
      columns.addAll(view.partitionColumns());
      return columns;
    });
  }

  /** What {@code read} reads from the table's view if the table exists, else null. */
  private <T> T ifExists(java.util.function.Function<HiveTableView, T> read) {
    HiveTableView view;
    try {
      view = view();
    } catch (IllegalArgumentException e) {
      if (String.valueOf(e.getMessage()).contains("does not exist")) {
        return null;
      }
      throw e;
    }
    try (view) {
      return read.apply(view);
    }
  }

  @Override
  public Sink<Record, ?, ?> openSink(Schema schema, IngestSettings settings) {
    HiveSinkConfig.Builder config = hiveConfig().successFiles(settings.successFiles())
        .addNewColumns(settings.addNewColumns());
    if (settings.createTable()) {
      try {
        config.createTable(schema, settings.partitionBy().stream().map(String::trim).toList());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("Invalid option --partition-by: " + e.getMessage(), e);
      }
      String location = settings.tableLocation() != null ? settings.tableLocation() : defaultLocation();
      if (location != null) {
        config.location(location);
      }
      config.external(settings.external());
    } else {
      config.schema(schema);
    }
    if (settings.codec() != null) {
      config.codec(settings.codec());
    }
    settings.write().applyTo(config, settings.writers());
    return HiveSink.forRecords(config.build());
  }

  @Override
  public java.util.function.ToIntBiFunction<Record, Integer> router(Sink<Record, ?, ?> sink,
      IngestSettings settings) {
    return null;
  }

  @Override
  public Map<String, String> endpointProperties() {
    Map<String, String> properties = new LinkedHashMap<>(options.catalogProperties());
    properties.put("hive.metastore.uris", options.metastoreUri());
    return properties;
  }

  @Override
  public CommitTarget openTarget() throws IOException {
    HiveSink<Record> sink = HiveSink.forRecords(hiveConfig().build());
    try {
      return new ClosingTarget(sink.openTarget(), sink);
    } catch (IOException | RuntimeException e) {
      sink.close();
      throw e;
    }
  }

  @Override
  public OpenRows openRows() {
    HiveTableView view = view();
    return new OpenRows(new HiveTableRows(view), view::close);
  }

  @Override
  public Description describe(JobId jobOrNull) throws IOException {
    try (HiveTableView view = view()) {
      Map<String, Object> fields = new LinkedHashMap<>();
      fields.put("target", "hive");
      fields.put("location", view.location());
      fields.put("version", view.version());
      fields.put("partitions", view.partitionCount());
      CommitTarget.JobState job = jobOrNull == null ? null : view.jobs().get(jobOrNull.value());
      String state = "version " + view.version() + (job == null || job.committed().isEmpty() ? ""
          : " (checkpoint " + job.committed().getAsLong() + " of job " + jobOrNull + ")");
      return new Description("Hive table " + view.name(), state, fields,
          String.format("Hive table %s at %s, version %s, %s partition(s)", view.name(), view.location(),
              view.version(), fields.get("partitions")));
    } catch (TException e) {
      throw new IOException("Cannot list the partitions of Hive table " + options.table() + ": " + e.getMessage(),
          e);
    }
  }

  /** Maintenance of the existing table (merging small files), through the sink's metastore and storage settings. */
  dev.lakecommit.hive.HiveMaintenance maintenance() {
    return HiveSink.forRecords(hiveConfig().build()).maintenance();
  }

  private HiveTableView view() {
    return HiveTableView.open(options.metastoreUri(), options.hadoopProperties(), options.table());
  }

  /** The sink's configuration of an existing table: metastore, table and storage settings. */
  private HiveSinkConfig.Builder hiveConfig() {
    HiveSinkConfig.Builder config = HiveSinkConfig.builder()
        .metastoreUri(options.metastoreUri())
        .table(options.table());
    options.hadoopProperties().forEach(config::hadoopProperty);
    return config;
  }

  /** {@code <warehouse>/<db>.db/<table>} with {@code -C warehouse}, as Hive lays out managed tables; else none. */
  private String defaultLocation() {
    String warehouse = options.hiveWarehouse();
    if (warehouse == null || warehouse.isBlank()) {
      return null;
    }
    String name = options.table().toLowerCase(Locale.ROOT);
    int dot = name.indexOf('.');
    String root = warehouse.endsWith("/") ? warehouse.substring(0, warehouse.length() - 1) : warehouse;
    return root + "/" + name.substring(0, dot) + ".db/" + name.substring(dot + 1);
  }
}
