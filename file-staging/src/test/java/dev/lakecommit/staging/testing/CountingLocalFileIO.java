package dev.lakecommit.staging.testing;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.OutputFile;

/**
 * A {@link HadoopFileIO} on local disk that counts open output files ({@link OpenFileCounter}), for tests that
 * stage many thousands of files. Its files stay Hadoop output files (Iceberg's Parquet writer then copies the
 * Hadoop configuration instead of parsing a new one per file), and its file system neither writes checksum files
 * nor forks {@code chmod} for every file as Hadoop's local file system does without native libraries.
 */
public final class CountingLocalFileIO extends HadoopFileIO {
  private static final String COUNTER_KEY = "lakecommit.test.open-file-counter";
  private static final Map<String, OpenFileCounter> COUNTERS = new ConcurrentHashMap<>();

  private final OpenFileCounter counter;

  private CountingLocalFileIO(Configuration conf, OpenFileCounter counter) {
    super(conf);
    this.counter = counter;
  }

  public static CountingLocalFileIO create() {
    String id = UUID.randomUUID().toString();
    OpenFileCounter counter = new OpenFileCounter();
    COUNTERS.put(id, counter);
    Configuration conf = new Configuration();
    conf.set("fs.file.impl", CountingFileSystem.class.getName());
    conf.setBoolean("fs.file.impl.disable.cache", true);
    conf.set(COUNTER_KEY, id);
    return new CountingLocalFileIO(conf, counter);
  }

  public OpenFileCounter counter() {
    return counter;
  }

  @Override
  public OutputFile newOutputFile(String path) {
    counter.fileOpened();
    return super.newOutputFile(path);
  }

  @Override
  public void close() {
    super.close();
    COUNTERS.values().remove(counter);
  }

  /** Local file system without checksums or permission changes, reporting closed output streams. */
  public static final class CountingFileSystem extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) {
      // Forking chmod per file is what makes Hadoop's local file system slow; tests need no permissions.
    }

    @Override
    public FSDataOutputStream create(
        Path f, boolean overwrite, int bufferSize, short replication, long blockSize, Progressable progress)
        throws IOException {
      return counted(super.create(f, overwrite, bufferSize, replication, blockSize, progress));
    }

    @Override
    public FSDataOutputStream create(
        Path f, FsPermission permission, boolean overwrite, int bufferSize, short replication, long blockSize,
        Progressable progress) throws IOException {
      return counted(super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress));
    }

    private FSDataOutputStream counted(FSDataOutputStream out) {
      OpenFileCounter counter = COUNTERS.get(getConf().get(COUNTER_KEY, ""));
      if (counter == null) {
        return out;
      }
      OutputStream counted =
          new FilterOutputStream(out) {
            private boolean closed;

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
              out.write(b, off, len);
            }

            @Override
            public void close() throws IOException {
              if (!closed) {
                closed = true;
                counter.fileClosed();
              }
              super.close();
            }
          };
      return new FSDataOutputStream(counted, null);
    }
  }
}
