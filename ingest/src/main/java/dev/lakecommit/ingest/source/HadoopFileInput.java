package dev.lakecommit.ingest.source;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * A file of a Hadoop file system as Iceberg's input file, read through the file system instance it was given.
 * <ul>
 *   <li>Not Iceberg's {@code HadoopInputFile}: Iceberg's Parquet reader turns one of those into Parquet's own Hadoop
 *       input file, which gets a file system from the configuration — a new, never closed instance per file when
 *       the scheme's cache is off ({@code fs.s3a.impl.disable.cache=true}).</li>
 *   <li>Its streams are not Iceberg's Hadoop streams either: Iceberg's Parquet reader unwraps one of those to the
 *       Hadoop stream inside and drops the wrapper, whose finalizer then closes that stream under the reader at the
 *       next garbage collection ("Stream is closed!" in the middle of a file, seen on S3A).</li>
 * </ul>
 */
public final class HadoopFileInput implements InputFile {
  private final FileSystem fs;
  private final Path path;
  private long length;

  /** {@code path} of {@code fs}; {@code length} is its length in bytes, or -1 to ask the file system once. */
  public HadoopFileInput(FileSystem fs, Path path, long length) {
    this.fs = fs;
    this.path = path;
    this.length = length;
  }

  @Override
  public long getLength() {
    if (length < 0) {
      try {
        length = fs.getFileStatus(path).getLen();
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot read the length of " + path + ": " + e.getMessage(), e);
      }
    }
    return length;
  }

  @Override
  public SeekableInputStream newStream() {
    try {
      return new Stream(fs.open(path));
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot open " + path + ": " + e.getMessage(), e);
    }
  }

  @Override
  public String location() {
    return path.toString();
  }

  @Override
  public boolean exists() {
    try {
      return fs.exists(path);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot check whether " + path + " exists: " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return location();
  }

  /** A Hadoop stream as Iceberg's, which Iceberg's readers keep (and close) rather than unwrap. */
  private static final class Stream extends SeekableInputStream {
    private final FSDataInputStream in;

    Stream(FSDataInputStream in) {
      this.in = in;
    }

    @Override
    public long getPos() throws IOException {
      return in.getPos();
    }

    @Override
    public void seek(long newPos) throws IOException {
      in.seek(newPos);
    }

    @Override
    public int read() throws IOException {
      return in.read();
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      return in.read(b, off, len);
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }
}
