package dev.lakecommit.hive;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Predicate;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.S3AFileSystem;
import org.apache.hadoop.fs.s3a.commit.CommitConstants;
import org.apache.hadoop.fs.s3a.commit.files.SinglePendingCommit;
import org.apache.hadoop.fs.s3a.commit.impl.CommitOperations;
import software.amazon.awssdk.services.s3.model.MultipartUpload;

/**
 * Staged files that are S3 multipart uploads, completed only at commit, through S3A's magic committer: a writer
 * creates {@code <table>/__magic_job-lakecommit/<job>/ckpt-<id>/__base/<partition>/<file>}, and S3A uploads its
 * bytes as parts of an upload to {@code <table>/<partition>/<file>} without completing it (a zero-byte marker and a
 * {@code .pending} file with the upload id and part ETags stay at the staged path). Completing the upload makes the
 * file appear at its destination: a commit moves no bytes.
 */
final class PendingUploads {
  /** The directory under the table that S3A's magic committer recognizes (Hive readers skip its leading {@code _}). */
  static final String MAGIC_DIR = CommitConstants.MAGIC_PATH_PREFIX + "lakecommit";
  static final String BASE = CommitConstants.BASE;
  private static final String PENDING_SUFFIX = CommitConstants.PENDING_SUFFIX;

  /**
   * What completes one staged file's upload: kept in the commit intent, so a later run completes it (or finds it
   * completed) even if the staged marker is gone.
   *
   * @param staged the staged (magic) path the writer wrote
   * @param destination where the completed upload appears
   */
  record Upload(String staged, String destination, String uploadId, long length, List<String> etags) {
    Upload {
      Objects.requireNonNull(staged, "staged");
      Objects.requireNonNull(destination, "destination");
      Objects.requireNonNull(uploadId, "uploadId");
      etags = List.copyOf(etags);
    }
  }

  private final S3AFileSystem fs;
  private final CommitOperations operations;

  private PendingUploads(S3AFileSystem fs) throws IOException {
    this.fs = fs;
    this.operations = new CommitOperations(fs);
  }

  /** The uploads of {@code fs}, or null if it is not S3A (wrappers are looked through). */
  static PendingUploads of(FileSystem fs) throws IOException {
    FileSystem raw = fs;
    while (raw instanceof FilterFileSystem filter) {
      raw = filter.getRawFileSystem();
    }
    return raw instanceof S3AFileSystem s3a ? new PendingUploads(s3a) : null;
  }

  /**
   * Whether files of a table at {@code location} are staged as uploads: an {@code s3a://} table, appended to (an
   * insert-overwrite writes into a fresh directory per checkpoint, which a writer does not know), with S3A's magic
   * committer enabled ({@code fs.s3a.committer.magic.enabled}, on by default).
   */
  static boolean applies(Path location, WriteMode mode, Configuration conf) {
    String scheme = location.toUri().getScheme();
    return scheme != null && scheme.toLowerCase(Locale.ROOT).equals("s3a") && mode == WriteMode.APPEND
        && conf.getBoolean(CommitConstants.MAGIC_COMMITTER_ENABLED, CommitConstants.DEFAULT_MAGIC_COMMITTER_ENABLED);
  }

  /** Whether {@code staged} is a path S3A turns into a pending upload. */
  static boolean isPending(Path staged) {
    return staged.toUri().getPath().contains("/" + MAGIC_DIR + "/");
  }

  /** The staging root of a table whose files are staged as uploads. */
  static Path stagingRoot(Path tableLocation) {
    return new Path(tableLocation, MAGIC_DIR);
  }

  /**
   * Reads the upload of a staged file from its {@code .pending} file.
   *
   * @throws FileNotFoundException if the staged file has no pending upload (completed and cleaned up, or lost)
   */
  Upload load(Path staged) throws IOException {
    Path pending = new Path(staged.getParent(), staged.getName() + PENDING_SUFFIX);
    SinglePendingCommit commit = SinglePendingCommit.load(fs, pending, null, SinglePendingCommit.serializer());
    Path destination = fs.keyToQualifiedPath(commit.getDestinationKey());
    return new Upload(staged.toString(), destination.toString(), commit.getUploadId(), commit.getLength(),
        commit.getEtags());
  }

