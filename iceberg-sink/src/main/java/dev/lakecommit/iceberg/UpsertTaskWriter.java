package dev.lakecommit.iceberg;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.BaseTaskWriter;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.FileWriterFactory;
import org.apache.iceberg.io.OutputFileFactory;

/**
 * One checkpoint of one upsert writer, on Iceberg's own equality-delta writer: per partition, an upsert writes an
 * equality delete of the key, unless this writer added the key earlier in the checkpoint, in which case that row
 * is deleted by position (equality deletes do not apply to data files of the same commit), and then the row; a
 * delete is the same without the row. Files roll at the target size.
 */
final class UpsertTaskWriter extends BaseTaskWriter<Record> {
  private final Schema schema;
  private final UpsertKey key;
  private final PartitionKey partitionKey;
  private final InternalRecordWrapper rowWrapper;
  private final InternalRecordWrapper keyWrapper;
  private final Map<PartitionKey, DeltaWriter> writers = new HashMap<>();

  UpsertTaskWriter(PartitionSpec spec, Schema schema, UpsertKey key, FileWriterFactory<Record> writerFactory,
      OutputFileFactory fileFactory, FileIO io, long targetFileSize) {
    super(spec, FileFormat.PARQUET, writerFactory, fileFactory, io, targetFileSize);
    this.schema = schema;
    this.key = key;
    this.partitionKey = new PartitionKey(spec, schema);
    this.rowWrapper = new InternalRecordWrapper(schema.asStruct());
    this.keyWrapper = new InternalRecordWrapper(key.keySchema().asStruct());
  }

  /** Replaces the row of the record's key (if any) by the record. */
  void upsert(Record row) throws IOException {
    DeltaWriter writer = writerOf(row);
    writer.deleteKey(key.keyOf(row));
    writer.write(row);
  }

  /**
   * Deletes the row of the record's key, if any: by position if this writer added it earlier in the checkpoint
   * (then the equality delete of that earlier upsert already covers older rows), else by an equality delete.
   * Reads the key columns only; they hold every partition source column, so the partition is the key's.
   */
  void delete(Record row) throws IOException {
    writerOf(row).deleteKey(key.keyOf(row));
  }

  private DeltaWriter writerOf(Record row) {
    partitionKey.partition(rowWrapper.wrap(row));
    DeltaWriter writer = writers.get(partitionKey);
    if (writer == null) {
      PartitionKey copy = partitionKey.copy();
      writer = new DeltaWriter(spec().isUnpartitioned() ? null : copy);
      writers.put(copy, writer);
    }
    return writer;
  }

  @Override
  public void write(Record row) throws IOException {
    upsert(row);
  }

  @Override
  public void close() throws IOException {
    try {
      for (DeltaWriter writer : writers.values()) {
        writer.close();
      }
    } finally {
      writers.clear();
      super.close();
    }
  }

  private final class DeltaWriter extends BaseEqualityDeltaWriter {
    DeltaWriter(StructLike partition) {
      super(partition, schema, key.keySchema());
    }

    @Override
    protected StructLike asStructLike(Record data) {
      return rowWrapper.wrap(data);
    }

    @Override
    protected StructLike asStructLikeKey(Record keyRecord) {
      return keyWrapper.wrap(keyRecord);
    }
  }
}
