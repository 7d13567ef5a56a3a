package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.ForwardingSourceReader;
import dev.lakecommit.core.runtime.JobListener;
import dev.lakecommit.core.runtime.JobResult;
import dev.lakecommit.core.runtime.RestoreBehindPolicy;
import dev.lakecommit.core.runtime.StandaloneJob;
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
import dev.lakecommit.iceberg.MultiTableSink;
import org.apache.iceberg.Schema;
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
      description = "A file, a directory or a glob; local, s3:// or s3a://; Kafka topics: "
          + "kafka://host:9092/topic[,topic2] or kafka://host:9092/?pattern=REGEX; or a PostgreSQL database's changes:"
          + " postgresql://USER@HOST:5432/DB?tables=SCHEMA.TABLE[,...] (password in PGPASSWORD).")
  String input;

  @Option(names = {"-E", "--debezium-property"}, paramLabel = "KEY=VALUE",
      description = "postgresql:// input: a setting of Debezium's PostgreSQL connector, e.g. -E "
          + "snapshot.mode=no_data, -E database.sslmode=require (repeatable; values of secret-looking keys are never "
          + "printed).")
  java.util.Map<String, String> debezium = new java.util.LinkedHashMap<>();

  @Option(names = "--format", paramLabel = "FORMAT",
      description = "json, csv, parquet or avro (default: by file extension); Kafka: json (default), csv, avro or "
          + "debezium (Debezium's change events in JSON, applied by --upsert-key).")
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

  @Mixin KafkaOptions kafka;

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

  @Option(names = "--checkpoint-every-records", paramLabel = "N", defaultValue = "1000000",
      description = "Records per checkpoint (default: ${DEFAULT-VALUE}). Each checkpoint is one commit, and closes "
          + "every open file: fewer make fewer, larger files; --write-buffer-size bounds the memory meanwhile.")
  long checkpointEveryRecords;

  @Option(names = "--checkpoint-interval", paramLabel = "DURATION", defaultValue = "PT30S",
      description = "Longest time between checkpoints, ISO-8601 or like 30s, 5m (default: 30s).",
      converter = DurationConverter.class)
  Duration checkpointInterval;

  @Option(names = "--codec", paramLabel = "CODEC", description = "Parquet codec: zstd, snappy, gzip, lz4 or "
      + "uncompressed (default: zstd for Iceberg, snappy for Hive, which Hive 2.x readers read).")
  String codec;

  @Option(names = "--bad-records", paramLabel = "DIR",
      description = "Write records that do not parse or do not fit the schema to dead-letter files here and go on "
          + "(default: stop at the first). Unreadable files and I/O errors always stop the job.")
  Path badRecords;

  @Option(names = "--max-bad-records", paramLabel = "N|P%",
      description = "With --bad-records: stop the job when more than N records in all went to dead-letter files, "
          + "or (P%%, e.g. 1%%) more than P percent of the records it read, checked at each bad record from the "
          + "job's 1,000th record on and at the end of the input (default: no limit).")
  String maxBadRecords;

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

  @Option(names = "--route-by", paramLabel = "COLUMN",
      description = "Write each record to the table --table names with $${COLUMN} replaced by the record's value "
          + "of the column (e.g. --route-by kind --table 'shop.$${kind}'); each table is created on its first record. "
          + "Every checkpoint is one cut over the tables it wrote: on a JDBC catalog (the embedded default) all of "
          + "them show it or none does, elsewhere a cut record names each table's snapshot (lakecommit cut). With "
          + "--format debezium: source.table, a table per source table of the change events.")
  String routeBy;

  @Option(names = "--require-atomic-cut",
      description = "With --route-by: refuse a catalog that cannot commit several tables at once (only JDBC "
          + "catalogs, and REST catalogs declared atomic, can).")
  boolean requireAtomicCut;

  @Option(names = "--start-afresh-on-new-table",
      description = "If the checkpoint directory was written for another table of the same name (dropped and "
          + "created again): read the input from the start into the new table instead of stopping (default: stop).")
  boolean startAfreshOnNewTable;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    if (dev.lakecommit.ingest.source.KafkaInput.isKafka(input)) {
      return new KafkaIngest(this).run(out);
    }
    if (dev.lakecommit.ingest.source.PostgresInput.isPostgres(input)) {
      return new PostgresIngest(this).run(out);
    }
    RoutedTables routes = routes();
    TableAccess access = routes != null ? new IcebergAccess(table) : TableAccess.of(table);
    TableAccess.IngestSettings settings = ingestSettings();
    if (routes == null) {
      access.checkIngestOptions(settings);
    }
    checkOptions();
    S3Staging.sweepDeadProcesses();
    FileSource source = TableOptions.input("--input", () -> FileSource.of(input,
        format == null ? null : InputFormat.of(format), schema == null ? null : SchemaParser.parse(schema),
        table.catalogProperties(), table.hadoopConf()));
    JobId jobId = job.resolveJobId(input, table.table(), table, source, onChangedInput, out);
    if (badRecords != null) {
      source.badRecords(new DeadLetterFiles(badRecords, jobId.value(), (int) (System.currentTimeMillis() / 1000)))
          .maxBadRecords(badRecordLimit().count()).maxBadRecordRate(badRecordLimit().rate());
    }
    // Every input column, also one that first appears after the sample, is planned against the table.
    if (routes != null) {
      source.evolve(source.scan().plan(null, false, table.table()));
    } else {
      access.planSchema(source, source.scan(), settings);
    }
    if (badRecords == null) {
      firstRecord(source);
    }
    if (routes != null) {
      return routed(out, routes, source, jobId, access);
    }
    JobResult result;
    try (Sink<Record, ?, ?> sink = access.openSink(source.schema(), settings)) {
      result = run(out, sink, source, jobId, access, access.router(sink, settings));
    }
    report(out, access.describe(jobId), jobId, result);
    RuntimeOptions.report(out, result);
    return diverted(out);
  }

  /** {@code --route-by}: the tables of the records, checked; null without it. */
  RoutedTables routes() {
    if (routeBy == null) {
      if (requireAtomicCut) {
        throw new IllegalArgumentException("Option --require-atomic-cut is for --route-by");
      }
      return null;
    }
    if (table.target() != TableKind.ICEBERG) {
      throw new IllegalArgumentException("Option --route-by is for Iceberg tables (--target iceberg)");
    }
    if (tableLocation != null || external || successFiles) {
      throw new IllegalArgumentException("Options --table-location, --external and --success-files are for "
          + "--target hive");
    }
    write.checkIceberg();
    if (maintain.every != 0 || noCreateTable) {
      throw new IllegalArgumentException("Options --maintain-every and --no-create-table are for one table; with"
          + " --route-by every table is created on its first record with the input's schema");
    }
    return RoutedTables.of(routeBy, table.table());
  }

  /** A routed ingest: one multi-table sink, one cut per checkpoint over the tables it wrote. */
  private int routed(PrintWriter out, RoutedTables routes, FileSource source, JobId jobId, TableAccess access)
      throws Exception {
    JobResult result;
    try (MultiTableSink<Record> sink = routedSink(routes, source.schema(), jobId, out)) {
      result = run(out, sink, source, jobId, access, write.routesByKey() ? sink.keyRouter() : null);
    }
    reportRouted(out, jobId, result);
    RuntimeOptions.report(out, result);
    return diverted(out);
  }

  /** The sink of a routed ingest of records of {@code schema}; says how its cuts become visible. */
  MultiTableSink<Record> routedSink(RoutedTables routes, Schema schema, JobId jobId, PrintWriter out) {
    return routedSink(MultiTableSink.forRecords(routedCatalog(), schema).router(routes.router(schema)), jobId, out);
  }

  /** The catalog of a routed ingest's tables. */
  java.util.Map<String, String> routedCatalog() {
    table.sinkConfig(); // the embedded warehouse's directory
    return table.catalogProperties();
  }

  /**
   * A routed ingest's sink, its records and tables configured by the caller, the rest by the command's options;
   * says how its cuts become visible.
   */
  MultiTableSink<Record> routedSink(MultiTableSink.Builder<Record> config, JobId jobId, PrintWriter out) {
    config.catalogName(table.catalogName)
        .partitionBy(name -> partitionBy)
        .requireAtomicCut(requireAtomicCut)
        .addNewColumns(addNewColumns);
    write.applyTo(config, parallelism);
    if (codec != null) {
      java.util.Map<String, String> properties = new java.util.LinkedHashMap<>(write.tableProperties);
      properties.put(org.apache.iceberg.TableProperties.PARQUET_COMPRESSION,
          codec.toLowerCase(java.util.Locale.ROOT));
      config.tableProperties(properties);
    }
    MultiTableSink<Record> sink = config.build();
    out.printf("Cuts of job %s: %s%n", jobId, sink.cutMode());
    out.flush();
    return sink;
  }

  /** What a routed ingest committed. */
  void reportRouted(PrintWriter out, JobId jobId, JobResult result) {
    if (result.recordsRead() == 0 && result.commits() == 0) {
      out.printf("Nothing new to commit: job %s already committed up to checkpoint %d%n", jobId,
          result.lastCheckpointId());
    } else {
      out.printf("Committed %,d rows in %d checkpoint(s) (%d cut(s), %d already committed) to the tables %s; the "
          + "last cut is checkpoint %d (lakecommit cut --job-id %s)%n", result.recordsRead(), result.checkpoints(),
          result.commits(), result.skippedCommits(), table.table(), result.lastCheckpointId(), jobId);
    }
    out.flush();
  }

  TableAccess.IngestSettings ingestSettings() {
    return new TableAccess.IngestSettings(partitionBy, !noCreateTable, addNewColumns, codec, tableLocation, external,
        successFiles, write, parallelism);
  }

  /** {@code fail} or {@code new-job}. */
  static final class OnChangedInputConverter implements picocli.CommandLine.ITypeConverter<JobOptions.OnChangedInput> {
    @Override
    public JobOptions.OnChangedInput convert(String value) {
      return JobOptions.OnChangedInput.of(value);
    }
  }

  /** Says how many records of the job went to dead-letter files; the exit code. */
  int diverted(PrintWriter out) {
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

  /**
   * Reads the input's first record before the table is created: an input the job cannot read at all (a wrong CSV
   * delimiter, a format it does not fit) fails here and leaves nothing behind.
   */
  private static void firstRecord(FileSource source) throws IOException {
    try (CheckpointedSource.SourceReader<Record> reader = source.open(null)) {
      reader.next();
    }
  }

  /** {@code --max-bad-records}: a count or a share of the records read; no limit when not given. */
  record BadRecordLimit(long count, double rate) {
    static BadRecordLimit of(String value) {
      if (value == null) {
        return new BadRecordLimit(Long.MAX_VALUE, 1);
      }
      String text = value.strip();
      try {
        if (text.endsWith("%")) {
          double percent = Double.parseDouble(text.substring(0, text.length() - 1).strip());
          if (percent >= 0 && percent <= 100) {
            return new BadRecordLimit(Long.MAX_VALUE, percent / 100);
          }
        } else {
          long count = Long.parseLong(text);
          if (count >= 0) {
            return new BadRecordLimit(count, 1);
          }
        }
      } catch (NumberFormatException e) {
        // refused below
      }
      throw new IllegalArgumentException("Invalid value for option --max-bad-records: '" + value + "' (a count >= "
          + "0 such as 100, or a percentage from 0% to 100% such as 1%)");
    }
  }

  BadRecordLimit badRecordLimit() {
    return BadRecordLimit.of(maxBadRecords);
  }

  /** The job's own settings, checked before anything is read or created. */
  void checkOptions() {
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
    if (maxBadRecords != null && badRecords == null) {
      throw new IllegalArgumentException("Option --max-bad-records needs --bad-records DIR");
    }
    badRecordLimit();
    runtime.check();
    maintain.check(table);
  }

  private JobResult run(PrintWriter out, Sink<Record, ?, ?> sink, FileSource source, JobId jobId,
      TableAccess access, java.util.function.ToIntBiFunction<Record, Integer> router) throws Exception {
    out.printf("Ingesting %d file(s) from %s into %s as job %s%n", source.files().size(), input, table.table(),
        jobId);
    out.flush();
    AtomicLong rowsRead = new AtomicLong();
    try (Progress progress = new Progress(out, System.console() != null, rowsRead, divertedTotal);
        JobMetrics metrics = JobMetrics.serve(kafka, jobId.value(), divertedTotal, null, out);
        PeriodicMaintenance maintenance = maintain.around(sink, watchers(metrics, progress))) {
      StandaloneJob.Builder<Record> builder = StandaloneJob.builder(sink, runtime.paced(counting(source, rowsRead)));
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
          .listener(maintenance != null ? maintenance : watchers(metrics, progress))
          .build()
          .run();
    }
  }

  /** What watches a file job: progress, and metrics if served. */
  private static JobListener watchers(JobMetrics metrics, Progress progress) {
    return metrics == null ? progress : JobListener.both(metrics, progress);
  }

  static void report(PrintWriter out, TableAccess.Description table, JobId jobId, JobResult result) {
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

  /** Records diverted by the job up to the reader's newest position (over all runs), and up to its start. */
  final AtomicLong divertedTotal = new AtomicLong();
  final AtomicLong divertedBefore = new AtomicLong();

  private CheckpointedSource<Record> counting(FileSource source, AtomicLong rows) {
    return position -> {
      CheckpointedSource.SourceReader<Record> reader = source.open(position);
      divertedBefore.set(FileSource.divertedAt(position));
      divertedTotal.set(FileSource.divertedAt(position));
      return new ForwardingSourceReader<>(reader) {
        @Override
        protected void onRecord(Record record) {
          rows.incrementAndGet();
        }

        @Override
        public byte[] position() {
          byte[] at = super.position();
          divertedTotal.set(FileSource.divertedAt(at));
          return at;
        }
      };
    };
  }
}
