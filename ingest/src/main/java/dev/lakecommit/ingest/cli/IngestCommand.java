package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.JobResult;
import dev.lakecommit.core.runtime.RestoreBehindPolicy;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.hive.HiveSink;
import dev.lakecommit.iceberg.IcebergSink;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.ingest.source.DeadLetterFiles;
import dev.lakecommit.ingest.source.FileSource;
import dev.lakecommit.ingest.source.InputFormat;
import dev.lakecommit.ingest.source.SchemaDrift;
import dev.lakecommit.ingest.source.SchemaParser;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code lakecommit ingest}: files to a table, one commit per checkpoint, resumable after any crash. */
@Command(name = "ingest", mixinStandardHelpOptions = true, sortOptions = false,
    description = {
        "Ingests files (JSON lines, CSV with a header, Parquet, Avro) into an Iceberg table (or, with "
            + "--target hive, a Hive table) with N parallel writers and one commit per checkpoint.",
        "Running the same command again after a crash resumes from the last complete checkpoint; after a "
            + "finished run it commits nothing new."})
public final class IngestCommand implements Callable<Integer> {
  @Spec picocli.CommandLine.Model.CommandSpec spec;

  @Option(names = "--input", required = true, paramLabel = "PATH|GLOB|URI",
      description = "A file, a directory or a glob; local, s3:// or s3a://.")
  String input;

  @Option(names = "--format", paramLabel = "FORMAT",
      description = "json, csv, parquet or avro (default: by file extension).")
  String format;

  @Option(names = "--schema", paramLabel = "COLUMNS",
      description = "Schema of the input, e.g. \"id long not null, name string, ts timestamptz\" "
          + "(default: inferred from a sample).")
  String schema;

  @Mixin TableOptions table;

  @Mixin JobOptions job;

  @Mixin RuntimeOptions runtime;

  // Commas inside a transform's parentheses (bucket(16, id)) do not split.
  @Option(names = "--partition-by", paramLabel = "TRANSFORM", split = ",(?![^()]*\\))", splitSynopsisLabel = ",",
      description = "Partitioning of a table the tool creates: col, day(col), bucket(16, col), ...; "
          + "for --target hive partition columns only (col1,col2).")
  List<String> partitionBy = new ArrayList<>();

  @Option(names = "--table-location", paramLabel = "URI",
      description = "--target hive: location of a table the tool creates (default: <warehouse>/<db>.db/<table> "
          + "with -C warehouse=..., else the metastore's location of the database).")
  String tableLocation;

  @Option(names = "--external", description = "--target hive: create the table as EXTERNAL.")
  boolean external;

  @Option(names = "--success-files", description = "--target hive: write _SUCCESS into each partition committed.")
  boolean successFiles;

  @Option(names = "--no-create-table", negatable = false,
      description = "Fail if the table does not exist instead of creating it.")
  boolean noCreateTable;

  @Option(names = "--add-new-columns", description = "Add optional input columns the table lacks, and widen "
      + "columns the input holds wider (int to long, float to double); without it such input stops the job.")
  boolean addNewColumns;

  @Option(names = "--parallelism", paramLabel = "N", defaultValue = "2",
      description = "Writer threads (default: ${DEFAULT-VALUE}).")
  int parallelism;

  @Option(names = "--checkpoint-every-records", paramLabel = "N", defaultValue = "100000",
      description = "Records per checkpoint (default: ${DEFAULT-VALUE}).")
  long checkpointEveryRecords;

  @Option(names = "--checkpoint-interval", paramLabel = "DURATION", defaultValue = "PT30S",
      description = "Longest time between checkpoints, ISO-8601 or like 30s, 5m (default: 30s).",
      converter = DurationConverter.class)
  Duration checkpointInterval;

  @Option(names = "--codec", paramLabel = "CODEC", description = "Parquet codec: zstd (default), snappy, ...")
  String codec;

  @Option(names = "--bad-records", paramLabel = "DIR",
      description = "Write records that do not fit to dead-letter files here and go on (default: stop).")
  Path badRecords;

  @Option(names = "--on-restore-behind", paramLabel = "POLICY", defaultValue = "FAIL",
      description = "If the table holds a newer checkpoint of this job than the checkpoint directory: "
          + "FAIL (default) or CONTINUE (rows after the restored checkpoint are written again).")
  RestoreBehindPolicy restoreBehind;

