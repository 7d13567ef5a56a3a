package dev.lakecommit.iceberg;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
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
 * commit. Commits from other processes are not serialised by it (as with Iceberg's default lock); the version
 * checks still refuse every attempt that starts after a later version is visible.
 */
final class HadoopCommitLock implements LockManager {
  private static final Logger LOG = LoggerFactory.getLogger(HadoopCommitLock.class);
  private static final Pattern VERSION_FILE = Pattern.compile("v(\\d+)(\\.gz)?\\.metadata\\.json");
  private static final String[] EXTENSIONS = {".metadata.json", ".gz.metadata.json"};
  private static final String VERSION_HINT = "version-hint.text";
  /** Holders of this JVM's locks by entity (the metadata file to be renamed to); guarded by itself. */
  private static final Map<String, String> HELD = new HashMap<>();

  private final LockManager delegate;
  private final Configuration conf;
  private final long timeoutMs;
  private final boolean checkVersions;
  private final Consumer<String> beforeAcquire;

  /**
   * @param delegate the lock of the catalog's {@code lock-impl}; null for this JVM's lock
   * @param checkVersions false only in tests, to show what the check prevents
   * @param beforeAcquire test seam, called with the entity before the lock is taken
   */
  HadoopCommitLock(LockManager delegate, Configuration conf, Map<String, String> properties, boolean checkVersions,
      Consumer<String> beforeAcquire) {
    this.delegate = delegate;
    this.conf = Objects.requireNonNull(conf, "conf");
    this.timeoutMs = PropertyUtil.propertyAsLong(properties, CatalogProperties.LOCK_ACQUIRE_TIMEOUT_MS,
        CatalogProperties.LOCK_ACQUIRE_TIMEOUT_MS_DEFAULT);
    this.checkVersions = checkVersions;
    this.beforeAcquire = beforeAcquire;
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
    beforeAcquire.accept(entity);
    if (!(delegate == null ? lock(entity, owner) : delegate.acquire(entity, owner))) {
      return false;
    }
    return !checkVersions || previousIsNewest(entity);
  }

  @Override
  public boolean release(String entity, String owner) {
    if (delegate != null) {
      return delegate.release(entity, owner);
    }
    synchronized (HELD) {
      if (!owner.equals(HELD.get(entity))) {
        return false;
      }
      HELD.remove(entity);
      HELD.notifyAll();
      return true;
    }
  }

  @Override
  public void close() throws Exception {
    if (delegate != null) {
      delegate.close();
    }
  }

  private boolean lock(String entity, String owner) {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    synchronized (HELD) {
      while (HELD.containsKey(entity)) {
        long waitMs = (deadline - System.nanoTime()) / 1_000_000L;
        if (waitMs <= 0) {
          LOG.warn("Gave up waiting {} ms for the commit lock of {} (held by {})", timeoutMs, entity,
              HELD.get(entity));
          return false;
        }
        try {
          HELD.wait(waitMs);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
      HELD.put(entity, owner);
      return true;
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
