package dev.lakecommit.hive;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The storage side of merges after their switch: deleting what an earlier merge replaced (only the files its
 * manifest names), moving on files a commit put at a partition's old location during a switch, and deleting the
 * directories of merges that never became a partition's location.
 */
final class MergeCleanup {
  private static final Logger LOG = LoggerFactory.getLogger(MergeCleanup.class);

  private final FileSystem fs;
  private final HiveTable table;
  private final Path tableLocation;
  private final MergeHook hook;
  private final long minAgeMillis;
  private final long now;
  private int stragglers;

  MergeCleanup(FileSystem fs, HiveTable table, Path tableLocation, MergeHook hook, long minAgeMillis, long now) {
    this.fs = fs;
    this.table = table;
    this.tableLocation = tableLocation;
    this.hook = hook;
    this.minAgeMillis = minAgeMillis;
    this.now = now;
  }

  /** Files moved on from old locations so far. */
  int stragglers() {
    return stragglers;
  }

  /** How many files an earlier merge replaced are still at its old location (a partition's merge waits for 0). */
  int replacedLeft(Partition partition) throws IOException {
    Path from = mergedFrom(partition);
    if (from == null) {
      return 0;
    }
    return visibleFiles(from).size();
  }

  /** The location a merge replaced in this partition, unless it is the current one. */
  static Path mergedFrom(Partition partition) {
    String from = partition.getParameters() == null ? null
        : partition.getParameters().get(HiveMaintenance.MERGED_FROM_KEY);
    if (from == null || HivePaths.sameLocation(new Path(from), new Path(partition.getSd().getLocation()))) {
      return null;
    }
    return new Path(from);
  }

  /**
   * Deletes the files an earlier merge replaced: those its manifest names, at their recorded sizes; then the old
   * directory, if a merge wrote it and nothing visible is left in it. A file that arrived there later is moved to the
   * partition's location.
   *
   * @param fresh the partition as read now: nothing is deleted unless it is still where the round saw it
   */
  int deleteReplaced(Partition partition, String name, Partition fresh) throws IOException {
    Path from = mergedFrom(partition);
    if (from == null) {
      return 0;
    }
    Path current = new Path(partition.getSd().getLocation());
    if (fresh == null || !HivePaths.sameLocation(new Path(fresh.getSd().getLocation()), current)) {
      return 0; // changed since the round listed it: the next round looks again
    }
    java.util.Optional<MergeManifest> manifest = MergeManifest.read(fs, current);
    if (manifest.isEmpty() || !HivePaths.sameLocation(manifest.get().from(), from)) {
      LOG.warn("Partition {} of {} records {}={}, but its location {} holds no merge manifest of it; its old files "
          + "are left alone", name, table, HiveMaintenance.MERGED_FROM_KEY, from, current);
      return 0;
    }
    int deleted = 0;
    for (Map.Entry<String, Long> file : manifest.get().replaced().entrySet()) {
      Path old = new Path(from, file.getKey());
      FileStatus status = statusOrNull(old);
      if (status != null && status.isFile() && status.getLen() == file.getValue()) {
        fs.delete(old, false);
        deleted++;
        hook.reached(MergeHook.FILE_DELETED, name);
      }
    }
    moveStragglers(name, from, manifest.get().replaced().keySet(), current);
    if (isMergeDir(from) && visibleFiles(from).isEmpty()) {
      fs.delete(from, true);
    }
    if (deleted > 0) {
      LOG.info("Deleted {} file(s) at {} that a merge of partition {} of {} replaced", deleted, from,
          name, table);
    }
    return deleted;
  }

  /**
   * Deletes directories of merges that were dropped or crashed before their switch (or whose switch a racing
   * commit undid), once older than the minimum age: never the partition's location or the one it replaced, and
   * never one with a manifest (so possibly switched to once) holding a visible file that the manifest does not
   * name.
   */
  int deleteLeftovers(Partition partition, String name) throws IOException {
    Path usual = HivePaths.partitionDir(tableLocation, name);
    Path current = new Path(partition.getSd().getLocation());
    Path from = mergedFrom(partition);
    int deleted = 0;
    for (FileStatus child : listOrEmpty(new Path(usual, MergeRound.MERGE_DIR))) {
      Path dir = child.getPath();
      if (!child.isDirectory() || HivePaths.sameLocation(dir, current)
          || (from != null && HivePaths.sameLocation(dir, from))
          || now - child.getModificationTime() < minAgeMillis) {
        continue;
      }
      // Without a manifest the merge stopped before its switch (the manifest is complete before it): never a
      // partition's location, so nothing but the merge's own files can be in it.
      java.util.Optional<MergeManifest> manifest = MergeManifest.read(fs, dir);
      boolean own = true;
      for (FileStatus file : visibleFiles(dir)) {
        own &= manifest.isEmpty() || manifest.get().written().containsKey(file.getPath().getName());
      }
      if (own) {
        fs.delete(dir, true);
        deleted++;
        LOG.info("Deleted {}, the directory of a merge of partition {} of {} that was not switched to", dir,
            name, table);
      } else {
        LOG.warn("Directory {} of a merge of partition {} of {} holds files it did not write; kept", dir,
            name, table);
      }
    }
    return deleted;
  }

  static boolean isMergeDir(Path dir) {
    Path parent = dir.getParent();
    return parent != null && MergeRound.MERGE_DIR.equals(parent.getName());
  }

  /**
   * Moves files that arrived at a partition's old location {@code from} after the merge listed it into its
   * current location: a commit that read the partition before the switch put them there. A commit still running
   * finds them moved (a file at its destination counts as moved).
   *
   * @return how many files were moved
   */
  int moveStragglers(String partition, Path from, Set<String> listed, Path current) throws IOException {
    int moved = 0;
    for (FileStatus file : visibleFiles(from)) {
      String name = file.getPath().getName();
      if (listed.contains(name)) {
        continue;
      }
      Path target = new Path(current, name);
      FileStatus there = statusOrNull(target);
      if (there == null && fs.rename(file.getPath(), target)) {
        moved++;
      } else if (there != null && there.getLen() == file.getLen()) {
        fs.delete(file.getPath(), false);
        moved++;
      } else if (statusOrNull(file.getPath()) != null) {
        throw new IOException(String.format("Cannot move %s, which arrived at the old location of partition %s "
            + "of %s after its merge, to %s", file.getPath(), partition, table, target));
      }
    }
    if (moved > 0) {
      stragglers += moved;
      LOG.warn("Moved {} file(s) that a commit put at {}, the old location of partition {} of {}, while a merge "
          + "switched it, to {}", moved, from, partition, table, current);
    }
    return moved;
  }

  List<FileStatus> visibleFiles(Path dir) throws IOException {
    List<FileStatus> files = new ArrayList<>();
    for (FileStatus child : listOrEmpty(dir)) {
      if (child.isFile() && !HivePaths.isHidden(child.getPath().getName())) {
        files.add(child);
      }
    }
    return files;
  }

  private FileStatus[] listOrEmpty(Path dir) throws IOException {
    try {
      return fs.listStatus(dir);
    } catch (FileNotFoundException e) {
      return new FileStatus[0];
    }
  }

  FileStatus statusOrNull(Path path) throws IOException {
    try {
      return fs.getFileStatus(path);
    } catch (FileNotFoundException e) {
      return null;
    }
  }

}
