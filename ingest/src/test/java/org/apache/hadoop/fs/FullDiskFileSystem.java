package org.apache.hadoop.fs;

import java.io.IOException;
import java.io.OutputStream;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * The local file system ({@code fs.file.impl}, with {@code fs.file.impl.disable.cache=true}) on a full disk, for
 * staged Parquet files: every write fails the way Hadoop's local file system reports "No space left on device" —
 * an {@link FSError} wrapping the {@code IOException} (in this package because FSError's constructor is).
 */
public class FullDiskFileSystem extends LocalFileSystem {
  @Override
  public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
      short replication, long blockSize, Progressable progress) throws IOException {
    if (!f.getName().endsWith(".parquet")) {
      return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    }
    OutputStream full = new OutputStream() {
      @Override
      public void write(int b) {
        throw new FSError(new IOException("No space left on device"));
      }

      @Override
      public void write(byte[] b, int off, int len) {
        throw new FSError(new IOException("No space left on device"));
      }
    };
    return new FSDataOutputStream(full, statistics);
  }
}
