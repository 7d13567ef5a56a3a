package dev.lakecommit.hive;

import java.io.IOException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A file system whose rename of a file is what S3A's is: copy, then delete the source — two steps, with a point
 * between them where a test can "crash" the process and leave the file in both places.
 */
final class CopyRenameFileSystem extends FilterFileSystem {
  /** Reached after the copy of a renamed file, before its source is deleted. */
  static final String COPIED = "rename-copied-before-delete";

  private final Runnable afterCopy;

  CopyRenameFileSystem(FileSystem fs, Runnable afterCopy) {
    super(fs);
    this.afterCopy = afterCopy;
  }

  @Override
  public String getScheme() {
    return fs.getScheme();
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    if (!fs.getFileStatus(src).isFile()) {
      return fs.rename(src, dst);
    }
    if (fs.exists(dst)) {
      return false;
    }
    // S3's copy is atomic: the object appears whole or not at all.
    Path copying = new Path(dst.getParent(), "." + dst.getName() + ".copying");
    FileUtil.copy(fs, src, fs, copying, false, fs.getConf());
    if (!fs.rename(copying, dst)) {
      throw new IOException("Cannot rename " + copying + " to " + dst);
    }
    afterCopy.run();
    return fs.delete(src, false);
  }
}
