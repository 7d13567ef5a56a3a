package dev.lakecommit.ingest.source;

import java.io.IOException;
import org.apache.avro.file.SeekableInput;
import org.apache.iceberg.io.InputFile;
import org.apache.parquet.io.DelegatingSeekableInputStream;
import org.apache.parquet.io.SeekableInputStream;

/** Adapters from Iceberg's {@link InputFile} to what Parquet's and Avro's own readers take. */
final class Inputs {
  private Inputs() {}

  /** A parquet-io input file reading through the Iceberg input file (no Hadoop file system involved). */
  static org.apache.parquet.io.InputFile parquet(InputFile file) {
    return new org.apache.parquet.io.InputFile() {
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

  /** An Avro seekable input over a new stream of the file. */
  static SeekableInput avro(InputFile file, long length) {
    org.apache.iceberg.io.SeekableInputStream stream = file.newStream();
    return new SeekableInput() {
      @Override
      public void seek(long position) throws IOException {
        stream.seek(position);
      }

      @Override
      public long tell() throws IOException {
        return stream.getPos();
      }

      @Override
      public long length() {
        return length;
      }

      @Override
      public int read(byte[] buffer, int offset, int count) throws IOException {
        return stream.read(buffer, offset, count);
      }

      @Override
      public void close() throws IOException {
        stream.close();
      }
    };
  }
}
