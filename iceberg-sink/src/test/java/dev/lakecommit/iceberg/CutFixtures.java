package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.Schema;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileIO;

/** What the cut tests share: a job's checkpoint files, its commit, and what readers see of the tables. */
final class CutFixtures {
  static final JobId JOB = JobId.of("transfers");
  static final String POSITION = "lakecommit.position.transfers";
  static final Schema SCHEMA = new Schema(
      org.apache.iceberg.types.Types.NestedField.required(1, "id", org.apache.iceberg.types.Types.LongType.get()));

  private CutFixtures() {}

  /**
   * Each crash point of the protocol once, on the catalogs in turn starting at catalog {@code first} (every point on
   * every catalog with {@code -Plong}): {@code writeAt}-th write, the claim's first, the others' third or later
   * ({@code otherAt}).
   */
  static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> crashPoints(List<String> catalogs,
      int first, int writeAt, int otherAt) {
    List<org.junit.jupiter.params.provider.Arguments> arguments = new java.util.ArrayList<>();
    List<String> points = dev.lakecommit.core.testing.CrashSchedule.TARGET_POINTS;
    for (int i = 0; i < points.size(); i++) {
      String point = points.get(i);
      int occurrence = point.equals(dev.lakecommit.core.testing.CrashSchedule.WRITE) ? writeAt
          : point.equals(dev.lakecommit.core.testing.CrashSchedule.EPOCH_CLAIMED) ? 1 : otherAt;
      for (int c = 0; c < catalogs.size(); c++) {
        if (dev.lakecommit.core.testing.TestScale.isLong() || c == (i + first) % catalogs.size()) {
          arguments.add(org.junit.jupiter.params.provider.Arguments.of(catalogs.get(c), point, occurrence));
        }
      }
    }
    return arguments.stream();
  }

  /** Checkpoint {@code checkpoint}'s files: one of 10 rows per table, named by table and checkpoint. */
  static Map<TableIdentifier, List<DataFile>> files(List<TableIdentifier> tables, long checkpoint) {
    Map<TableIdentifier, List<DataFile>> files = new LinkedHashMap<>();
    for (TableIdentifier table : tables) {
      files.put(table, List.of(DataFiles.builder(PartitionSpec.unpartitioned()).withPath(path(table, checkpoint))
          .withFileSizeInBytes(1_000).withRecordCount(10).withFormat(FileFormat.PARQUET).build()));
    }
    return files;
  }

  static String path(TableIdentifier table, long checkpoint) {
    return "/data/" + table + "/transfers-" + checkpoint + ".parquet";
  }

  /** Commits the job's checkpoint over the tables, its position {@code offset-<checkpoint>}. */
  static CommitOutcome commit(CutCommitter cut, long checkpoint, long epoch, List<TableIdentifier> tables) {
    return cut.commit(new CommitId(JOB, checkpoint), epoch, files(tables, checkpoint),
        Map.of(POSITION, "offset-" + checkpoint));
  }

  /** The data files a reader of the table sees now, by path, with how often each is listed. */
  static Map<String, Integer> liveFiles(Catalog catalog, TableIdentifier table) throws Exception {
    Map<String, Integer> files = new HashMap<>();
    try (CloseableIterable<FileScanTask> tasks = catalog.loadTable(table).newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        files.merge(task.file().path().toString(), 1, Integer::sum);
      }
    }
    return files;
  }

  /**
   * Each table's checkpoint of the job, from the metadata its pointer names, every pointer of the JDBC catalog's
   * database read in one query: what a reader of the catalog sees at one moment.
   *
   * @param where an SQL condition on {@code iceberg_tables} (a namespace), or null for every table
   */
  static Map<String, Long> checkpointsAtOnce(Map<String, String> jdbcCatalog, String where, FileIO io)
      throws SQLException {
    Properties connection = new Properties();
    jdbcCatalog.forEach((key, value) -> {
      if (key.startsWith("jdbc.")) {
        connection.put(key.substring("jdbc.".length()), value);
      }
    });
    Map<String, String> pointers = new HashMap<>();
    try (Connection db = DriverManager.getConnection(jdbcCatalog.get("uri"), connection);
        Statement select = db.createStatement();
        ResultSet rows = select.executeQuery("SELECT table_name, metadata_location FROM iceberg_tables"
            + (where == null ? "" : " WHERE " + where))) {
      while (rows.next()) {
        pointers.put(rows.getString(1), rows.getString(2));
      }
    }
    Map<String, Long> checkpoints = new HashMap<>();
    pointers.forEach((table, location) -> checkpoints.put(table,
        Watermarks.watermark(TableMetadataParser.read(io, location), JOB).orElse(0)));
    return checkpoints;
  }

  /** Three new tables (credits, debits, orders) in namespace {@code ns}, created with it where it is missing. */
  static List<TableIdentifier> newTables(Catalog catalog, String ns) {
    if (catalog instanceof SupportsNamespaces namespaces && !namespaces.namespaceExists(Namespace.of(ns))) {
      namespaces.createNamespace(Namespace.of(ns));
    }
    List<TableIdentifier> tables = List.of(TableIdentifier.of(ns, "credits"), TableIdentifier.of(ns, "debits"),
        TableIdentifier.of(ns, "orders"));
    for (TableIdentifier table : tables) {
      if (catalog.tableExists(table)) {
        catalog.dropTable(table, false);
      }
      catalog.createTable(table, SCHEMA, PartitionSpec.unpartitioned());
    }
    return tables;
  }
}
