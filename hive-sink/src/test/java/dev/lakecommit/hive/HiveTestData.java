package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.testing.RangeSource;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.LongFunction;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/** The rows the Hive tests write: a unique id, a payload, and two partition columns. */
final class HiveTestData {
  static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "payload", Types.StringType.get()),
      Types.NestedField.optional(3, "cat", Types.StringType.get()),
      Types.NestedField.optional(4, "bucket", Types.IntegerType.get()));
  static final List<String> PARTITIONED = List.of("cat", "bucket");

  /** Partition values that must never leave their partition directory, and one that is plain. */
  static final List<String> CATS = List.of("plain", "a/b", "../x", "a=b", "naïve ü");

  /** Ten partitions: every category, two buckets. */
  static final LongFunction<Record> MIXED = id -> row(id, CATS.get((int) (id % CATS.size())), (int) (id % 2));

  private HiveTestData() {}

  static Record row(long id, String cat, Integer bucket) {
    Record record = GenericRecord.create(SCHEMA);
    record.setField("id", id);
    record.setField("payload", "row-" + id);
    record.setField("cat", cat);
    record.setField("bucket", bucket);
    return record;
  }

  /** The keys {@code 0 .. count-1} as rows. */
  static CheckpointedSource<Record> source(long count, LongFunction<Record> rowOf) {
    RangeSource keys = new RangeSource(count);
    return position -> {
      CheckpointedSource.SourceReader<Long> reader = keys.open(position);
      return new CheckpointedSource.SourceReader<>() {
        @Override
        public Record next() throws IOException {
          Long key = reader.next();
          return key == null ? null : rowOf.apply(key);
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

  /** Stages rows with one writer of {@code sink} and combines them as checkpoint {@code checkpoint} of {@code job}. */
  static HiveCommittable stage(HiveSink<Record> sink, HiveAggregatedCommitter committer, String job,
      long checkpoint, List<Record> rows) throws IOException {
    JobId jobId = JobId.of(job);
    SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(jobId, 0, 1, 0, checkpoint - 1));
    for (Record row : rows) {
      writer.write(row);
    }
    Optional<StagingManifest> manifest = writer.prepareCommit(checkpoint);
    writer.close();
    return committer.combine(new CommitId(jobId, checkpoint), List.of(manifest.orElseThrow()));
  }

  static List<Record> rows(long from, long to, LongFunction<Record> rowOf) {
    List<Record> rows = new ArrayList<>();
    for (long id = from; id < to; id++) {
      rows.add(rowOf.apply(id));
    }
    return rows;
  }
}
