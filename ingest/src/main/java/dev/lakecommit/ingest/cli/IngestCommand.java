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
      description = "Write records that do not parse or do not fit the schema to dead-letter files here and go on "
          + "(default: stop at the first). Unreadable files and I/O errors always stop the job.")
  Path badRecords;

  @Option(names = "--max-bad-records", paramLabel = "N",
      description = "With --bad-records: stop the job when more than N records in all went to dead-letter files "
          + "(default: no limit).")
  Long maxBadRecords;

  @Option(names = "--on-changed-input", paramLabel = "POLICY", defaultValue = "fail",
      converter = OnChangedInputConverter.class,
      description = "If an input file the job resumes in changed since its last checkpoint (replaced, truncated, "
          + "rewritten): fail (default: stop, naming the file) or new-job (ingest the input as new input under a "
          + "new job id, <job-id>-input2, ...; give it on every run of such input).")
  JobOptions.OnChangedInput onChangedInput;

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
    if (maxBadRecords != null && (badRecords == null || maxBadRecords < 0)) {
      throw new IllegalArgumentException(badRecords == null ? "Option --max-bad-records needs --bad-records DIR"
          : "Invalid value for option --max-bad-records: " + maxBadRecords + " (must be >= 0)");
    }
    JobId jobId = job.resolveJobId(input, table.table(), table, source, onChangedInput, out);
    if (badRecords != null) {
      source.badRecords(new DeadLetterFiles(badRecords, jobId.value(), (int) (System.currentTimeMillis() / 1000)))
          .maxBadRecords(maxBadRecords == null ? Long.MAX_VALUE : maxBadRecords);
    }
    if (table.target() == Target.HIVE) {
      HiveIngest hive = new HiveIngest(table, source.schema(), partitionBy, !noCreateTable);
      hive.location(tableLocation).external(external).successFiles(successFiles).codec(codec);
      JobResult result;
      try (HiveSink<Record> sink = hive.sink()) {
        result = run(out, sink, source, jobId);
      }
      hive.report(out, jobId, result);
      RuntimeOptions.report(out, result);
      return diverted(out);
    }
    IcebergSinkConfig.Builder config = table.sinkConfig().addNewColumns(addNewColumns);
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
    return diverted(out);
  }

  /** {@code fail} or {@code new-job}. */
  static final class OnChangedInputConverter implements picocli.CommandLine.ITypeConverter<JobOptions.OnChangedInput> {
    @Override
    public JobOptions.OnChangedInput convert(String value) {
      return JobOptions.OnChangedInput.of(value);
    }
  }

  /** Says how many records of the job went to dead-letter files; the exit code. */
  private int diverted(PrintWriter out) {
    long total = divertedTotal.get();
    if (total == 0) {
      return 0;
    }
    out.printf("%,d record(s) of this job went to dead-letter files in %s (%,d in this run): they are not in the "
        + "table%n", total, badRecords != null ? badRecords : "the --bad-records directory of its earlier runs",
        total - divertedBefore.get());
    out.flush();
    return LakecommitCommand.COMPLETED_WITH_BAD_RECORDS;
  }


  /** Options of the other target are refused before anything is read. */
  private void checkTargetOptions() {
    if (table.target() == Target.HIVE) {
      table.metastoreUri();
      if (addNewColumns) {
        throw new IllegalArgumentException("Option --add-new-columns is for Iceberg tables; a Hive table's columns "
            + "are changed with ALTER TABLE");
      }
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
    try (Progress progress = new Progress(out, System.console() != null, rowsRead, divertedTotal)) {
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

  /** Records diverted by the job up to the reader's newest position (over all runs), and up to its start. */
  private final AtomicLong divertedTotal = new AtomicLong();
  private final AtomicLong divertedBefore = new AtomicLong();

  private CheckpointedSource<Record> counting(FileSource source, AtomicLong rows) {
    return position -> {
      CheckpointedSource.SourceReader<Record> reader = source.open(position);
      divertedBefore.set(FileSource.divertedAt(position));
      divertedTotal.set(FileSource.divertedAt(position));
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
          byte[] at = reader.position();
          divertedTotal.set(FileSource.divertedAt(at));
          return at;
        }

        @Override
        public void close() throws IOException {
          reader.close();
        }
      };
    };
  }
}
