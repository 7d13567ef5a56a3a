package dev.lakecommit.staging;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.nativeio.NativeIO;

/**
 * Hadoop's local file system ({@code file:}, checksum side files included), except that a permission change does
 * not fork a process. Without Hadoop's native library — the usual case outside a Hadoop installation — {@link
 * RawLocalFileSystem#setPermission} runs {@code chmod} as a child process, and it is called for every directory
 * Hadoop creates: a staged Parquet file in a new partition directory cost about three forks of the whole JVM
 * (1,862 forks and most of the 37 s of system time of a 1,000,000-row ingest into 32 partitions). Here the
 * permission is set through {@link Files#setPosixFilePermissions}; with the native library, or where the file
 * system is not POSIX, or for a sticky bit, Hadoop's own code runs as before.
 *
 * <p>{@link #useUnlessConfigured} makes it the {@code file:} file system of a configuration that names none.
 */
public final class NoForkLocalFileSystem extends LocalFileSystem {
  static final String IMPL_KEY = "fs.file.impl";

  public NoForkLocalFileSystem() {
    super(new Raw());
  }

  /** Sets this class as {@code conf}'s {@code file:} file system unless {@code fs.file.impl} is set; returns it. */
  public static Configuration useUnlessConfigured(Configuration conf) {
    if (conf.get(IMPL_KEY) == null) {
      conf.set(IMPL_KEY, NoForkLocalFileSystem.class.getName());
    }
    return conf;
  }

  /** The raw file system underneath: {@link RawLocalFileSystem} with {@link #setPermission} in the JVM. */
  public static final class Raw extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      if (NativeIO.isAvailable() || permission.getStickyBit()) {
        super.setPermission(p, permission);
        return;
      }
      try {
        Files.setPosixFilePermissions(pathToFile(p).toPath(), posix(permission));
      } catch (UnsupportedOperationException e) {
        super.setPermission(p, permission);
      }
    }

    static Set<PosixFilePermission> posix(FsPermission permission) {
      Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
      add(set, permission.getUserAction(), PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
          PosixFilePermission.OWNER_EXECUTE);
      add(set, permission.getGroupAction(), PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
          PosixFilePermission.GROUP_EXECUTE);
      add(set, permission.getOtherAction(), PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE,
          PosixFilePermission.OTHERS_EXECUTE);
      return set;
    }

    private static void add(Set<PosixFilePermission> set, FsAction action, PosixFilePermission read,
        PosixFilePermission write, PosixFilePermission execute) {
      if (action.implies(FsAction.READ)) {
        set.add(read);
      }
      if (action.implies(FsAction.WRITE)) {
        set.add(write);
      }
      if (action.implies(FsAction.EXECUTE)) {
        set.add(execute);
      }
    }
  }
}
