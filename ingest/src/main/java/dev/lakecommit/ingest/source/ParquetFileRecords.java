package dev.lakecommit.ingest.source;

import java.io.IOException;
import java.util.Iterator;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.mapping.MappingUtil;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.parquet.ParquetSchemaUtil;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.schema.MessageType;

/**
 * Parquet through Iceberg's generic Parquet reader. Offsets and counts are records. A reader resuming at record
 * {@code n} skips whole row groups by their row counts (the read starts at the first row group it needs), then
 * the rows before {@code n} in that group.
 */
final class ParquetFileRecords implements FileRecords {
  private final String file;
  private final Schema schema;
  private final CloseableIterable<Record> records;
  private final Iterator<Record> rows;
  private long count;

  ParquetFileRecords(String file, InputFile input, Schema schema, long start) throws IOException {
    this.file = file;
    this.schema = schema;
    this.count = start;
    long length = input.getLength();
    if (length == 0 && !input.exists()) { // a local file that is gone has length 0
      throw new NotFoundException("File does not exist: %s", file);
    }
    if (length == 0) {
      this.records = CloseableIterable.empty();
      this.rows = records.iterator();
      return;
    }
    ParquetMetadata footer = footer(file, input);
    Schema fileSchema = fileSchema(footer.getFileMetaData().getSchema());
    Schema readSchema;
    try {
      readSchema = FileSchemas.readSchema(schema, fileSchema);
    } catch (FileSchemas.MismatchException e) {
      throw BadRecordException.file(file, 0, false, e.getMessage(), null);
    }
    long skipped = 0;
    long splitStart = 0;
    List<BlockMetaData> groups = footer.getBlocks();
    for (BlockMetaData group : groups) {
      if (skipped + group.getRowCount() > start) {
        splitStart = group.getStartingPos();
        break;
      }
      skipped += group.getRowCount();
      splitStart = length; // past the last group: nothing left to read
    }
    try {
      this.records = Parquet.read(input)
          .project(readSchema)
          .createReaderFunc(type -> GenericParquetReaders.buildReader(readSchema, type))
          .withNameMapping(MappingUtil.create(fileSchema))
          .split(splitStart, length - splitStart)
          .build();
      this.rows = records.iterator();
      for (long row = skipped; row < start && rows.hasNext(); row++) {
        rows.next();
      }
    } catch (RuntimeException e) {
      if (Storage.isNotFound(e)) {
        throw e;
      }
      throw BadRecordException.file(file, start + 1, false, "cannot read the Parquet file: " + e.getMessage(), e);
    }
  }

  /** The footer, or a whole-file bad input for a file that is not Parquet. */
  static ParquetMetadata footer(String file, InputFile input) throws IOException {
    try (ParquetFileReader reader = ParquetFileReader.open(Inputs.parquet(input))) {
      return reader.getFooter();
    } catch (RuntimeException e) {
      InputReadException read = InputReadException.in(e);
      if (read != null) {
        throw read; // the storage failed, not the format
      }
      if (Storage.isNotFound(e)) {
        throw e;
      }
      throw BadRecordException.file(file, 0, false, "not a readable Parquet file: " + e.getMessage(), e);
    } catch (IOException e) {
      if (InputReadException.in(e) != null || Storage.isNotFound(e)
          || !String.valueOf(e.getMessage()).contains("Parquet")) {
        throw e;
      }
      throw BadRecordException.file(file, 0, false, "not a readable Parquet file: " + e.getMessage(), e);
    }
  }

  /** The file's schema as Iceberg sees it: its own field ids, or ids by position when it has none. */
  static Schema fileSchema(MessageType type) {
    return ParquetSchemaUtil.convert(type);
  }

  @Override
  public Record next() throws IOException {
    Record read;
    try {
      if (!rows.hasNext()) {
        return null;
      }
      read = rows.next();
    } catch (RuntimeException e) {
      if (Storage.isNotFound(e)) {
        throw e;
      }
      throw BadRecordException.file(file, count + 1, false, "cannot read record " + (count + 1) + " or after: "
          + e.getMessage(), e);
    }
    count++;
    try {
      return FileSchemas.conform(read, schema.asStruct(), null);
    } catch (Values.ValueException e) {
      throw BadRecordException.record(file, count, false, e.field(), e.getMessage(), "");
    }
  }

  @Override
  public long offset() {
    return count;
  }

  @Override
  public long count() {
    return count;
  }

  @Override
  public void close() throws IOException {
    records.close();
  }
}
