package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.VersionedSerialization;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The commit intents of a table's jobs, under the job's staging prefix: {@code <staging root>/<job-id>/intents/
 * intent-<checkpoint-id>-e<epoch>.bin}. Hidden from Hive readers (the staging root is hidden), and outside every
 * {@code ckpt-<id>/} directory and without a staged file's name, so the staging cleaner never sweeps one: an intent
 * goes only when its commit is finished or undone.
 */
final class CommitIntents {
  static final String DIR = "intents";
  private static final Pattern NAME = Pattern.compile("intent-(\\d+)-e(\\d+)\\.bin");

  /** One intent found in storage. */
  record Stored(long checkpointId, long epoch, Path path) {}

  private final FileSystem fs;
  private final Path stagingRoot;
  private final CommitIntent.Serializer serializer = new CommitIntent.Serializer();

  CommitIntents(FileSystem fs, Path stagingRoot) {
    this.fs = fs;
    this.stagingRoot = stagingRoot;
  }

  Path dir(JobId jobId) {
    return new Path(new Path(stagingRoot, jobId.value()), DIR);
  }

  Path location(CommitId id, long epoch) {
    return new Path(dir(id.jobId()), "intent-" + id.checkpointId() + "-e" + epoch + ".bin");
  }

  /**
   * Writes the intent unless it is there already (an earlier attempt of the same run wrote it), whole or not at
   * all: to a temporary name first, then renamed.
   *
   * @return where it is
   */
  Path write(CommitIntent intent) throws IOException {
    Path target = location(intent.commitId(), intent.epoch());
    if (fs.exists(target)) {
      return target;
    }
    if (TableStorage.isObjectStore(fs)) {
      // An object appears whole when its upload ends, or not at all: no rename (a copy on S3) is needed.
      try (OutputStream out = fs.create(target, false)) {
        out.write(VersionedSerialization.toBytes(serializer, intent));
      }
      return target;
    }
    Path temp = new Path(target.getParent(), "_tmp-" + target.getName() + "-" + UUID.randomUUID());
    try (OutputStream out = fs.create(temp, false)) {
      out.write(VersionedSerialization.toBytes(serializer, intent));
    }
    if (!fs.rename(temp, target)) {
      fs.delete(temp, false);
      if (!fs.exists(target)) {
        throw new IOException("Cannot write the commit intent of " + intent.commitId() + " at " + target);
      }
    }
    return target;
  }

  CommitIntent read(Path path) throws IOException {
    FileStatus status = fs.getFileStatus(path);
    byte[] bytes = new byte[Math.toIntExact(status.getLen())];
    try (InputStream in = fs.open(path)) {
      new java.io.DataInputStream(in).readFully(bytes);
    }
    try {
      return VersionedSerialization.fromBytes(serializer, bytes);
    } catch (IOException | RuntimeException e) {
      throw new IOException("Cannot read the commit intent " + path + ": " + e.getMessage(), e);
    }
  }

  /** The job's intents, oldest checkpoint first (and, for one checkpoint, oldest epoch first). */
  List<Stored> list(JobId jobId) throws IOException {
    FileStatus[] children;
    try {
      children = fs.listStatus(dir(jobId));
    } catch (FileNotFoundException e) {
      return List.of();
    }
    List<Stored> found = new ArrayList<>();
    for (FileStatus child : children) {
      Matcher name = NAME.matcher(child.getPath().getName());
      if (child.isFile() && name.matches()) {
        found.add(new Stored(Long.parseLong(name.group(1)), Long.parseLong(name.group(2)), child.getPath()));
      }
    }
    found.sort(Comparator.comparingLong(Stored::checkpointId).thenComparingLong(Stored::epoch));
    return found;
  }

  /** Deletes an intent; deleting it again deletes nothing. */
  void delete(Path path) throws IOException {
    fs.delete(path, false);
  }
}
