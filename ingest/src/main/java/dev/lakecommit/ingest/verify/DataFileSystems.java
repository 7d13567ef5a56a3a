package dev.lakecommit.ingest.verify;

import dev.lakecommit.ingest.source.HadoopFileInput;
import java.io.Closeable;
import java.io.IOException;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.hadoop.util.HadoopStreams;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;

/**
 * The Hadoop file systems of one read of a table's files: one per scheme and authority, created on first use and
 * closed together by {@link #close}. {@code Path.getFileSystem} (and the Parquet and Iceberg input files built on
 * it) returns a new instance per call when the scheme's cache is off ({@code fs.s3a.impl.disable.cache=true}),
 * and nobody closes it: an audit that opened every file that way kept one S3A client and its thread pools per
 * file open until the process ended.
 */
final class DataFileSystems implements Closeable {
  private final Configuration conf;
  private final Map<String, FileSystem> open = new LinkedHashMap<>();
  private boolean closed;

  DataFileSystems(Configuration conf) {
    this.conf = conf;
  }

  /** The file system of {@code path}, owned by this object (callers never close it). */
  FileSystem of(Path path) throws IOException {
    if (closed) {
      throw new IllegalStateException("File systems already closed; cannot open " + path);
    }
    URI uri = path.toUri();
    if (uri.getScheme() == null) {
      uri = FileSystem.getDefaultUri(conf);
    }
    String key = uri.getScheme() + "://" + (uri.getAuthority() == null ? "" : uri.getAuthority());
    FileSystem fs = open.get(key);
    if (fs == null) {
      // an instance of its own, whatever the cache settings: closing it closes nobody else's
      fs = FileSystem.newInstance(uri, conf);
      open.put(key, fs);
    }
    return fs;
  }

  /** {@code file} as Parquet's input file, through this object's file system. */
  InputFile parquet(FileStatus file) throws IOException {
    FileSystem fs = of(file.getPath());
    return new InputFile() {
      @Override
      public long getLength() {
        return file.getLen();
      }

      @Override
      public SeekableInputStream newStream() throws IOException {
        return HadoopStreams.wrap(fs.open(file.getPath()));
      }

      @Override
      public String toString() {
        return file.getPath().toString();
      }
    };
  }

  /** {@code file} as Iceberg's input file, through this object's file system (see {@link HadoopFileInput}). */
  org.apache.iceberg.io.InputFile iceberg(FileStatus file) throws IOException {
    return new HadoopFileInput(of(file.getPath()), file.getPath(), file.getLen());
  }

  /** Closes every file system opened; the first failure is thrown once all were tried. */
  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    IOException failure = null;
    for (Map.Entry<String, FileSystem> fs : open.entrySet()) {
      try {
        fs.getValue().close();
      } catch (IOException | RuntimeException e) {
        IOException wrapped = new IOException("Cannot close the file system of " + fs.getKey() + ": "
            + e.getMessage(), e);
        if (failure == null) {
          failure = wrapped;
        } else {
          failure.addSuppressed(wrapped);
        }
      }
    }
    open.clear();
    if (failure != null) {
      throw failure;
    }
  }
}
