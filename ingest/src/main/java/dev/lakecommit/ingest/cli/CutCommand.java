package dev.lakecommit.ingest.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.iceberg.CutCommitter;
import dev.lakecommit.iceberg.MultiTableSink;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code lakecommit cut}: the last cut of a job that writes several tables, and how to read it. */
@Command(name = "cut", mixinStandardHelpOptions = true, sortOptions = false,
    description = {
        "Shows the last cut of a job that writes several tables (ingest --route-by): each table's snapshot of the "
            + "cut's checkpoint, and the Spark SQL that reads the tables as of the cut.",
        "Read as the cut names them, the tables show one checkpoint of the job together, also where the catalog "
            + "commits table by table."})
public final class CutCommand implements Callable<Integer> {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Spec picocli.CommandLine.Model.CommandSpec spec;

  @Mixin TableOptions table;

  @Option(names = "--job-id", required = true, paramLabel = "ID", description = "The job (as ingest printed it).")
  String jobId;

  @Option(names = "--json", description = "Print as JSON.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    if (table.target() != TableKind.ICEBERG) {
      throw new IllegalArgumentException("Cuts are of Iceberg tables (--target iceberg)");
    }
    JobId job = JobId.of(jobId);
    Map<String, Object> report = new LinkedHashMap<>();
    report.put("job-id", job.value());
    try (MultiTableSink<Record> sink = reading(table)) {
      Optional<CutCommitter.Cut> cut = sink.lastCut(job);
      report.put("mode", sink.cutMode());
      report.put("checkpoint", cut.map(CutCommitter.Cut::checkpointId).orElse(null));
      List<String> sql = new ArrayList<>();
      List<Map<String, Object>> tables = cut.isPresent() ? tables(sink.catalog(), cut.get()) : List.of();
      for (Map<String, Object> row : tables) {
        sql.add("SELECT * FROM " + quoted(table.catalogName + "." + row.get("table")) + " VERSION AS OF "
            + row.get("snapshot") + ";");
      }
      report.put("tables", tables);
      report.put("spark-sql", sql);
    }
    if (json) {
      out.println(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(report));
    } else if (report.get("checkpoint") == null) {
      out.printf("Job %s has no cut yet (%s)%n", job, report.get("mode"));
    } else {
      @SuppressWarnings("unchecked")
      List<Map<String, Object>> tables = (List<Map<String, Object>>) report.get("tables");
      out.printf("Job %s: the last cut is checkpoint %s over %d table(s) (%s)%n", job, report.get("checkpoint"),
          tables.size(), report.get("mode"));
      print(out, tables);
      out.println("Read it in Spark SQL (catalog " + table.catalogName + "):");
      @SuppressWarnings("unchecked")
      List<String> sql = (List<String>) report.get("spark-sql");
      sql.forEach(statement -> out.println("  " + statement));
    }
    out.flush();
    return 0;
  }

  /** A multi-table sink of the catalog that only reads the jobs' cuts. */
  static MultiTableSink<Record> reading(TableOptions table) {
    return MultiTableSink.forRecords(table.catalogProperties())
        .catalogName(table.catalogName)
        .router(record -> {
          throw new IllegalStateException("this command reads cuts, it writes nothing");
        })
        .build();
  }

  /** Each table of the cut, sorted by name: its snapshot of the cut and the checkpoint that snapshot holds. */
  static List<Map<String, Object>> tables(Catalog catalog, CutCommitter.Cut cut) {
    List<Map<String, Object>> tables = new ArrayList<>();
    cut.snapshots().entrySet().stream().sorted(Map.Entry.comparingByKey(
        java.util.Comparator.comparing(TableIdentifier::toString))).forEach(entry -> {
          Snapshot snapshot = catalog.loadTable(entry.getKey()).snapshot(entry.getValue());
          Map<String, Object> row = new LinkedHashMap<>();
          row.put("table", entry.getKey().toString());
          row.put("snapshot", entry.getValue());
          String checkpoint = snapshot == null ? null : snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY);
          row.put("checkpoint", checkpoint == null ? null : Long.parseLong(checkpoint));
          tables.add(row);
        });
    return tables;
  }

  /** Each table of a cut on a line: its name, its snapshot of the cut, the checkpoint the snapshot holds. */
  static void print(PrintWriter out, List<Map<String, Object>> tables) {
    for (Map<String, Object> row : tables) {
      out.printf("  %-40s snapshot %-20s checkpoint %s%n", row.get("table"), row.get("snapshot"),
          row.get("checkpoint"));
    }
  }

  /** A multi-part name for Spark SQL: each part that is not a plain identifier in backticks. */
  static String quoted(String name) {
    return java.util.Arrays.stream(name.split("\\.")).map(part -> part.matches("[A-Za-z_][A-Za-z0-9_]*") ? part
        : "`" + part.replace("`", "``") + "`").collect(java.util.stream.Collectors.joining("."));
  }
}
