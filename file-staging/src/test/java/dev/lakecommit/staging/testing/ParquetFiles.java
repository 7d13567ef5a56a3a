package dev.lakecommit.staging.testing;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.parquet.Parquet;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.io.DelegatingSeekableInputStream;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;

/** Reading staged Parquet files back in tests: with Iceberg's generic reader, or Parquet's footer alone. */
public final class ParquetFiles {
  private ParquetFiles() {}

  /** Every row of a file, read by Iceberg's generic Parquet reader with {@code schema}. */
  public static List<Record> read(FileIO io, String location, Schema schema) throws IOException {
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> records =
        Parquet.read(io.newInputFile(location))
            .project(schema)
            .createReaderFunc(fileSchema -> GenericParquetReaders.buildReader(schema, fileSchema))
            .build()) {
      records.forEach(rows::add);
    }
    return rows;
  }

  /** The Parquet footer of a file, read by parquet-hadoop through an adapter of the Iceberg input file. */
  public static ParquetMetadata footer(FileIO io, String location) throws IOException {
    try (ParquetFileReader reader = ParquetFileReader.open(parquetInput(io.newInputFile(location)))) {
      return reader.getFooter();
    }
  }

  /** A parquet-hadoop {@link InputFile} over an Iceberg input file (no Hadoop file system needed). */
  public static InputFile parquetInput(org.apache.iceberg.io.InputFile file) {
    return new InputFile() {
      @Override
      public long getLength() {
        return file.getLength();
      }

      @Override
      public SeekableInputStream newStream() {
        org.apache.iceberg.io.SeekableInputStream stream = file.newStream();
        return new DelegatingSeekableInputStream(stream) {
          @Override
          public long getPos() throws IOException {
            return stream.getPos();
          }

          @Override
          public void seek(long newPos) throws IOException {
            stream.seek(newPos);
          }
        };
      }
    };
  }
}
