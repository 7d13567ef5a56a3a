package dev.lakecommit.ingest.source;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.apache.avro.file.SeekableInput;
import org.apache.iceberg.io.InputFile;
import org.apache.parquet.io.DelegatingSeekableInputStream;
import org.apache.parquet.io.SeekableInputStream;

/** Adapters from Iceberg's {@link InputFile} to what Parquet's and Avro's own readers take. */
final class Inputs {
  private Inputs() {}

  /**
   * The input file with every failure of the storage — opening, length, reads, seeks — turned into an
   * {@link InputReadException} that says what went wrong (permission denied, gone, I/O error), so that format
   * readers that turn their own errors into bad input can never turn a read failure into one.
   */
  static InputFile guarded(String file, InputFile input) {
    return new InputFile() {
      @Override
      public long getLength() {
        try {
          return input.getLength();
        } catch (RuntimeException e) {
          throw failure(file, e).unchecked();
        }
      }

      @Override
      public org.apache.iceberg.io.SeekableInputStream newStream() {
        try {
          return new GuardedStream(file, input.newStream());
        } catch (RuntimeException e) {
          throw failure(file, e).unchecked();
        }
      }

      @Override
      public String location() {
        return input.location();
      }

      @Override
      public boolean exists() {
        try {
          return input.exists();
        } catch (RuntimeException e) {
          throw failure(file, e).unchecked();
        }
      }
    };
  }

  /** A storage failure as an {@link InputReadException} naming the file and the cause. */
  static InputReadException failure(String file, Throwable error) {
    InputReadException known = InputReadException.in(error);
    if (known != null) {
      return known;
    }
    if (file.startsWith("/")) {
      Path path = Path.of(file);
      if (!Files.exists(path)) {
        return new InputReadException(file, "it no longer exists (it disappeared after the input was listed); "
            + "nothing after it was read or skipped: run again to list the input anew", error);
      }
      if (!Files.isReadable(path)) {
        return new InputReadException(file, "permission denied (no read access); nothing of it was read or "
            + "skipped: fix the permissions and run the same command again to resume", error);
      }
    }
    String text = String.valueOf(error.getMessage()).toLowerCase(Locale.ROOT);
    if (error instanceof java.nio.file.AccessDeniedException || text.contains("access denied")
        || text.contains("permission denied") || text.contains("status code: 403")) {
      return new InputReadException(file, "permission denied (" + error.getMessage() + "); nothing of it was "
          + "read or skipped: fix the permissions and run the same command again to resume", error);
    }
    if (Storage.isNotFound(error)) {
      return new InputReadException(file, "it no longer exists (it disappeared after the input was listed); "
          + "nothing after it was read or skipped: run again to list the input anew", error);
    }
    return new InputReadException(file, "I/O error: " + error + "; every completed checkpoint is kept: run the "
        + "same command again to resume", error);
  }

  /** A stream whose failures are {@link InputReadException}s. */
  private static final class GuardedStream extends org.apache.iceberg.io.SeekableInputStream {
    private final String file;
    private final org.apache.iceberg.io.SeekableInputStream in;

    GuardedStream(String file, org.apache.iceberg.io.SeekableInputStream in) {
      this.file = file;
      this.in = in;
    }

    @Override
    public long getPos() throws IOException {
      try {
        return in.getPos();
      } catch (IOException | RuntimeException e) {
        throw failure(file, e);
      }
    }

    @Override
    public void seek(long newPos) throws IOException {
      try {
        in.seek(newPos);
      } catch (IOException | RuntimeException e) {
        throw failure(file, e);
      }
    }

    @Override
    public int read() throws IOException {
      try {
        return in.read();
      } catch (IOException | RuntimeException e) {
        throw failure(file, e);
      }
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      try {
        return in.read(b, off, len);
      } catch (IOException | RuntimeException e) {
        throw failure(file, e);
      }
    }

    @Override
    public long skip(long n) throws IOException {
      try {
        return in.skip(n);
      } catch (IOException | RuntimeException e) {
        throw failure(file, e);
      }
    }

    @Override
    public int available() throws IOException {
      try {
        return in.available();
      } catch (IOException | RuntimeException e) {
        throw failure(file, e);
      }
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }

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
