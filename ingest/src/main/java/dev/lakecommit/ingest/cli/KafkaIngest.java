package dev.lakecommit.ingest.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.ForwardingSourceReader;
import dev.lakecommit.core.runtime.JobListener;
import dev.lakecommit.core.runtime.JobResult;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.ingest.source.DeadLetterFiles;
import dev.lakecommit.ingest.source.GroupOffsetsMirror;
import dev.lakecommit.ingest.source.KafkaSource;
import dev.lakecommit.ingest.source.SourceTableRow;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code lakecommit ingest --input kafka://...}: a Kafka topic to a table, one commit per checkpoint, with the
 * partitions' offsets stored in each checkpoint and set in the table with its commit. Unbounded until SIGTERM or
 * SIGINT (then the current checkpoint is committed and the tool exits 0), or bounded with {@code --until end}.
 */
final class KafkaIngest {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaIngest.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private final IngestCommand command;

  KafkaIngest(IngestCommand command) {
    this.command = command;
  }

  /** What {@code --route-by} of Debezium change events routes by: each event's source table. */
  static final String SOURCE_TABLE = "source.table";

  /**
   * Debezium change events go to one table by {@code --upsert-key}, or to a table per source table with {@code
   * --route-by source.table}, each table's columns and key sampled from its events.
   */
  private void checkDebezium(RoutedTables routes, TableAccess.IngestSettings settings, KafkaSource.Settings kafka) {
    if (routes == null) {
      if (!settings.write().routesByKey()) {
        throw new IllegalArgumentException("Option --format debezium applies each change event to the row of its"
            + " key: give --upsert-key with the columns of the messages' key for one Iceberg table, or --route-by "
            + SOURCE_TABLE + " for a table per source table");
      }
      return;
    }
    if (!routes.field().equals(SOURCE_TABLE)) {
      throw new IllegalArgumentException("Invalid option --route-by " + routes.field() + ": with --format debezium,"
          + " route by " + SOURCE_TABLE + " (a table per source table, e.g. --table 'lake.${" + SOURCE_TABLE + "}')");
    }
    if (command.schema != null || !kafka.metadata().isEmpty()) {
      throw new IllegalArgumentException("Options --schema and --kafka-metadata are for one table; with --format"
          + " debezium --route-by " + SOURCE_TABLE + " each table's columns are sampled from its change events");
    }
  }

  /**
   * A table per source table of Debezium change events: each created with the columns sampled from its events, the
   * message key's columns (its primary key) as its upsert key unless {@code --upsert-key} names one for every
   * table; a source table without a key is appended to.
   */
  private dev.lakecommit.iceberg.MultiTableSink<Record> sourceTablesSink(RoutedTables routes,
      Map<String, KafkaSource.SourceTable> tables, JobId jobId, PrintWriter out) {
    dev.lakecommit.iceberg.TablePattern pattern = new dev.lakecommit.iceberg.TablePattern(routes.field(),
        routes.pattern());
    Map<org.apache.iceberg.catalog.TableIdentifier, KafkaSource.SourceTable> byTable = new java.util.HashMap<>();
    tables.forEach((name, table) -> byTable.put(pattern.table(name, "source table " + name), table));
    out.printf("Source tables sampled: %s%n", String.join(", ", tables.keySet().stream().map(name -> name
        + tables.get(name).key()).toList()));
    return command.routedSink(dev.lakecommit.iceberg.MultiTableSink.forRecordsByName(command.routedCatalog())
        .router(record -> pattern.table(SourceTableRow.tableOf(record), record))
        .schemas(table -> byTable.containsKey(table) ? byTable.get(table).schema() : null)
        .upsertKey(table -> byTable.containsKey(table) ? byTable.get(table).key() : List.of()), jobId, out);
  }

