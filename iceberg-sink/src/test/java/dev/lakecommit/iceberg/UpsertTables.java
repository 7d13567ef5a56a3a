package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.testing.RangeSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/**
 * Upsert scenarios over {@link TestTables#SCHEMA}: record {@code i} of a source sets key {@code i % keys} to
 * {@code "v-" + i}, so every key is updated many times and the expected table is known for any prefix.
 */
final class UpsertTables {
  private UpsertTables() {}

  static IcebergSinkConfig.Builder config(CatalogFixture fixture) {
    return IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties())
        .catalogName(fixture.name())
        .table("db.events")
        .createTable(TestTables.SCHEMA, List.of("bucket(2, id)"))
        .mode(CommitMode.UPSERT)
        .upsertKey(List.of("id"));
  }

  static Record row(long key, String value) {
    return GenericRecord.create(TestTables.SCHEMA).copy(Map.of("id", key, "payload", value));
  }

  /** {@code count} updates of {@code keys} keys: record i sets key i % keys to "v-i". */
  static CheckpointedSource<Record> updates(long count, int keys) {
    RangeSource positions = new RangeSource(count);
    return position -> {
      CheckpointedSource.SourceReader<Long> reader = positions.open(position);
      return new CheckpointedSource.SourceReader<>() {
        @Override
        public Record next() throws IOException {
          Long i = reader.next();
          return i == null ? null : row(i % keys, "v-" + i);
        }

        @Override
        public byte[] position() {
          return reader.position();
        }

        @Override
        public void close() {}
      };
    };
  }

  /** What the table must hold after all {@code count} updates: the last value of each key. */
  static Map<Long, String> latest(long count, int keys) {
    Map<Long, String> expected = new HashMap<>();
    for (long i = 0; i < count; i++) {
      expected.put(i % keys, "v-" + i);
    }
    return expected;
  }

  /** Every row of the table, deletes applied (Iceberg's generic reader), as key to the values it holds. */
  static Map<Long, List<String>> rows(Table table) {
    table.refresh();
    Map<Long, List<String>> rows = new HashMap<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      for (Record record : records) {
        rows.computeIfAbsent((Long) record.getField("id"), k -> new ArrayList<>())
            .add((String) record.getField("payload"));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return rows;
  }

  /** The rows as key to value, failing on a duplicate key. */
  static Map<Long, String> single(Map<Long, List<String>> rows) {
    Map<Long, String> single = new HashMap<>();
    rows.forEach((key, values) -> {
      if (values.size() != 1) {
        throw new AssertionError("key " + key + " appears " + values.size() + " times: " + values);
      }
      single.put(key, values.get(0));
    });
    return single;
  }

  /** Checkpoint ids in the summaries of the snapshots of {@code job}, oldest first (a replay shows twice). */
  static List<Long> committedCheckpoints(Table table, String job) {
    table.refresh();
    List<Long> checkpoints = new ArrayList<>();
    for (Snapshot snapshot : table.snapshots()) {
      if (job.equals(snapshot.summary().get(CommitId.JOB_ID_KEY))) {
        checkpoints.add(Long.parseLong(snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY)));
      }
    }
    return checkpoints;
  }

  /** Delete files added by the job's snapshots, by content. */
  static Map<FileContent, Integer> deleteFiles(Table table) {
    table.refresh();
    Map<FileContent, Integer> counts = new HashMap<>();
    for (Snapshot snapshot : table.snapshots()) {
      if (snapshot.summary().get(CommitId.CHECKPOINT_ID_KEY) == null) {
        continue;
      }
      for (DeleteFile file : snapshot.addedDeleteFiles(table.io())) {
        counts.merge(file.content(), 1, Integer::sum);
      }
    }
    return counts;
  }
}
