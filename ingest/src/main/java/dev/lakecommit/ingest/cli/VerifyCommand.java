package dev.lakecommit.ingest.cli;

import dev.lakecommit.ingest.source.FileSource;
import dev.lakecommit.ingest.source.InputFormat;
import dev.lakecommit.ingest.source.KafkaInput;
import dev.lakecommit.ingest.source.KafkaSource;
import dev.lakecommit.ingest.source.SchemaParser;
import dev.lakecommit.ingest.verify.Audit;
import dev.lakecommit.ingest.verify.AuditReport;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code lakecommit verify}: the exactly-once audit of a table against its source. */
@Command(name = "verify", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Compares a table with its source by a unique key and prints the duplicate, loss and "
        + "out-of-order rates. Exit code 1 on any duplicate or loss.",
        "Inputs larger than memory are compared through spill files.",
        "With --target hive the table is read as Hive reads it: the Parquet files of the partitions the metastore "
            + "lists; the out-of-order rate follows the checkpoint ids in the file names (one job per table)."})
public final class VerifyCommand implements Callable<Integer> {
  @Spec picocli.CommandLine.Model.CommandSpec spec;

  @Option(names = "--source", required = true, paramLabel = "PATH|GLOB|URI",
      description = "The source files, or Kafka topics (kafka://host:9092/topic): read from the earliest offsets "
          + "to the end offsets seen when the audit starts.")
  String source;

  @Option(names = {"-K", "--kafka-property"}, paramLabel = "KEY=VALUE",
      description = "Kafka consumer setting for a kafka:// source (security, SASL/SSL, client id).")
  java.util.Map<String, String> kafkaProperties = new java.util.LinkedHashMap<>();

  @Option(names = "--avro-schema", paramLabel = "FILE",
      description = "For a kafka:// source with --format avro: the values' Avro writer schema (.avsc).")
  java.nio.file.Path avroSchema;

  @Option(names = "--format", paramLabel = "FORMAT", description = "json, csv, parquet or avro.")
  String format;

  @Option(names = "--schema", paramLabel = "COLUMNS", description = "Schema of the source (default: inferred).")
  String schema;

  @Mixin TableOptions table;

  @Option(names = "--key", required = true, paramLabel = "COLUMN", description = "The unique key column.")
  String key;

  @Option(names = "--event-time", paramLabel = "COLUMN",
      description = "An event-time column: also report the out-of-order rate.")
  String eventTime;

  @Option(names = "--job-id", paramLabel = "ID",
      description = "With a table per record (--table 'db.t_${col}'): audit the tables as of the job's last cut, each "
          + "at the snapshot the cut names (a table the cut does not name has none of the job's rows).")
  String jobId;

  /** What the audit read, when it read the tables of a cut. */
  private String asOf;

  @Option(names = "--spill-dir", paramLabel = "DIR", description = "Where to spill keys (default: a temp dir).")
  Path spillDir;

