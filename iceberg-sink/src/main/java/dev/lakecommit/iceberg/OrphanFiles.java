package dev.lakecommit.iceberg;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.staging.StagingLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.ReachableFileUtil;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StatisticsFile;
import org.apache.iceberg.PartitionStatisticsFile;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Orphan files: files under the table's location (and its data location, where the sink stages) that no snapshot,
 * manifest or metadata file of the table references and that are older than a safety age (files of commits in
 * flight, of compactions and of checkpoints being staged are younger). A file staged by a Lakecommit job for a
 * checkpoint above the job's watermark belongs to a checkpoint that may still be committed — by the run that
 * staged it, or by the next run's restore — and is kept unless it is older than the safety age, its run epoch is
 * fenced (below the job's current {@code lakecommit.epoch.<job>}), and the fencing run claimed its epoch more than
 * the safety age ago (a run commits its restored checkpoints before anything else, so that restore is over).
 */
public final class OrphanFiles {
  private static final Logger LOG = LoggerFactory.getLogger(OrphanFiles.class);

  private OrphanFiles() {}

  /** {@code orphans} would be deleted; {@code keptStaged} are unreferenced staged files of a live checkpoint. */
  public record Plan(List<String> orphans, List<String> keptStaged, int listed) {}

  public record Result(List<String> deleted) {}

  static Plan plan(Table table, Duration minAge, Instant now) throws IOException {
    if (minAge.isNegative()) {
      throw new IllegalArgumentException(String.format("Invalid orphan age: %s (must be >= 0)", minAge));
    }
    if (!(table.io() instanceof SupportsPrefixOperations io)) {
      throw new IllegalArgumentException("Cannot list files of table " + table.name() + ": its FileIO "
          + table.io().getClass().getName() + " cannot list prefixes");
    }
    TableMetadata metadata = ((HasTableOperations) table).operations().refresh();
    Set<String> referenced = referenced(table, metadata);
    StagingLayout layout = StagingLayout.under(IcebergSink.stagingRoot(table));
    long cutoff = now.minus(minAge).toEpochMilli();
    List<String> orphans = new ArrayList<>();
    List<String> keptStaged = new ArrayList<>();
    int listed = 0;
    int matched = 0;
    Set<String> seen = new HashSet<>();
    for (String prefix : prefixes(table)) {
      for (FileInfo file : list(io, prefix)) {
        String location = normalize(file.location());
        if (!seen.add(location)) {
          continue;
        }
        listed++;
        if (referenced.contains(location)) {
          matched++;
          continue;
        }
        if (file.createdAtMillis() > cutoff) {
          continue;
        }
        if (liveStaged(layout, metadata, location, cutoff, now)) {
          keptStaged.add(file.location());
        } else {
          orphans.add(file.location());
        }
      }
    }
    if (matched == 0 && metadata.currentSnapshot() != null) {
      // The current metadata file alone is under the location: a listing that matches nothing spells locations
      // differently from the metadata (another scheme or authority) and would take every file for an orphan.
      throw new IllegalStateException("Refusing to remove orphans of table " + table.name() + ": none of the "
          + listed + " files listed under " + prefixes(table) + " matches a location its metadata references");
    }
    return new Plan(List.copyOf(orphans), List.copyOf(keptStaged), listed);
  }

  static Result delete(Table table, Plan plan) {
    List<String> deleted = new ArrayList<>();
    for (String location : plan.orphans()) {
      table.io().deleteFile(location);
      deleted.add(location);
    }
    LOG.info("Deleted {} orphan files of table {} ({} unreferenced staged files of live checkpoints kept)",
        deleted.size(), table.name(), plan.keptStaged().size());
    return new Result(deleted);
  }

  /**
   * The files under a prefix. Local directories are walked with {@code java.nio}, skipping files that vanish
   * while listed (Hadoop's local listing fails on them, and commits delete their failed attempts' files all the
   * time); other stores are listed by the table's {@code FileIO}.
   */
  private static Iterable<FileInfo> list(SupportsPrefixOperations io, String prefix) throws IOException {
    String normalized = normalize(prefix);
    if (!normalized.startsWith("/")) {
      return io.listPrefix(prefix);
    }
    java.nio.file.Path root = java.nio.file.Paths.get(normalized);
    List<FileInfo> files = new ArrayList<>();
    if (!java.nio.file.Files.isDirectory(root)) {
      return files;
    }
    java.nio.file.Files.walkFileTree(root, new java.nio.file.SimpleFileVisitor<>() {
      @Override
      public java.nio.file.FileVisitResult visitFile(java.nio.file.Path file,
          java.nio.file.attribute.BasicFileAttributes attributes) {
        String name = file.getFileName().toString();
        if (name.startsWith(".") && name.endsWith(".crc")
            && java.nio.file.Files.exists(file.resolveSibling(name.substring(1, name.length() - 4)))) {
          return java.nio.file.FileVisitResult.CONTINUE; // Hadoop's checksum of a file: it goes with the file
        }
        if (name.equals(HadoopCommitLock.LOCK_FILE)) {
          return java.nio.file.FileVisitResult.CONTINUE; // a Hadoop table's commit lock, maybe held right now
        }
        if (attributes.isRegularFile()) {
          files.add(new FileInfo("file:" + file, attributes.size(), attributes.lastModifiedTime().toMillis()));
        }
        return java.nio.file.FileVisitResult.CONTINUE;
      }

      @Override
      public java.nio.file.FileVisitResult visitFileFailed(java.nio.file.Path file, IOException e)
          throws IOException {
        if (e instanceof java.nio.file.NoSuchFileException) {
          return java.nio.file.FileVisitResult.CONTINUE;
        }
        throw e;
      }
    });
    return files;
  }

  /** Whether a staged file belongs to a checkpoint above its job's watermark that a run may still commit. */
  private static boolean liveStaged(StagingLayout layout, TableMetadata metadata, String location, long cutoff,
      Instant now) {
    String root = normalize(layout.root()) + "/";
    if (!location.startsWith(root)) {
      return false;
    }
    int slash = location.indexOf('/', root.length());
    if (slash < 0) {
      return false;
    }
    JobId job;
    try {
      job = JobId.of(location.substring(root.length(), slash));
    } catch (IllegalArgumentException e) {
      return false;
    }
    OptionalLong checkpoint = layout.checkpointOf(job, location);
    if (checkpoint.isEmpty()) {
      return true; // under a job's prefix but not a name we give: keep, it is not ours to judge
    }
    OptionalLong watermark = Watermarks.watermark(metadata, job);
    if (watermark.isPresent() && checkpoint.getAsLong() <= watermark.getAsLong()) {
      return false; // committed checkpoints reference their files; an unreferenced one is a failed attempt's
    }
    OptionalLong epoch = layout.epochOf(job, location);
    Optional<RunEpoch> current = IcebergTarget.epochIn(metadata, job);
    if (epoch.isEmpty() || current.isEmpty() || epoch.getAsLong() >= current.get().epoch()) {
      return true; // the live run's own
    }
    Optional<Instant> claimed = claimTime(current.get());
    return claimed.isEmpty() || claimed.get().toEpochMilli() > cutoff; // the fencing run may still restore it
  }

  /**
   * When the run took its epoch, from its description ({@code pid 12 on host at <instant>[, attempt 2]}, as
   * {@link RunEpoch#thisProcess()} writes it), if it says.
   */
  static Optional<Instant> claimTime(RunEpoch epoch) {
    int at = epoch.run().lastIndexOf(" at ");
    if (at < 0) {
      return Optional.empty();
    }
    String rest = epoch.run().substring(at + 4).trim();
    int end = 0;
    while (end < rest.length() && rest.charAt(end) != ',' && !Character.isWhitespace(rest.charAt(end))) {
      end++;
    }
    try {
      return Optional.of(Instant.parse(rest.substring(0, end)));
    } catch (java.time.format.DateTimeParseException e) {
      return Optional.empty();
    }
  }

  private static List<String> prefixes(Table table) {
    String location = normalize(table.location()) + "/";
    String data = normalize(IcebergSink.dataLocation(table)) + "/";
    return data.startsWith(location) ? List.of(location) : List.of(location, data);
  }

  /** Every file the table's current metadata references, normalized ({@link #normalize}). */
  static Set<String> referenced(Table table) {
    return referenced(table, ((org.apache.iceberg.HasTableOperations) table).operations().current());
  }

  /** Every file the table's metadata references: metadata files, manifest lists, manifests and their files. */
  private static Set<String> referenced(Table table, TableMetadata metadata) {
    Set<String> referenced = new HashSet<>();
    ReachableFileUtil.metadataFileLocations(table, true).forEach(l -> referenced.add(normalize(l)));
    if (metadata.metadataFileLocation() != null) {
      referenced.add(normalize(metadata.metadataFileLocation()));
    }
    referenced.add(normalize(ReachableFileUtil.versionHintLocation(table)));
    metadata.statisticsFiles().stream().map(StatisticsFile::path).forEach(l -> referenced.add(normalize(l)));
    metadata.partitionStatisticsFiles().stream().map(PartitionStatisticsFile::path)
        .forEach(l -> referenced.add(normalize(l)));
    Set<String> manifests = new HashSet<>();
    for (Snapshot snapshot : metadata.snapshots()) {
      if (snapshot.manifestListLocation() != null) {
        referenced.add(normalize(snapshot.manifestListLocation()));
      }
      for (ManifestFile manifest : snapshot.allManifests(table.io())) {
        if (manifests.add(manifest.path())) {
          referenced.add(normalize(manifest.path()));
          addFiles(table, manifest, referenced);
        }
      }
    }
    return referenced;
  }

  private static void addFiles(Table table, ManifestFile manifest, Set<String> referenced) {
    try {
      switch (manifest.content()) {
        case DATA -> {
          try (ManifestReader<org.apache.iceberg.DataFile> reader = ManifestFiles.read(manifest, table.io(),
              table.specs())) {
            reader.forEach(file -> referenced.add(normalize(file.location())));
          }
        }
        case DELETES -> {
          try (ManifestReader<DeleteFile> reader = ManifestFiles.readDeleteManifest(manifest, table.io(),
              table.specs())) {
            reader.forEach(file -> referenced.add(normalize(file.location())));
          }
        }
        default -> throw new IllegalStateException("Unknown manifest content " + manifest.content());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** One spelling per file: {@code file:/x}, {@code file:///x} and {@code /x}; {@code s3a://} and {@code s3://}. */
  static String normalize(String location) {
    for (String scheme : List.of("s3a://", "s3n://")) {
      if (location.startsWith(scheme)) {
        return "s3://" + location.substring(scheme.length()); // one object, whichever client names it
      }
    }
    if (location.startsWith("file:///")) {
      return location.substring("file://".length());
    }
    if (location.startsWith("file:/")) {
      return location.substring("file:".length());
    }
    return location;
  }
}
