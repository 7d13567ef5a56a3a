package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.BlobStore;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.staging.FileIOBlobStore;
import dev.lakecommit.staging.FileIOs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Option;

/** The job's identity and where its checkpoints live. */
public final class JobOptions {
  @Option(names = "--job-id", paramLabel = "ID",
      description = "Stable id of the job across restarts (default: derived from the input and the table).")
  String jobId;

  @Option(names = "--checkpoint-dir", paramLabel = "DIR|URI",
      description = "Where checkpoints are kept: a local directory or s3://, s3a:// (default: "
          + "<warehouse>/_lakecommit/checkpoints/<job-id> for the embedded catalog, "
          + "./.lakecommit/checkpoints/<job-id> otherwise).")
  String checkpointDir;

  /** The given job id, or one derived from what the job reads and writes, so reruns find their checkpoints. */
  public JobId jobId(String input, String table) {
    if (jobId != null) {
      return JobId.of(jobId);
    }
    String slug = table.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "-").replaceAll("^-|-$", "");
    return JobId.of("ingest-" + slug + "-" + shortHash(input + "\n" + table));
  }

  public JobId requiredJobId() {
    if (jobId == null) {
      throw new IllegalArgumentException("Missing option --job-id");
    }
    return JobId.of(jobId);
  }

  /** The checkpoint location of a job, as given or by default under the tool's state directory. */
  public String checkpointLocation(JobId job, TableOptions table) {
    if (checkpointDir != null) {
      return checkpointDir;
    }
    return table.stateDir().resolve("checkpoints").resolve(job.value()).toString();
  }

  /** The checkpoint store of a job, on local disk or on an object store through a FileIO. */
  public CheckpointStore checkpointStore(JobId job, TableOptions table) throws IOException {
    return new CheckpointStore(blobStore(checkpointLocation(job, table), table.catalogProperties()));
  }

  /**
   * The checkpoint store of a job that ran before, for {@code status} and {@code cleanup}: never created. Without
   * {@code --checkpoint-dir}, a default location that does not exist is refused (outside the embedded catalog the
   * default is relative to the working directory, so a missing one most likely means another directory).
   *
   * @return empty if the embedded default has no checkpoints of the job (it never ran there)
   * @throws IllegalArgumentException naming {@code --checkpoint-dir} if a non-embedded default does not exist
   */
  public java.util.Optional<CheckpointStore> existingCheckpointStore(JobId job, TableOptions table)
      throws IOException {
    String location = checkpointLocation(job, table);
    boolean local = !location.contains("://") || location.startsWith("file:");
    if (local && !java.nio.file.Files.isDirectory(Path.of(location.startsWith("file:") ? location.substring(5)
        : location))) {
      if (checkpointDir == null && !table.embedded()) {
        throw new IllegalArgumentException("Missing option --checkpoint-dir: job " + job + " has no checkpoints at "
            + "the default " + location + " (relative to the working directory); give the --checkpoint-dir its "
            + "ingest used");
      }
      if (checkpointDir != null) {
        throw new IllegalArgumentException("Invalid option --checkpoint-dir: " + location + " does not exist");
      }
      return java.util.Optional.empty();
    }
    return java.util.Optional.of(checkpointStore(job, table));
  }

  static BlobStore blobStore(String location, Map<String, String> properties) throws IOException {
    if (location.startsWith("s3://") || location.startsWith("s3a://") || location.startsWith("hdfs://")) {
      return new FileIOBlobStore(
          FileIOs.forLocation(location, properties, dev.lakecommit.iceberg.HadoopConfs.from(properties)), location);
    }
    return new LocalBlobStore(Path.of(location.startsWith("file:") ? location.substring(5) : location));
  }

  private static String shortHash(String text) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest, 0, 4);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