  /**
   * Completes an upload: its file appears at its destination. Completing one that is no longer pending (completed,
   * or aborted) fails; the caller then looks at the destination.
   */
  void complete(Upload upload) throws IOException {
    operations.commitOrFail(toPendingCommit(upload));
  }

  /** Aborts an upload (its parts are deleted); one that is no longer pending is ignored. */
  void abort(Upload upload) throws IOException {
    try {
      operations.abortMultipartCommit(fs.pathToKey(new Path(upload.destination())), upload.uploadId());
    } catch (FileNotFoundException e) {
      // Completed or aborted already.
    }
  }

  /** Deletes a staged file's marker and its {@code .pending} file. */
  void deleteStaged(Path staged) throws IOException {
    fs.delete(new Path(staged.getParent(), staged.getName() + PENDING_SUFFIX), false);
    fs.delete(staged, false);
  }

  /**
   * Aborts the uploads in progress under {@code prefix} whose destination file name {@code names} accepts.
   *
   * @return how many were aborted
   */
  int abortUnder(Path prefix, Predicate<String> names) throws IOException {
    int aborted = 0;
    for (MultipartUpload upload : listUnder(prefix)) {
      String key = upload.key();
      if (names.test(key.substring(key.lastIndexOf('/') + 1))) {
        operations.abortMultipartCommit(key, upload.uploadId());
        aborted++;
      }
    }
    return aborted;
  }

  /**
   * Aborts the uploads in progress under the table that {@code job} staged for checkpoints above {@code
   * afterCheckpoint} in run epochs {@code minEpoch..maxEpoch} (found by the staged names of their destinations):
   * leaks of failed or fenced attempts, whose checkpoints will never commit.
   *
   * @return how many were aborted (0 where the table is not on S3A)
   */
  static long abortStaged(FileSystem fs, Path tableLocation, dev.lakecommit.staging.StagingLayout layout,
      dev.lakecommit.core.JobId job, long afterCheckpoint, long minEpoch, long maxEpoch) throws IOException {
    return abortStaged(fs, tableLocation, layout, job, checkpoint -> checkpoint > afterCheckpoint, minEpoch, maxEpoch);
  }

  /**
   * Aborts the uploads in progress under the table that {@code job} staged for checkpoints {@code checkpoints}
   * accepts, in run epochs {@code minEpoch..maxEpoch}.
   */
  static long abortStaged(FileSystem fs, Path tableLocation, dev.lakecommit.staging.StagingLayout layout,
      dev.lakecommit.core.JobId job, java.util.function.LongPredicate checkpoints, long minEpoch, long maxEpoch)
      throws IOException {
    PendingUploads uploads = of(fs);
    if (uploads == null) {
      return 0;
    }
    return uploads.abortUnder(tableLocation, name -> {
      java.util.OptionalLong checkpoint = dev.lakecommit.staging.StagingLayout.checkpointInName(job, name);
      java.util.OptionalLong epoch = layout.epochOf(job, name);
      return checkpoint.isPresent() && checkpoints.test(checkpoint.getAsLong()) && epoch.isPresent()
          && epoch.getAsLong() >= minEpoch && epoch.getAsLong() <= maxEpoch;
    });
  }

  /** The destinations of the uploads in progress under {@code prefix} (as {@code s3a://} paths). */
  List<String> pendingUnder(Path prefix) throws IOException {
    return listUnder(prefix).stream().map(u -> fs.keyToQualifiedPath(u.key()).toString()).toList();
  }

  private List<MultipartUpload> listUnder(Path prefix) throws IOException {
    return operations.listPendingUploadsUnderPath(prefix);
  }

  private SinglePendingCommit toPendingCommit(Upload upload) {
    SinglePendingCommit commit = new SinglePendingCommit();
    Path destination = new Path(upload.destination());
    commit.setBucket(fs.getBucket());
    commit.setDestinationKey(fs.pathToKey(destination));
    commit.setUri(destination.toUri().toString());
    commit.setUploadId(upload.uploadId());
    commit.setEtags(upload.etags());
    commit.setLength(upload.length());
    return commit;
  }
}
