package dev.lakecommit.iceberg;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.LockManager;
import org.apache.iceberg.util.PropertyUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lock a Hadoop table takes around the rename that commits {@code v<n>.metadata.json}, which also checks, once
 * taken, that version {@code n - 1} — the metadata the attempt is built on — is still the table's newest: its file
 * exists and the version hint names no later version. Without that check a commit attempt that waited long for the
 * lock (Iceberg's default lock sleeps 5 s between tries) while more than {@code write.metadata.previous-versions-max}
 * commits landed finds {@code v<n>.metadata.json} deleted again, renames its own file to that name and forks the
 * table's history: one side's commits are lost (seen under load: a maintenance commit renamed {@code v101} when the
 * table was at {@code v142}). A refused attempt is a lost race: {@code HadoopTableOperations} throws
 * {@code CommitFailedException} and Iceberg re-applies the operation on the refreshed table.
 *
 * <p>Unless the catalog names a {@code lock-impl}, the lock is this JVM's, handed over as soon as it is released:
 * the rename it guards takes milliseconds, and a checkpoint commit must not sleep seconds behind a maintenance
 * commit. A table on the local file system is also locked across processes, by an operating-system lock on the
 * file {@value #LOCK_FILE} in its metadata directory: Iceberg checks that {@code v<n>.metadata.json} does not exist
 * and then renames onto it, and a local rename replaces a file that another process renamed there in between, so
 * two jobs (or a job and a maintenance run) committing to one local table from two processes could each see their
 * commit succeed while one of them was lost. The operating system drops the lock of a process that dies. Where the
 * file cannot be locked, commits are kept apart within this JVM only, with a warning. Other
 * file systems are not locked across processes here: HDFS refuses a rename onto an existing file, and object
 * stores need a catalog with a real commit (or a {@code lock-impl}).
 */
final class HadoopCommitLock implements LockManager {
  /** The lock file in a local table's metadata directory (hidden, and kept by the orphan-file clean-up). */
  static final String LOCK_FILE = ".lakecommit-commit.lock";
  private static final Logger LOG = LoggerFactory.getLogger(HadoopCommitLock.class);
  private static final Pattern VERSION_FILE = Pattern.compile("v(\\d+)(\\.gz)?\\.metadata\\.json");
  private static final String[] EXTENSIONS = {".metadata.json", ".gz.metadata.json"};
  private static final String VERSION_HINT = "version-hint.text";
  private static final long LONGEST_PAUSE_MS = 20;
  /**
   * Holders of this JVM's locks, by entity (the metadata file to be renamed to) or, for a local table, by its lock
   * file: one holder per table, so that this class loader's threads take turns with its one channel of the file.
   * Guarded by itself.
   */
  private static final Map<String, Holder> HELD = new HashMap<>();
  /** Open channels of lock files by key, never closed (see {@link #channel}); guarded by {@code HELD}. */
  private static final Map<String, OpenLockFile> CHANNELS = new HashMap<>();
  /** Lock files that could not be locked, each warned about once. */
  private static final Set<String> UNLOCKABLE = ConcurrentHashMap.newKeySet();

  private final LockManager delegate;
  private final Configuration conf;
  private final long timeoutMs;
  private final Options options;

  /** What the lock does besides locking; {@link #ALL} outside tests. */
  record Options(boolean checkVersions, boolean lockProcesses, Consumer<String> beforeAcquire) {
    static final Options ALL = new Options(true, true, entity -> { });

    /** Test seam: without the version check, to show what it prevents. */
    Options withoutVersionCheck() {
      return new Options(false, lockProcesses, beforeAcquire);
    }

    /** Test seam: without the lock across processes, to show what it prevents. */
    Options withoutProcessLock() {
      return new Options(checkVersions, false, beforeAcquire);
    }

    /** Test seam: called with the entity before the lock is taken. */
    Options withBeforeAcquire(Consumer<String> hook) {
      return new Options(checkVersions, lockProcesses, hook);
    }
  }

  /**
   * Who holds (or is taking) a lock of this JVM's, and its operating-system lock (null if none); guarded by
   * {@code HELD}.
   */
  private static final class Holder {
    final String owner;
    FileLock lock;
    boolean taken;

    Holder(String owner) {
      this.owner = owner;
    }
  }

  /** @param delegate the lock of the catalog's {@code lock-impl}; null for this JVM's lock */
  HadoopCommitLock(LockManager delegate, Configuration conf, Map<String, String> properties, Options options) {
    this.delegate = delegate;
    this.conf = Objects.requireNonNull(conf, "conf");
    this.timeoutMs = PropertyUtil.propertyAsLong(properties, CatalogProperties.LOCK_ACQUIRE_TIMEOUT_MS,
        CatalogProperties.LOCK_ACQUIRE_TIMEOUT_MS_DEFAULT);
    this.options = Objects.requireNonNull(options, "options");
  }

  @Override
  public void initialize(Map<String, String> properties) {
    // Built configured by GuardedHadoopCatalog.
  }

  /**
   * Takes the lock and checks the version before {@code entity}. False if the lock was not taken, and also if the
   * check refused the attempt: the lock is then held until {@code HadoopTableOperations} releases it, as it does
   * after every acquire, in the {@code finally} of its rename (so that its release does not warn).
   */
  @Override
  public boolean acquire(String entity, String owner) {
    options.beforeAcquire().accept(entity);
    if (delegate != null && !delegate.acquire(entity, owner)) {
      return false;
    }
    java.nio.file.Path lockFile = options.lockProcesses() ? localLockFile(entity) : null;
    if ((delegate == null || lockFile != null) && !lock(lockFile == null ? entity : lockFile.toString(), owner,
        lockFile)) {
      return false; // HadoopTableOperations releases the delegate's lock in its finally
    }
    return !options.checkVersions() || previousIsNewest(entity);
  }

  @Override
  public boolean release(String entity, String owner) {
    java.nio.file.Path lockFile = options.lockProcesses() ? localLockFile(entity) : null;
    boolean released = true;
    try {
      if (delegate != null) {
        released = delegate.release(entity, owner);
      }
    } finally {
      if (delegate == null || lockFile != null) {
        released &= releaseHere(lockFile == null ? entity : lockFile.toString(), owner);
      }
    }
    return released;
  }

  private static boolean releaseHere(String key, String owner) {
    synchronized (HELD) {
      Holder holder = HELD.get(key);
      if (holder == null || !owner.equals(holder.owner) || !holder.taken) {
        return false;
      }
      HELD.remove(key);
      HELD.notifyAll();
      if (holder.lock != null) {
        try {
          holder.lock.release(); // the channel stays open: see CHANNELS
        } catch (IOException e) {
          LOG.warn("Could not release the commit lock {}: {}", key, e.toString());
        }
      }
      return true;
    }
  }

  @Override
  public void close() throws Exception {
    if (delegate != null) {
      delegate.close();
    }
  }

  /**
   * Takes this JVM's lock of {@code key} and, for a local table ({@code lockFile} not null), the operating-system
   * lock on its lock file, both within the acquire timeout. The other process's rename takes milliseconds, so its
   * lock is asked for again after pauses of 1 ms doubling up to {@value #LONGEST_PAUSE_MS} ms.
   */
  private boolean lock(String key, String owner, java.nio.file.Path lockFile) {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    Holder holder = new Holder(owner);
    synchronized (HELD) {
      while (HELD.containsKey(key)) {
        long waitMs = (deadline - System.nanoTime()) / 1_000_000L;
        if (waitMs <= 0) {
          LOG.warn("Gave up waiting {} ms for the commit lock of {} (held by {})", timeoutMs, key,
              HELD.get(key).owner);
          return false;
        }
        try {
          HELD.wait(waitMs);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
      HELD.put(key, holder);
    }
    boolean taken = false;
    try {
      taken = lockFile == null || lockProcesses(key, lockFile, holder, deadline);
      return taken;
    } finally {
      synchronized (HELD) {
        if (taken) {
          holder.taken = true;
        } else {
          HELD.remove(key);
          HELD.notifyAll();
        }
      }
    }
  }

  /**
   * Takes the operating-system lock on {@code lockFile} for {@code holder}: false if another process (or another
   * class loader of this JVM) held it until the deadline, or if interrupted. Where the file system has no such
   * locks (an NFS mount without a lock daemon, say) or the file cannot be opened, it warns once and goes on with
   * this JVM's lock only, as before this lock existed.
   */
  private boolean lockProcesses(String key, java.nio.file.Path lockFile, Holder holder, long deadline) {
    long pauseMs = 1;
    try {
      while (true) {
        FileLock taken;
        try {
          taken = channel(key, lockFile).tryLock();
        } catch (OverlappingFileLockException e) {
          taken = null; // held through another class loader's channel: this JVM, but another copy of this class
        }
        if (taken != null && !sameFile(key, lockFile)) {
          taken.release(); // the file was deleted (a dropped table, made again?): lock the one there now
          forget(key);
          continue;
        }
        if (taken != null) {
          holder.lock = taken;
          return true;
        }
        if (System.nanoTime() - deadline > 0) {
          LOG.warn("Gave up waiting {} ms for the commit lock of {}, held by another process", timeoutMs, lockFile);
          return false;
        }
        Thread.sleep(pauseMs);
        pauseMs = Math.min(pauseMs * 2, LONGEST_PAUSE_MS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ClosedChannelException e) { // closed by an interrupt during tryLock
      forget(key);
      return false;
    } catch (IOException e) {
      if (UNLOCKABLE.add(key)) {
        LOG.warn("Cannot lock {} ({}): commits to this table from other processes are not kept apart from this "
            + "JVM's; commit from one process at a time, or use a catalog with real commits", lockFile, e.toString());
      }
      return true;
    }
  }

  /**
   * This class loader's channel of a lock file, opened once and never closed: closing any channel of a file drops
   * all of the JVM's operating-system locks on it, including one that another channel (of another class loader,
   * say) holds at that moment. One open file per local table that this JVM committed to.
   */
  private static FileChannel channel(String key, java.nio.file.Path lockFile) throws IOException {
    synchronized (HELD) {
      OpenLockFile open = CHANNELS.get(key);
      if (open == null || !open.channel().isOpen()) {
        FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        open = new OpenLockFile(channel, fileKey(lockFile));
        CHANNELS.put(key, open);
      }
      return open.channel();
    }
  }

  /**
   * Whether the lock file at its path is still the one this class loader's channel has open: a table dropped and
   * made again at the same path (by another process, say) has a new lock file, and a lock on the old one keeps
   * nobody out. The old channel is left to the garbage collector: only this class loader had it open.
   */
  private static boolean sameFile(String key, java.nio.file.Path lockFile) throws IOException {
    synchronized (HELD) {
      OpenLockFile open = CHANNELS.get(key);
      Object now;
      try {
        now = fileKey(lockFile);
      } catch (java.nio.file.NoSuchFileException e) {
        return false;
      }
      return open != null && Objects.equals(open.fileKey(), now);
    }
  }

  private static void forget(String key) {
    synchronized (HELD) {
      CHANNELS.remove(key);
    }
  }

  private static Object fileKey(java.nio.file.Path file) throws IOException {
    return java.nio.file.Files.readAttributes(file, java.nio.file.attribute.BasicFileAttributes.class).fileKey();
  }

  /** A lock file's open channel and the file it was opened on (its inode, where the platform tells). */
  private record OpenLockFile(FileChannel channel, Object fileKey) {}

  /**
   * The lock file of the table that {@code entity} (a metadata file) belongs to, by the real path of its metadata
   * directory (so that every spelling of the table, through links or relative paths, locks one file), or null if
   * the table is not on the local file system.
   */
  private java.nio.file.Path localLockFile(String entity) {
    Path path = new Path(entity);
    String scheme = path.toUri().getScheme() != null ? path.toUri().getScheme()
        : FileSystem.getDefaultUri(conf).getScheme();
    if (!"file".equalsIgnoreCase(scheme)) {
      return null;
    }
    try {
      // as Hadoop's local file system resolves a relative path: against the working directory it started in
      String local = path.toUri().getPath();
      java.nio.file.Path metadata = (path.isUriPathAbsolute()
          ? Paths.get(new URI("file", null, local, null)) : Paths.get("").toAbsolutePath().resolve(local))
          .getParent();
      if (metadata == null) {
        return null;
      }
      try {
        metadata = metadata.toRealPath();
      } catch (IOException e) {
        metadata = metadata.toAbsolutePath().normalize(); // not there (yet): the rename fails anyway
      }
      return metadata.resolve(LOCK_FILE);
    } catch (URISyntaxException | RuntimeException e) {
      LOG.warn("Cannot tell where the commit lock of {} is ({}): locked in this JVM only", entity, e.toString());
      return null;
    }
  }

  /**
   * Whether the version before {@code entity}'s still has its metadata file, and {@code entity}'s version either
   * exists (a plain lost race, which Iceberg reports itself) or is not passed by the version hint. An entity that
   * is not a versioned metadata file, or version 1, is not checked.
   */
  private boolean previousIsNewest(String entity) {
    Path target = new Path(entity);
    Matcher matcher = VERSION_FILE.matcher(target.getName());
    if (!matcher.matches()) {
      return true;
    }
    int version = Integer.parseInt(matcher.group(1));
    if (version <= 1) {
      return true;
    }
    Path metadata = target.getParent();
    try {
      FileSystem fs = metadata.getFileSystem(conf);
      boolean previousExists = false;
      for (String extension : EXTENSIONS) {
        previousExists |= fs.exists(new Path(metadata, "v" + (version - 1) + extension));
      }
      if (!previousExists) {
        LOG.info("Refused the commit of {}: the metadata file of version {} it is built on was deleted (more than "
            + "write.metadata.previous-versions-max newer commits); it is re-applied on the table as it is", entity,
            version - 1);
        return false;
      }
      Integer hint = readHint(fs, new Path(metadata, VERSION_HINT));
      if (hint != null && hint >= version && !fs.exists(target)) {
        LOG.info("Refused the commit of {}: the table is at version {} and that version's file was deleted; it is "
            + "re-applied on the table as it is", entity, hint);
        return false;
      }
      return true; // if the version exists, Iceberg's own check refuses the rename ("Version n already exists")
    } catch (IOException e) {
      LOG.warn("Refused the commit of {}: cannot check that version {} is still the newest ({})", entity,
          version - 1, e.toString());
      return false;
    }
  }

  /** The version hint, or null if it is missing or unreadable (Iceberg replaces it by delete and rename). */
  private static Integer readHint(FileSystem fs, Path hint) {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(fs.open(hint), StandardCharsets.UTF_8))) {
      String line = in.readLine();
      return line == null ? null : Integer.valueOf(line.trim());
    } catch (IOException | NumberFormatException e) {
      return null;
    }
  }
}