  @Option(names = "--start-afresh-on-new-table",
      description = "If the checkpoint directory was written for another table of the same name (dropped and "
          + "created again): read the input from the start into the new table instead of stopping (default: stop).")
  boolean startAfreshOnNewTable;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    checkTargetOptions();
    FileSource source = FileSource.of(input, format == null ? null : InputFormat.of(format),
        schema == null ? null : SchemaParser.parse(schema), table.catalogProperties(),
        table.hadoopConf());
    JobId jobId = job.jobId(input, table.table());
    if (badRecords != null) {
      source.badRecords(new DeadLetterFiles(badRecords, jobId.value(), (int) (System.currentTimeMillis() / 1000)));
    }
    SchemaDrift drift = source.scan();
    if (table.target() == Target.HIVE) {
      HiveIngest hive = new HiveIngest(table, drift.inputSchema(), partitionBy, !noCreateTable);
      source.evolve(drift.planByName(existingHiveColumns(), addNewColumns, table.table()));
      hive.schema(source.schema()).location(tableLocation).external(external).successFiles(successFiles)
          .codec(codec).addNewColumns(addNewColumns);
      JobResult result;
      try (HiveSink<Record> sink = hive.sink()) {
        result = run(out, sink, source, jobId);
      }
      hive.report(out, jobId, result);
      RuntimeOptions.report(out, result);
      return 0;
    }
    IcebergSinkConfig.Builder config = table.sinkConfig().addNewColumns(addNewColumns);
    source.evolve(drift.plan(existingSchema(), addNewColumns && !noCreateTable, table.table()));
    if (!noCreateTable) {
      config.createTable(source.schema(), partitionBy);
    }
    if (codec != null) {
      config.codec(codec);
    }
    try (IcebergSink<Record> sink = IcebergSink.forRecords(config.build())) {
      JobResult result = run(out, sink, source, jobId);
      report(out, sink.table(), jobId, result);
      RuntimeOptions.report(out, result);
    }
    return 0;
  }


  /** The schema of the Iceberg table if it exists, else null. */
  private org.apache.iceberg.Schema existingSchema() throws IOException {
    org.apache.iceberg.catalog.Catalog catalog = org.apache.iceberg.CatalogUtil.buildIcebergCatalog(
        table.catalogName, table.catalogProperties(), table.hadoopConf());
    try {
      return catalog.loadTable(org.apache.iceberg.catalog.TableIdentifier.parse(table.table())).schema();
    } catch (org.apache.iceberg.exceptions.NoSuchTableException e) {
      return null;
    } finally {
      if (catalog instanceof java.io.Closeable closeable) {
        closeable.close();
      }
    }
  }

  /** The data and partition columns of the Hive table if it exists, else null. */
  private List<String> existingHiveColumns() {
    dev.lakecommit.ingest.hive.HiveTarget target;
    try {
      target = table.openHiveTable();
    } catch (IllegalArgumentException e) {
      if (String.valueOf(e.getMessage()).contains("does not exist")) {
        return null;
      }
      throw e;
    }
    try (target) {
      List<String> columns = new ArrayList<>(target.columns().keySet());
      columns.addAll(target.partitionColumns());
      return columns;
    }
  }

  /** Options of the other target are refused before anything is read. */
  private void checkTargetOptions() {
    if (table.target() == Target.HIVE) {
      table.metastoreUri();
    } else {
      table.requireIceberg();
      if (tableLocation != null || external || successFiles) {
        throw new IllegalArgumentException("Options --table-location, --external and --success-files are for "
            + "--target hive");
      }
    }
  }

  private JobResult run(PrintWriter out, Sink<Record, ?, ?> sink, FileSource source, JobId jobId)
      throws Exception {
    out.printf("Ingesting %d file(s) from %s into %s as job %s%n", source.files().size(), input, table.table(),
        jobId);
    out.flush();
    AtomicLong rowsRead = new AtomicLong();
    try (Progress progress = new Progress(out, System.console() != null, rowsRead)) {
      return runtime.apply(StandaloneJob.builder(sink, counting(source, rowsRead)), table)
          .jobId(jobId)
          .checkpointStore(job.checkpointStore(jobId, table))
          .parallelism(parallelism)
          .checkpointEveryRecords(checkpointEveryRecords)
          .checkpointInterval(checkpointInterval)
          .restoreBehind(restoreBehind)
          .freshStartOnNewTarget(startAfreshOnNewTable)
          .listener(progress)
          .build()
          .run();
    }
  }

  private void report(PrintWriter out, Table target, JobId jobId, JobResult result) {
    target.refresh();
    Snapshot snapshot = target.currentSnapshot();
    String snapshotText = snapshot == null ? "none" : snapshot.snapshotId()
        + (snapshot.summary().containsKey(dev.lakecommit.core.CommitId.CHECKPOINT_ID_KEY)
            ? " (checkpoint " + snapshot.summary().get(dev.lakecommit.core.CommitId.CHECKPOINT_ID_KEY) + " of job "
                + snapshot.summary().get(dev.lakecommit.core.CommitId.JOB_ID_KEY) + ")"
            : "");
    if (result.recordsRead() == 0 && result.commits() == 0) {
      out.printf("Nothing new to commit: job %s already committed up to checkpoint %d; table %s is at "
          + "snapshot %s%n", jobId, result.lastCheckpointId(), table.table(), snapshotText);
      return;
    }
    out.printf("Committed %,d rows in %d checkpoint(s) (%d commit(s), %d already committed) to %s; "
            + "snapshot %d (checkpoint %d of job %s)%n", result.recordsRead(), result.checkpoints(),
        result.commits(), result.skippedCommits(), table.table(),
        snapshot == null ? -1 : snapshot.snapshotId(), result.lastCheckpointId(), jobId);
  }

  private static CheckpointedSource<Record> counting(FileSource source, AtomicLong rows) {
    return position -> {
      CheckpointedSource.SourceReader<Record> reader = source.open(position);
      return new CheckpointedSource.SourceReader<>() {
        @Override
        public Record next() throws IOException {
          Record record = reader.next();
          if (record != null) {
            rows.incrementAndGet();
          }
          return record;
        }

        @Override
        public byte[] position() {
          return reader.position();
        }

        @Override
        public void close() throws IOException {
          reader.close();
        }
      };
    };
  }
}
