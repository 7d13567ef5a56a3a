package dev.lakecommit.ingest.source;

import java.io.IOException;
import org.apache.avro.file.DataFileReader;
import org.apache.avro.io.DatumReader;
import org.apache.avro.io.Decoder;
import org.apache.iceberg.Schema;
import org.apache.iceberg.avro.AvroSchemaUtil;
import org.apache.iceberg.avro.NameMappingDatumReader;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.avro.PlannedDataReader;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.mapping.MappingUtil;

/**
 * Avro container files through Avro's file reader and Iceberg's generic Avro datum reader. Offsets and counts are
 * records. A reader resuming at record {@code n} skips whole blocks by their record counts (without decoding
 * them), then the records before {@code n} in that block.
 */
final class AvroFileRecords implements FileRecords {
  private final String file;
  private final Schema schema;
  private final DataFileReader<Object> reader;
  private final dev.lakecommit.staging.AvroInputConverter converter;
  private long count;

  AvroFileRecords(String file, InputFile input, Schema schema, long start) throws IOException {
    this.file = file;
    this.schema = schema;
    this.count = start;
    this.converter = new dev.lakecommit.staging.AvroInputConverter(schema);
    long length = input.getLength();
    if (length == 0 && !input.exists()) { // a local file that is gone has length 0
      throw new NotFoundException("File does not exist: %s", file);
    }
    if (length == 0) {
      this.reader = null;
      return;
    }
    try {
      this.reader = new DataFileReader<>(Inputs.avro(input, length), new ResolvingReader(schema));
    } catch (Mismatch e) {
      throw BadRecordException.file(file, 0, false, e.getMessage(), null);
    } catch (IOException | RuntimeException e) {
      if (Storage.isNotFound(e)) {
        throw e;
      }
      throw BadRecordException.file(file, 0, false, "not a readable Avro file: " + e.getMessage(), e);
    }
    try {
      long toSkip = start;
      while (toSkip > 0 && reader.hasNext()) {
        if (toSkip >= reader.getBlockCount()) {
          toSkip -= reader.getBlockCount();
          reader.nextBlock();
        } else {
          for (; toSkip > 0; toSkip--) {
            reader.next();
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      reader.close();
      if (Storage.isNotFound(e)) {
        throw e;
      }
      throw BadRecordException.file(file, start + 1, false, "cannot read the Avro file: " + e.getMessage(), e);
    }
  }

  /**
   * The file's schema as Iceberg sees it; enums as strings and unions of primitive types as their widest type
   * ({@link AvroTypes}).
   *
   * @throws IllegalArgumentException naming a field whose union has no widest type
   */
  static Schema fileSchema(org.apache.avro.Schema avro) {
    return AvroTypes.needsConversion(avro) ? AvroTypes.toIceberg(avro) : AvroSchemaUtil.toIceberg(avro);
  }

  @Override
  public Record next() throws IOException {
    if (reader == null) {
      return null;
    }
    Object read;
    try {
      if (!reader.hasNext()) {
        return null;
      }
      read = reader.next();
    } catch (RuntimeException e) {
      if (Storage.isNotFound(e)) {
        throw e;
      }
      throw BadRecordException.file(file, count + 1, false, "cannot read record " + (count + 1) + " or after: "
          + e.getMessage(), e);
    }
    count++;
    try {
      Record record = read instanceof Record planned ? planned
          : converter.convert((org.apache.avro.generic.GenericRecord) read);
      return FileSchemas.conform(record, schema.asStruct(), null);
    } catch (Values.ValueException e) {
      throw BadRecordException.record(file, count, false, e.field(), e.getMessage(), "");
    } catch (dev.lakecommit.staging.InvalidRecordException e) {
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
    if (reader != null) {
      reader.close();
    }
  }

  /** A file whose columns do not fit the source schema. */
  private static final class Mismatch extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Mismatch(String message) {
      super(message);
    }
  }

  /**
   * Plans the read when Avro hands it the file's schema (in the reader's constructor): Iceberg's planned reader,
   * or, for enums and unions of several types, Avro's generic reader (its records converted by name in
   * {@link #next()}).
   */
  private static final class ResolvingReader implements DatumReader<Object> {
    private final Schema schema;
    private DatumReader<?> delegate;

    ResolvingReader(Schema schema) {
      this.schema = schema;
    }

    @Override
    public void setSchema(org.apache.avro.Schema fileAvroSchema) {
      Schema fileSchema;
      try {
        fileSchema = fileSchema(fileAvroSchema);
      } catch (IllegalArgumentException e) {
        throw new Mismatch(e.getMessage());
      }
      if (AvroTypes.needsConversion(fileAvroSchema)) {
        try {
          FileSchemas.readSchema(schema, fileSchema);
        } catch (FileSchemas.MismatchException e) {
          throw new Mismatch(e.getMessage());
        }
        delegate = new org.apache.avro.generic.GenericDatumReader<>(fileAvroSchema);
        return;
      }
      Schema readSchema;
      try {
        readSchema = FileSchemas.readSchema(schema, fileSchema);
      } catch (FileSchemas.MismatchException e) {
        throw new Mismatch(e.getMessage());
      }
      delegate = new NameMappingDatumReader<>(MappingUtil.create(fileSchema), PlannedDataReader.create(readSchema));
      delegate.setSchema(fileAvroSchema);
    }

    @Override
    public Object read(Object reuse, Decoder in) throws IOException {
      return delegate.read(null, in);
    }
  }
}
