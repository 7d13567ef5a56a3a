package dev.lakecommit.iceberg;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * A process that takes a Hadoop table's commit lock and holds it: it writes the file {@code held} once it has the
 * lock, and releases it and ends when the file {@code release} exists (or when it is killed).
 *
 * <p>Arguments: entity (a metadata file's URI), held file, release file, and optionally the acquire timeout in ms
 * (then it only tries: it prints {@code NOT ACQUIRED} and exits with 1 if it could not take the lock).
 */
public final class HoldCommitLockMain {
  private HoldCommitLockMain() {}

  public static void main(String[] args) throws Exception {
    String entity = args[0];
    Map<String, String> properties = args.length > 3
        ? Map.of(org.apache.iceberg.CatalogProperties.LOCK_ACQUIRE_TIMEOUT_MS, args[3]) : Map.of();
    HadoopCommitLock lock = new HadoopCommitLock(null, new Configuration(), properties, HadoopCommitLock.Options.ALL);
    if (!lock.acquire(entity, "child")) {
      System.out.println("NOT ACQUIRED");
      System.exit(1);
    }
    Files.createFile(Path.of(args[1]));
    RaceCommitterMain.awaitFile(Path.of(args[2]));
    System.out.println(lock.release(entity, "child") ? "RELEASED" : "NOT RELEASED");
    System.exit(0);
  }
}