  int run(PrintWriter out) throws Exception {
    RoutedTables routes = command.routes();
    TableAccess access = routes != null ? new IcebergAccess(command.table) : TableAccess.of(command.table);
    TableAccess.IngestSettings settings = command.ingestSettings();
    if (routes == null) {
      access.checkIngestOptions(settings);
    }
    command.checkOptions();
    if (command.badRecordLimit().rate() < 1) {
      throw new IllegalArgumentException("Invalid option --max-bad-records " + command.maxBadRecords + " for a Kafka"
          + " input: give a count (a share of an unbounded stream has no end to be checked at)");
    }
    KafkaSource.Settings kafka = command.kafka.settings(command.input, command.format, null);
    JobId jobId = command.job.jobId(command.input, command.table.table());
    Map<String, KafkaSource.SourceTable> sourceTables = null;
    if (kafka.format() == KafkaSource.ValueFormat.DEBEZIUM) {
      checkDebezium(routes, settings, kafka);
      if (routes != null) {
        sourceTables = KafkaSource.inferSourceTables(kafka.input(), kafka.consumerProperties(),
            KafkaOptions.SCHEMA_SAMPLE * 10, command.job.latestPosition(jobId, command.table));
      }
    }
    S3Staging.sweepDeadProcesses();
    Schema valueSchema = sourceTables != null ? sourceTables.values().iterator().next().schema()
        : KafkaOptions.valueSchema(command.schema, kafka.avroSchema(), kafka);
    KafkaSource source = new KafkaSource(kafka.withValueSchema(valueSchema));
    if (command.kafka.transactionTopic != null) {
      source.transactionTopic(command.kafka.transactionTopic);
    }
    if (sourceTables != null) {
      Map<String, Schema> schemas = new java.util.HashMap<>();
      sourceTables.forEach((name, table) -> schemas.put(name, table.schema()));
      source.sourceTables(schemas);
    }
    if (command.badRecords != null) {
      source.badRecords(new DeadLetterFiles(command.badRecords, jobId.value(),
          (int) (System.currentTimeMillis() / 1000)), command.badRecordLimit().count());
    }
    out.printf("Ingesting %s into %s as job %s (%s)%n", kafka.input(), command.table.table(), jobId,
        kafka.bounded() ? "until the end offsets seen now" : "until SIGTERM/SIGINT");
    out.flush();
    JobResult result;
    AtomicLong rowsRead = new AtomicLong();
    // The consumer starts while the table opens and the checkpoint restores: the first read only seeks.
    try (KafkaSource starting = source.startEarly();
        Sink<Record, ?, ?> sink = sourceTables != null ? sourceTablesSink(routes, sourceTables, jobId, out)
            : routes != null ? command.routedSink(routes, source.schema(), jobId, out)
            : access.openSink(source.schema(), settings);
        StopSignals signals = StopSignals.install(source::requestStop, out);
        Progress progress = new Progress(out, System.console() != null, rowsRead, command.divertedTotal)
            .lag(source::lag);
        JobMetrics metrics = JobMetrics.serve(command.kafka, jobId.value(), command.divertedTotal,
            source::lagByPartition, out);
        GroupOffsetsMirror mirror = command.kafka.groupId == null ? null
            : new GroupOffsetsMirror(kafka.input(), kafka.consumerProperties(), command.kafka.groupId);
        PeriodicMaintenance maintenance = command.maintain.around(sink, observers(source, progress, metrics,
            mirror))) {
      CheckpointStore checkpoints = command.job.checkpointStore(jobId, command.table);
      String metricsAt = metrics == null ? null : metrics.address(command.kafka);
      StandaloneJob.Builder<Record> builder = StandaloneJob.builder(sink,
          command.runtime.paced(counting(source, rowsRead, mirror, runInfo(checkpoints, source, metricsAt))));
      java.util.function.ToIntBiFunction<Record, Integer> router = routes == null ? access.router(sink, settings)
          : settings.write().routesByKey() || sourceTables != null
              ? ((dev.lakecommit.iceberg.MultiTableSink<Record>) sink).keyRouter() : null;
      if (router != null) {
        builder.router(router);
      }
      result = command.runtime.apply(builder, access)
          .jobId(jobId)
          .checkpointStore(checkpoints)
          .parallelism(command.parallelism)
          .checkpointEveryRecords(command.checkpointEveryRecords)
          .checkpointInterval(command.checkpointInterval)
          .restoreBehind(command.restoreBehind)
          .freshStartOnNewTarget(command.startAfreshOnNewTable)
          .listener(maintenance != null ? maintenance : observers(source, progress, metrics, mirror))
          .build()
          .run();
    }
    if (source.skippedByGaps() > 0) {
      out.printf("%,d record(s) were deleted by retention before the job read them (--on-lost-offsets skip)%n",
          source.skippedByGaps());
    }
    if (routes != null) {
      command.reportRouted(out, jobId, result);
    } else {
      IngestCommand.report(out, access.describe(jobId), jobId, result);
    }
    out.printf("Read ahead of the completed checkpoints: at most %,d records; the reader's buffer at most %,d records,"
        + " %,d bytes%n", source.readAhead().maxInFlight(), source.readAhead().maxBuffered(),
        source.readAhead().maxBufferedBytes());
    RuntimeOptions.report(out, result);
    return command.diverted(out);
  }

