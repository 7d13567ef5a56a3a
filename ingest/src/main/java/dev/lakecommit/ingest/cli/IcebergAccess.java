package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.Sink;
import dev.lakecommit.iceberg.IcebergSink;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.ingest.verify.IcebergTableRows;
import dev.lakecommit.ingest.verify.TableRows;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;

/** An Iceberg table in any Iceberg catalog, through iceberg-sink ({@code --target iceberg}, the default). */
final class IcebergAccess implements TableAccess {
  private final TableOptions options;

  IcebergAccess(TableOptions options) {
    this.options = options;
  }

  @Override
  public void checkIngestOptions(IngestSettings settings) {
    options.requireIceberg();
    settings.write().checkIceberg();
    if (settings.tableLocation() != null || settings.external() || settings.successFiles()) {
      throw new IllegalArgumentException("Options --table-location, --external and --success-files are for "
          + "--target hive");
    }
  }

  @Override
  public void planSchema(dev.lakecommit.ingest.source.FileSource source,
      dev.lakecommit.ingest.source.SchemaDrift drift, IngestSettings settings) {
    Schema existing = options.loadTableIfExists().map(Table::schema).orElse(null);
    source.evolve(drift.plan(existing, settings.addNewColumns() && settings.createTable(), options.table()));
  }

  @Override
  public Sink<Record, ?, ?> openSink(Schema schema, IngestSettings settings) {
    IcebergSinkConfig.Builder config = options.sinkConfig().addNewColumns(settings.addNewColumns());
    if (settings.createTable()) {
      config.createTable(schema, settings.partitionBy());
    }
    if (settings.codec() != null) {
      config.codec(settings.codec());
    }
    settings.write().applyTo(config, settings.writers());
    return IcebergSink.forRecords(config.build());
  }

  @Override
  public java.util.function.ToIntBiFunction<Record, Integer> router(Sink<Record, ?, ?> sink,
      IngestSettings settings) {
    return settings.write().routesByKey() ? ((IcebergSink<Record>) sink).keyRouter() : null;
  }

  @Override
  public Map<String, String> endpointProperties() {
    return new LinkedHashMap<>(options.catalogProperties());
  }

  @Override
  public CommitTarget openTarget() throws IOException {
    options.loadTable();
    IcebergSink<Record> sink = IcebergSink.forRecords(options.sinkConfig().build());
    CommitTarget target;
    try {
      target = sink.openTarget();
    } catch (RuntimeException e) {
      sink.close();
      throw e;
    }
    return new ClosingTarget(target, sink);
  }

  @Override
  public OpenRows openRows() {
    TableRows rows = new IcebergTableRows(options.loadTable());
    return new OpenRows(rows, () -> { });
  }

  @Override
  public Description describe(JobId jobOrNull) {
    Table table = options.loadTable();
    Snapshot snapshot = table.currentSnapshot();
    Map<String, Object> fields = new LinkedHashMap<>();
    fields.put("snapshot", snapshot == null ? null : snapshot.snapshotId());
    String state = "snapshot " + (snapshot == null ? "none" : snapshot.snapshotId()
        + (snapshot.summary().containsKey(CommitId.CHECKPOINT_ID_KEY)
            ? " (checkpoint " + snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY) + " of job "
                + snapshot.summary().get(CommitId.JOB_ID_KEY) + ")"
            : ""));
    return new Description("table " + options.table(), state, fields, "table " + options.table() + ", " + state);
  }
}
