package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.BlobStore;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.staging.FileIOBlobStore;
import dev.lakecommit.staging.FileIOs;
import dev.lakecommit.core.runtime.CorruptCheckpointException;
import dev.lakecommit.ingest.source.ChangedInputException;
import dev.lakecommit.ingest.source.FileSource;
import dev.lakecommit.ingest.source.InputLocations;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
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
      description = "Stable id of the job across restarts (default: derived from the input's absolute location "
          + "and the table).")
  String jobId;

  @Option(names = "--checkpoint-dir", paramLabel = "DIR|URI",
      description = "Where checkpoints are kept: a local directory or s3://, s3a:// (default: "
          + "<warehouse>/_lakecommit/checkpoints/<job-id> for the embedded catalog, "
          + "./.lakecommit/checkpoints/<job-id> otherwise).")
  String checkpointDir;

  /** What {@code ingest} does when the input it resumes in changed since its last checkpoint. */
  public enum OnChangedInput {
    /** Stop, naming the file and what changed (the default). */
    FAIL,
    /** Ingest the input as new input: under a new job id, {@code <job-id>-input2}, {@code -input3}, ... */
    NEW_JOB;

    /** {@code fail} or {@code new-job} ({@code new_job}), in any case. */
    static OnChangedInput of(String value) {
      String name = value == null ? "" : value.trim().toUpperCase(Locale.ROOT).replace('-', '_');
      for (OnChangedInput policy : values()) {
        if (policy.name().equals(name)) {
          return policy;
        }
      }
      throw new picocli.CommandLine.TypeConversionException("expected fail or new-job, got '" + value + "'");
    }
  }

  /**
   * The given job id, or one derived from what the job reads and writes, so reruns find their checkpoints: a hash
   * of the input's {@linkplain InputLocations#canonical canonical location} (so {@code in/a.jsonl},
   * {@code ./in/a.jsonl} and {@code /abs/in/a.jsonl} are one job) and the table name.
   */
  public JobId jobId(String input, String table) {
    if (jobId != null) {
      return JobId.of(jobId);
    }
    if (dev.lakecommit.ingest.source.KafkaInput.isKafka(input)) {
      return derived(dev.lakecommit.ingest.source.KafkaInput.parse(input).toString(), table);
    }
    return derived(InputLocations.canonical(input), table);
  }

  /** The id earlier versions derived from the input exactly as typed (kept to resume their jobs). */
  static JobId legacyJobId(String input, String table) {
    return derived(input, table);
  }

  private static JobId derived(String input, String table) {
    String slug = table.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "-").replaceAll("^-|-$", "");
    return JobId.of("ingest-" + slug + "-" + shortHash(input + "\n" + table));
  }

  /**
   * The job a run of {@code ingest} continues. A derived id that has no checkpoints yet gives way to the id an
   * earlier version derived from the input as typed, if that one has checkpoints, so that upgrading never starts a
   * running job afresh (which would ingest its input twice). With {@link OnChangedInput#NEW_JOB}, a job whose last
   * checkpoint was taken in input that changed since (replaced, truncated, rewritten) gives way to the next job of
   * the chain {@code <id>-input2}, {@code <id>-input3}, ...: the first one with no checkpoint, or whose checkpoint
   * still fits the input; so reruns with the option find the same job.
   *
   * @throws IllegalArgumentException for {@code NEW_JOB} with an explicit {@code --checkpoint-dir} (one directory
   *     cannot hold the chain's jobs)
   */
  public JobId resolveJobId(String input, String table, TableOptions options, FileSource source,
      OnChangedInput onChanged, PrintWriter out) throws IOException {
    JobId base = jobId(input, table);
    if (jobId == null) {
      JobId legacy = legacyJobId(input, table);
      if (!legacy.equals(base) && latestPosition(base, options) == null && latestPosition(legacy, options) != null) {
        out.printf("Continuing job %s: an earlier version derived its id from the input as typed (%s); new jobs "
            + "derive it from the absolute location %s%n", legacy, input, InputLocations.canonical(input));
        base = legacy;
      }
    }
    if (onChanged != OnChangedInput.NEW_JOB) {
      return base;
    }
    if (checkpointDir != null) {
      throw new IllegalArgumentException("Option --on-changed-input new-job needs the default checkpoint location "
          + "(each job of the input gets its own); without --checkpoint-dir, or give a new --job-id and "
          + "--checkpoint-dir for the new input instead");
    }
    for (int generation = 1; ; generation++) {
      JobId candidate = generation == 1 ? base : JobId.of(base.value() + "-input" + generation);
      byte[] position = latestPosition(candidate, options);
      if (position == null) {
        return candidate;
      }
      try {
        source.checkResumable(position);
        return candidate;
      } catch (ChangedInputException e) {
        out.printf("Job %s read input that changed since: %s%nIngesting the input as new input (--on-changed-input "
            + "new-job) under job %s%n", candidate, e.getMessage(), base.value() + "-input" + (generation + 1));
      }
    }
  }

  /** The source position of a job's newest readable checkpoint, or null if it has none. */
  byte[] latestPosition(JobId job, TableOptions options) throws IOException {
    String location = checkpointLocation(job, options);
    if (!location.contains("://") && !Files.isDirectory(Path.of(location.startsWith("file:")
        ? location.substring(5) : location))) {
      return null; // nothing to read, and nothing created
    }
    CheckpointStore store = checkpointStore(job, options);
    for (long id : store.checkpointIds()) {
      try {
        return store.load(job, id).sourcePosition();
      } catch (CorruptCheckpointException e) {
        // the runtime falls back past it, or refuses; an older one tells what the job read
      }
    }
    return null;
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
