package dev.lakecommit.ingest.source;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.avro.file.DataFileWriter;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.avro.Avro;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.avro.DataWriter;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.io.FileAppender;
import org.apache.iceberg.parquet.Parquet;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.io.LocalOutputFile;
import org.apache.parquet.schema.MessageType;

/** Writes Parquet and Avro test files: with Iceberg's writers (field ids) and with the formats' own (no ids). */
final class FileWriters {
  private FileWriters() {}

  /** A Parquet file written by Iceberg, with a row group every {@code rowsPerGroup} rows or so. */
  static Path icebergParquet(Path file, Schema schema, List<Record> rows, boolean smallRowGroups) throws IOException {
    Files.createDirectories(file.getParent());
    Parquet.WriteBuilder builder = Parquet.write(org.apache.iceberg.Files.localOutput(file.toFile()))
        .schema(schema)
        .createWriterFunc(GenericParquetWriter::create)
        .overwrite();
    if (smallRowGroups) {
      builder.set(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES, "1")
          .set(TableProperties.PARQUET_ROW_GROUP_CHECK_MIN_RECORD_COUNT, "1")
          .set(TableProperties.PARQUET_ROW_GROUP_CHECK_MAX_RECORD_COUNT, "1");
    }
    try (FileAppender<Record> writer = builder.build()) {
      rows.forEach(writer::add);
    }
    return file;
  }

  /** A Parquet file written by parquet-hadoop's example writer: no field ids. */
  static Path plainParquet(Path file, MessageType type, List<Group> rows) throws IOException {
    Files.createDirectories(file.getParent());
    try (ParquetWriter<Group> writer = ExampleParquetWriter.builder(new LocalOutputFile(file))
        .withType(type)
        .withRowGroupSize(1024L)
        .withPageRowCountLimit(2)
        .build()) {
      for (Group row : rows) {
        writer.write(row);
      }
    }
    return file;
  }

  /** An Avro file written by Iceberg (field ids in the schema). */
  static Path icebergAvro(Path file, Schema schema, List<Record> rows) throws IOException {
    Files.createDirectories(file.getParent());
    Files.deleteIfExists(file);
    try (FileAppender<Record> writer = Avro.write(org.apache.iceberg.Files.localOutput(file.toFile()))
        .schema(schema)
        .createWriterFunc(DataWriter::create)
        .named("row")
        .build()) {
      rows.forEach(writer::add);
    }
    return file;
  }

  /** An Avro file written by Avro itself (no field ids), with a block every {@code recordsPerBlock} records. */
  static Path plainAvro(Path file, org.apache.avro.Schema schema, List<org.apache.avro.generic.GenericRecord> rows,
      int recordsPerBlock) throws IOException {
    Files.createDirectories(file.getParent());
    try (DataFileWriter<org.apache.avro.generic.GenericRecord> writer =
        new DataFileWriter<>(new GenericDatumWriter<>(schema))) {
      writer.create(schema, file.toFile());
      for (int i = 0; i < rows.size(); i++) {
        writer.append(rows.get(i));
        if ((i + 1) % recordsPerBlock == 0) {
          writer.sync();
        }
      }
    }
    return file;
  }
}
