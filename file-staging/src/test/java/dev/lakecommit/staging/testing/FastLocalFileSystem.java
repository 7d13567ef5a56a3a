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

/**
 * Hadoop's local file system for tests that write many files: no checksum side files, and no {@code chmod}
 * process forked per file and directory (what Hadoop's local file system does without native libraries, about
 * 20 ms each). Optionally reports closed output streams to an {@link OpenFileCounter}.
 *
 * <p>Use {@link #configuration()} for a Hadoop configuration whose {@code file:} scheme is this file system, for
 * {@code HadoopFileIO}, {@code HadoopTables} or a {@code HadoopCatalog}.
 */
public final class FastLocalFileSystem extends RawLocalFileSystem {
  static final String COUNTER_KEY = "lakecommit.test.open-file-counter";
  private static final Map<String, OpenFileCounter> COUNTERS = new ConcurrentHashMap<>();

  /** A configuration whose local file system is this one (never cached, so other tests are not affected). */
  public static Configuration configuration() {
    Configuration conf = new Configuration();
    conf.set("fs.file.impl", FastLocalFileSystem.class.getName());
    conf.setBoolean("fs.file.impl.disable.cache", true);
    return conf;
  }

  /** Reports streams closed by file systems of {@code conf} to {@code counter}. */
  static void register(Configuration conf, OpenFileCounter counter) {
    String id = UUID.randomUUID().toString();
    COUNTERS.put(id, counter);
    conf.set(COUNTER_KEY, id);
  }

  static void unregister(Configuration conf) {
    COUNTERS.remove(conf.get(COUNTER_KEY, ""));
  }

  @Override
  public void setPermission(Path p, FsPermission permission) {
    // Tests need no permissions; forking chmod per file is what makes the local file system slow.
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
