package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.JobResult;
import dev.lakecommit.core.runtime.RestoreBehindPolicy;
import dev.lakecommit.core.runtime.StandaloneJob;
import dev.lakecommit.ingest.source.DeadLetterFiles;
import dev.lakecommit.ingest.source.FileSource;
import dev.lakecommit.ingest.source.InputFormat;
import dev.lakecommit.ingest.source.SchemaParser;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
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

  @Mixin WriteOptions write;

  @Mixin MaintainOptions maintain;

  @Option(names = "--partition-by", paramLabel = "TRANSFORM", split = ",",
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

  @Option(names = "--add-new-columns", description = "Add optional input columns the table lacks.")
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
    TableAccess access = TableAccess.of(table);
    TableAccess.IngestSettings settings = new TableAccess.IngestSettings(partitionBy, !noCreateTable,
        addNewColumns, codec, tableLocation, external, successFiles, write);
    access.checkIngestOptions(settings);
    checkOptions();
    S3Staging.sweepDeadProcesses();
    FileSource source = TableOptions.input("--input", () -> FileSource.of(input,
        format == null ? null : InputFormat.of(format), schema == null ? null : SchemaParser.parse(schema),
        table.catalogProperties(), table.hadoopConf()));
    JobId jobId = job.jobId(input, table.table());
    if (badRecords != null) {
      source.badRecords(new DeadLetterFiles(badRecords, jobId.value(), (int) (System.currentTimeMillis() / 1000)));
    }
    if (badRecords == null) {
      firstRecord(source);
    }
    JobResult result;
    try (Sink<Record, ?, ?> sink = access.openSink(source.schema(), settings)) {
      result = run(out, sink, source, jobId, access, access.router(sink, settings));
    }
    report(out, access.describe(jobId), jobId, result);
    RuntimeOptions.report(out, result);
    return 0;
  }

  /**
   * Reads the input's first record before the table is created: an input the job cannot read at all (a wrong CSV
   * delimiter, a format it does not fit) fails here and leaves nothing behind.
   */
  private static void firstRecord(FileSource source) throws IOException {
    try (CheckpointedSource.SourceReader<Record> reader = source.open(null)) {
      reader.next();
    }
  }

  /** The job's own settings, checked before anything is read or created. */
  private void checkOptions() {
    if (parallelism < 1) {
      throw new IllegalArgumentException("Invalid option --parallelism: " + parallelism + " (must be >= 1)");
    }
    if (checkpointEveryRecords < 1) {
      throw new IllegalArgumentException("Invalid option --checkpoint-every-records: " + checkpointEveryRecords
          + " (must be >= 1)");
    }
    if (checkpointInterval.isNegative() || checkpointInterval.isZero()) {
      throw new IllegalArgumentException("Invalid option --checkpoint-interval: " + checkpointInterval
          + " (must be > 0)");
    }
    if (codec != null) {
      try {
        dev.lakecommit.staging.StagingWriterConfig.Builder.checkCodec(codec);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("Invalid option --codec: " + e.getMessage(), e);
      }
    }
    runtime.check();
    maintain.check(table);
  }

  private JobResult run(PrintWriter out, Sink<Record, ?, ?> sink, FileSource source, JobId jobId,
      TableAccess access, java.util.function.ToIntBiFunction<Record, Integer> router) throws Exception {
    out.printf("Ingesting %d file(s) from %s into %s as job %s%n", source.files().size(), input, table.table(),
        jobId);
    out.flush();
    AtomicLong rowsRead = new AtomicLong();
    try (Progress progress = new Progress(out, System.console() != null, rowsRead);
        PeriodicMaintenance maintenance = maintain.around(sink, progress)) {
      StandaloneJob.Builder<Record> builder = StandaloneJob.builder(sink, counting(source, rowsRead));
      if (router != null) {
        builder.router(router);
      }
      return runtime.apply(builder, access)
          .jobId(jobId)
          .checkpointStore(job.checkpointStore(jobId, table))
          .parallelism(parallelism)
          .checkpointEveryRecords(checkpointEveryRecords)
          .checkpointInterval(checkpointInterval)
          .restoreBehind(restoreBehind)
          .freshStartOnNewTarget(startAfreshOnNewTable)
          .listener(maintenance == null ? progress : maintenance)
          .build()
          .run();
    }
  }

  private static void report(PrintWriter out, TableAccess.Description table, JobId jobId, JobResult result) {
    if (result.recordsRead() == 0 && result.commits() == 0) {
      out.printf("Nothing new to commit: job %s already committed up to checkpoint %d; %s is at %s%n", jobId,
          result.lastCheckpointId(), table.title(), table.state());
    } else {
      out.printf("Committed %,d rows in %d checkpoint(s) (%d commit(s), %d already committed) to %s; %s%n",
          result.recordsRead(), result.checkpoints(), result.commits(), result.skippedCommits(), table.title(),
          table.state());
    }
    out.flush();
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