  @Option(names = "--json", description = "Print the report as JSON.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    if (KafkaInput.isKafka(source)) {
      return report(out, kafkaAudit());
    }
    FileSource input = TableOptions.input("--source", () -> FileSource.of(source,
        format == null ? null : InputFormat.of(format), schema == null ? null : SchemaParser.parse(schema),
        table.catalogProperties(), table.hadoopConf()));
    Path spill = spill();
    AuditReport report;
    try (TableAccess.OpenRows rows = openRows()) {
      report = Audit.run(input, rows.rows(), key, eventTime, spill, Audit.DEFAULT_MAX_KEYS_IN_MEMORY);
    }
    return report(out, report);
  }

  private Path spill() throws java.io.IOException {
    return spillDir != null ? Files.createDirectories(spillDir) : Files.createTempDirectory("lakecommit-verify");
  }

  /** The audit against Kafka topics; a key or event time named {@code kafka_*} is the record's own field. */
  private AuditReport kafkaAudit() throws Exception {
    KafkaInput input = KafkaInput.parse(source);
    java.util.List<KafkaSource.MetadataColumn> metadata = new java.util.ArrayList<>();
    for (String column : java.util.Arrays.asList(key, eventTime)) {
      for (KafkaSource.MetadataColumn candidate : KafkaSource.MetadataColumn.values()) {
        if (candidate.column().equals(column) && !metadata.contains(candidate)) {
          metadata.add(candidate);
        }
      }
    }
    org.apache.avro.Schema avro = KafkaOptions.avroSchema(avroSchema);
    KafkaSource.ValueFormat valueFormat = format == null ? KafkaSource.ValueFormat.JSON
        : KafkaSource.ValueFormat.of(format);
    if (valueFormat == KafkaSource.ValueFormat.DEBEZIUM) {
      throw new IllegalArgumentException("Invalid option --format debezium for verify: the audit expects a row per "
          + "message, and a table of change events holds the last row of each key");
    }
    KafkaSource.Settings settings = new KafkaSource.Settings(input, valueFormat, null, metadata,
        java.util.Map.copyOf(kafkaProperties), KafkaSource.StartingOffsets.parse("earliest"),
        KafkaSource.OnLostOffsets.FAIL, true, java.time.Duration.ofSeconds(30), avro);
    KafkaSource kafka = new KafkaSource(settings.withValueSchema(KafkaOptions.valueSchema(schema, avro, settings)))
        .ignoreUnknownColumns();
    try (TableAccess.OpenRows rows = openRows()) {
      return Audit.run(kafka, rows.rows(), key, eventTime, spill(), Audit.DEFAULT_MAX_KEYS_IN_MEMORY);
    }
  }

  /**
   * The table's rows; for a pattern of a routed job ({@code --table 'db.orders_${region}'}), the rows of every table
   * of its namespace whose name fits it, audited as one.
   */
  private TableAccess.OpenRows openRows() throws java.io.IOException {
    String pattern = table.table();
    if (!pattern.contains("${")) {
      if (jobId != null) {
        throw new IllegalArgumentException("Option --job-id is for a table per record (--table 'db.t_${col}'): it"
            + " audits the tables as of the job's last cut");
      }
      return TableAccess.of(table).openRows();
    }
    int dot = pattern.lastIndexOf('.');
    if (dot < 0 || pattern.substring(0, dot).contains("${")) {
      throw new IllegalArgumentException("Invalid option --table: '" + pattern + "' (a routed job's tables are"
          + " verified by a pattern with ${COLUMN} in the table's name, not its namespace)");
    }
    org.apache.iceberg.catalog.Namespace namespace = org.apache.iceberg.catalog.Namespace.of(
        pattern.substring(0, dot).split("\\."));
    java.util.regex.Pattern names = java.util.regex.Pattern.compile(java.util.Arrays.stream(
        pattern.substring(dot + 1).split("\\$\\{[^}]*\\}", -1)).map(java.util.regex.Pattern::quote)
        .collect(java.util.stream.Collectors.joining("[A-Za-z0-9_-]+")));
    org.apache.iceberg.catalog.Catalog catalog = dev.lakecommit.iceberg.CatalogLoader.load(table.catalogName,
        table.catalogProperties(), table.hadoopConf());
    String name = pattern;
    java.util.Map<org.apache.iceberg.catalog.TableIdentifier, Long> cut = null;
    if (jobId != null) {
      dev.lakecommit.core.JobId job = dev.lakecommit.core.JobId.of(jobId);
      try (dev.lakecommit.iceberg.MultiTableSink<org.apache.iceberg.data.Record> sink = CutCommand.reading(table)) {
        dev.lakecommit.iceberg.CutCommitter.Cut last = sink.lastCut(job).orElseThrow(() ->
            new IllegalArgumentException("Invalid option --job-id: job " + jobId + " has committed no cut"));
        cut = last.snapshots();
        name = pattern + " at the last cut of job " + jobId + " (checkpoint " + last.checkpointId() + ")";
        asOf = "As of the last cut of job " + jobId + ": checkpoint " + last.checkpointId() + ", " + cut;
      }
    }
    java.util.List<dev.lakecommit.ingest.verify.TableRows> tables = new java.util.ArrayList<>();
    for (org.apache.iceberg.catalog.TableIdentifier identifier : catalog.listTables(namespace)) {
      if (names.matcher(identifier.name()).matches() && (cut == null || cut.containsKey(identifier))) {
        tables.add(new dev.lakecommit.ingest.verify.IcebergTableRows(catalog.loadTable(identifier),
            cut == null ? null : cut.get(identifier)));
      }
    }
    if (tables.isEmpty()) {
      throw new IllegalArgumentException("Invalid option --table: no table of " + namespace + " fits '" + pattern
          + "'" + (cut == null ? "" : " among the tables of the last cut of job " + jobId + ": " + cut.keySet()));
    }
    return new TableAccess.OpenRows(new dev.lakecommit.ingest.verify.RoutedTableRows(name, tables), () -> {
      if (catalog instanceof java.io.Closeable closeable) {
        closeable.close();
      }
    });
  }

  private int report(PrintWriter out, AuditReport report) {
    if (asOf != null && !json) {
      out.println(asOf);
    }
    out.println(json ? report.toJson() : report.toTable());
    out.flush();
    return report.passed() ? 0 : LakecommitCommand.VERIFY_FAILED;
  }
}
