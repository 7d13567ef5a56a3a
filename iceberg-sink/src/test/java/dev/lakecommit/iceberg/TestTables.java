package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.Types;

/** A keyed test table, real Parquet data files for it, and a reader that counts rows per key. */
final class TestTables {
  static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "payload", Types.StringType.get()));
  static final TableIdentifier IDENT = TableIdentifier.of("db", "events");
  static final JobId JOB = JobId.of("job-1");

  private TestTables() {}

  static Table create(Catalog catalog) {
    if (catalog instanceof SupportsNamespaces namespaces && !namespaces.namespaceExists(Namespace.of("db"))) {
      namespaces.createNamespace(Namespace.of("db"));
    }
    return catalog.createTable(IDENT, SCHEMA, PartitionSpec.unpartitioned(), Map.of("format-version", "2"));
  }

  /** Writes the keys {@code from .. to-1} into one real Parquet file of the table's data location. */
  static DataFile dataFile(Table table, long from, long to) {
    OutputFile out = table.io().newOutputFile(
        table.locationProvider().newDataLocation("test-" + UUID.randomUUID() + ".parquet"));
    try {
      DataWriter<Record> writer = Parquet.writeData(out)
          .forTable(table)
          .createWriterFunc(GenericParquetWriter::create)
          .withSpec(table.spec())
          .overwrite()
          .build();
      try (writer) {
        GenericRecord record = GenericRecord.create(table.schema());
        for (long key = from; key < to; key++) {
          writer.write(record.copy(Map.of("id", key, "payload", "row-" + key)));
        }
      }
      return writer.toDataFile();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static CheckpointChanges changes(long checkpoint, List<DataFile> files) {
    long records = files.stream().mapToLong(DataFile::recordCount).sum();
    long bytes = files.stream().mapToLong(DataFile::fileSizeInBytes).sum();
    return new CheckpointChanges(new CommitId(JOB, checkpoint), files, List.of(), files.size(), records, bytes);
  }

  /** Every key in the table, as read by Iceberg's generic reader, with how often it appears. */
  static Map<Long, Integer> keyCounts(Table table) {
    table.refresh();
    Map<Long, Integer> counts = new HashMap<>();
    try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
      for (Record row : rows) {
        counts.merge((Long) row.getField("id"), 1, Integer::sum);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return counts;
  }

  /** Snapshots that carry the checkpoint id of the test job, oldest first. */
  static List<Long> committedCheckpoints(Table table) {
    table.refresh();
    List<Long> checkpoints = new ArrayList<>();
    for (Snapshot snapshot : table.snapshots()) {
      String checkpoint = snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY);
      if (JOB.value().equals(snapshot.summary().get(CommitId.JOB_ID_KEY)) && checkpoint != null) {
        checkpoints.add(Long.parseLong(checkpoint));
      }
    }
    return checkpoints;
  }
}
