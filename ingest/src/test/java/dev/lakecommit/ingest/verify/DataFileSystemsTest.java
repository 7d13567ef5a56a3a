package dev.lakecommit.ingest.verify;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.iceberg.Files;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileAppender;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DataFileSystemsTest {
  private static final Schema SCHEMA = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  @TempDir Path dir;

  /**
   * Iceberg's Parquet reader over {@link DataFileSystems#iceberg} reads a file of many row groups to its end while
   * garbage collections and finalizers run between its reads. With Iceberg's own Hadoop streams it did not: the
   * reader unwrapped the stream, and the dropped wrapper's finalizer closed it mid-file (a CI audit on S3A failed
   * with "Stream is closed!").
   */
  @Test
  void icebergReadsKeepTheirStreamOpenAcrossGarbageCollections() throws IOException {
    Path file = dir.resolve("many-row-groups.parquet");
    int rows = 20_000;
    // a row group per size check (every 100 rows): 200 row groups, each a read of its own
    try (FileAppender<Record> out = Parquet.write(Files.localOutput(file.toFile())).schema(SCHEMA)
        .createWriterFunc(GenericParquetWriter::create)
        .setAll(Map.of(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES, "1"))
        .build()) {
      GenericRecord record = GenericRecord.create(SCHEMA);
      for (long id = 0; id < rows; id++) {
        out.add(record.copy(Map.of("id", id)));
      }
    }

    long read = 0;
    long sum = 0;
    try (DataFileSystems fileSystems = new DataFileSystems(new Configuration())) {
      org.apache.hadoop.fs.Path path = new org.apache.hadoop.fs.Path(file.toUri());
      FileStatus status = fileSystems.of(path).getFileStatus(path);
      try (CloseableIterable<Record> records = Parquet.read(fileSystems.iceberg(status)).project(SCHEMA)
          .createReaderFunc(type -> GenericParquetReaders.buildReader(SCHEMA, type)).build()) {
        for (Record record : records) {
          sum += (Long) record.getField("id");
          if (++read % 500 == 0) {
            System.gc();
            System.runFinalization();
          }
        }
      }
    }
    assertThat(read).isEqualTo(rows);
    assertThat(sum).isEqualTo((long) rows * (rows - 1) / 2);
  }
}
