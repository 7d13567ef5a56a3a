package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.ForwardingSourceReader;
import dev.lakecommit.core.runtime.JobListener;
import dev.lakecommit.core.runtime.JobResult;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.iceberg.MultiTableSink;
import dev.lakecommit.iceberg.TablePattern;
import dev.lakecommit.ingest.source.PostgresCdcSource;
import dev.lakecommit.ingest.source.PostgresInput;
import dev.lakecommit.ingest.source.PostgresTables;
import dev.lakecommit.ingest.source.SourceTableRow;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;

/**
 * {@code lakecommit ingest --input postgresql://USER@HOST/DB?tables=...}: a database's changes, read directly
 * (Debezium's embedded engine), into a table per captured table ({@code --route-by source.table}) or, for one
 * captured table, into {@code --table}. Each table is created with the source table's columns and its primary key as
 * the upsert key; each checkpoint is one cut over the tables, of whole source transactions, with the source position
 * in it. Runs until SIGTERM or SIGINT, then commits the current checkpoint and exits 0.
 */
final class PostgresIngest {
  /** Events the reader holds ahead of the job at most. */
  private static final int BUFFER_EVENTS = 10_000;
  private final IngestCommand command;

  PostgresIngest(IngestCommand command) {
    this.command = command;
  }

  int run(PrintWriter out) throws Exception {
    RoutedTables routes = command.routes();
    if (routes == null && !command.table.table().isEmpty()) {
      command.write.checkIceberg();
    }
    command.checkOptions();
    if (command.format != null || command.schema != null) {
      throw new IllegalArgumentException("Options --format and --schema are not for a postgresql:// input: each "
          + "table's columns and key are the source table's");
    }
    if (command.badRecords != null) {
      throw new IllegalArgumentException("Option --bad-records is not for a postgresql:// input: a change left out"
          + " would leave the tables unlike the database");
    }
    if (command.table.target() != TableKind.ICEBERG) {
      throw new IllegalArgumentException("A postgresql:// input is written to Iceberg tables (--target iceberg): "
          + "its deletes and updates are applied by key");
    }
    PostgresInput input = PostgresInput.parse(command.input);
    Map<String, String> settings = new LinkedHashMap<>(command.debezium);
    String password = settings.remove("database.password");
    if (password == null) {
      password = System.getenv("PGPASSWORD");
    }
    JobId jobId = command.job.jobId(command.input, command.table.table());
    Map<String, PostgresTables.SourceTable> tables = PostgresTables.describe(input, password);
    Map<TableIdentifier, PostgresTables.SourceTable> byTable = new HashMap<>();
    java.util.function.Function<String, TableIdentifier> tableOf;
    if (routes != null) {
      if (!routes.field().equals(KafkaIngest.SOURCE_TABLE)) {
        throw new IllegalArgumentException("Invalid option --route-by " + routes.field() + ": with a postgresql://"
            + " input, route by " + KafkaIngest.SOURCE_TABLE + " (a table per source table, e.g. --table 'lake.${"
            + KafkaIngest.SOURCE_TABLE + "}')");
      }
      TablePattern pattern = new TablePattern(routes.field(), routes.pattern());
      tableOf = name -> pattern.table(name, "source table " + name);
    } else if (tables.size() == 1) {
      TableIdentifier only = TableIdentifier.parse(command.table.table());
      tableOf = name -> only;
    } else {
      throw new IllegalArgumentException("The input captures " + tables.size() + " tables: give --route-by "
          + KafkaIngest.SOURCE_TABLE + " --table 'NAMESPACE.${" + KafkaIngest.SOURCE_TABLE + "}' for a table per "
          + "source table");
    }
    tables.forEach((name, table) -> byTable.put(tableOf.apply(name), table));
    List<String> upsertKey = command.write.routesByKey() ? command.write.upsertKey : null;
    out.printf("Source tables: %s%n", String.join(", ", tables.values().stream().map(table -> table.name()
        + (table.key().isEmpty() ? " (no primary key: appended)" : table.key().toString())).toList()));
    MultiTableSink.Builder<Record> config = MultiTableSink.forRecordsByName(command.routedCatalog())
        .router(record -> tableOf.apply(SourceTableRow.tableOf(record)))
        .schemas(table -> byTable.containsKey(table) ? byTable.get(table).schema() : null)
        .upsertKey(table -> upsertKey != null ? upsertKey
            : byTable.containsKey(table) ? byTable.get(table).key() : List.of());
    PostgresCdcSource source = new PostgresCdcSource(input, password, jobId.value(), settings, tables,
        BUFFER_EVENTS);
    out.printf("Ingesting the changes of %s into %s as job %s (replication slot %s; until SIGTERM/SIGINT)%n",
        input, command.table.table(), jobId, input.slotFor(jobId.value()));
    out.flush();
    AtomicLong rowsRead = new AtomicLong();
    TableAccess access = new IcebergAccess(command.table);
    JobResult result;
    try (MultiTableSink<Record> sink = command.routedSink(config, jobId, out);
        StopSignals signals = StopSignals.install(source::requestStop, out);
        Progress progress = new Progress(out, System.console() != null, rowsRead, command.divertedTotal)) {
      StandaloneJob.Builder<Record> builder = StandaloneJob.builder(sink,
          command.runtime.paced(counting(source, rowsRead)));
      builder.router(sink.keyRouter());
      result = command.runtime.apply(builder, access)
          .jobId(jobId)
          .checkpointStore(command.job.checkpointStore(jobId, command.table))
          .parallelism(command.parallelism)
          .checkpointEveryRecords(command.checkpointEveryRecords)
          .checkpointInterval(command.checkpointInterval)
          .restoreBehind(command.restoreBehind)
          .freshStartOnNewTarget(command.startAfreshOnNewTable)
          .listener(JobListener.both(progress, source))
          .build()
          .run();
    }
    command.reportRouted(out, jobId, result);
    RuntimeOptions.report(out, result);
    return command.diverted(out);
  }

  /** Counts the rows read for the progress lines. */
  private static CheckpointedSource<Record> counting(PostgresCdcSource source, AtomicLong rows) {
    return new CheckpointedSource<>() {
      @Override
      public SourceReader<Record> open(byte[] position) throws IOException {
        return new ForwardingSourceReader<>(source.open(position)) {
          @Override
          protected void onRecord(Record record) {
            rows.incrementAndGet();
          }
        };
      }

      @Override
      public String commitPosition(byte[] position) {
        return source.commitPosition(position);
      }
    };
  }
}