  /**
   * Publishes, each time the reader opens, where it starts reading (the stored offsets, or where a new job starts)
   * and where its metrics are, for {@code status} to show before the run's first commit. On a thread of its own, so
   * that the write (and the removal of older notes) of a remote store does not delay reading. Best effort: a store
   * that refuses it costs the job nothing but that view.
   */
  private static java.util.function.Consumer<byte[]> runInfo(CheckpointStore checkpoints, KafkaSource source,
      String metricsAt) {
    return start -> {
      Map<String, Object> info = new LinkedHashMap<>();
      info.put("started", java.time.Instant.now().toString());
      info.put("pid", ProcessHandle.current().pid());
      info.put("start-offsets", source.commitPosition(start));
      if (metricsAt != null) {
        info.put("metrics", metricsAt);
      }
      Thread note = new Thread(() -> {
        try {
          checkpoints.publishRunInfo(JSON.writeValueAsBytes(info));
        } catch (IOException | RuntimeException e) {
          LOG.warn("Could not record the run's start offsets in {} for status: {}", checkpoints.location(),
              e.toString());
        }
      }, "lakecommit-run-note");
      note.setDaemon(true);
      note.start();
    };
  }

  /** What watches the job: the read-ahead count, progress, metrics if served, the group mirror if asked for. */
  private static JobListener observers(KafkaSource source, Progress progress, JobMetrics metrics,
      GroupOffsetsMirror mirror) {
    JobListener listener = JobListener.both(source.readAhead(), metrics == null ? progress
        : JobListener.both(metrics, progress));
    return mirror == null ? listener : JobListener.both(listener, mirror);
  }

  /**
   * Counts rows read and keeps the diverted total of the newest position (and tells the group mirror of it);
   * forwards the stream's polling.
   */
  private CheckpointedSource<Record> counting(KafkaSource source, AtomicLong rows, GroupOffsetsMirror mirror,
      java.util.function.Consumer<byte[]> opened) {
    return new CheckpointedSource<>() {
      @Override
      public SourceReader<Record> open(byte[] position) throws IOException {
        SourceReader<Record> reader = source.open(position);
        opened.accept(reader.position());
        command.divertedBefore.set(KafkaSource.divertedAt(position));
        command.divertedTotal.set(KafkaSource.divertedAt(position));
        return new ForwardingSourceReader<>(reader) {
          @Override
          protected void onRecord(Record record) {
            rows.incrementAndGet();
          }

          @Override
          public byte[] position() {
            byte[] at = super.position();
            command.divertedTotal.set(KafkaSource.divertedAt(at));
            if (mirror != null) {
              mirror.position(at);
            }
            return at;
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
