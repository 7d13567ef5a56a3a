package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.staging.StagingLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestWriter;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.OutputFile;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Manifests the committer writes for staged files that came without one (writers configured not to write
 * manifests), so that an append commits one manifest per partition spec instead of adding files one by one.
 *
 * <p>Each commit call writes its own manifests under a new name in the checkpoint's staging prefix; the caller
 * deletes them unless the table may reference them ({@link #discard}): a manifest is never rewritten in place,
 * because a table that references it must keep reading the bytes it was committed with.
 */
final class CommitterManifests {
  private static final Logger LOG = LoggerFactory.getLogger(CommitterManifests.class);

  private CommitterManifests() {}

  /**
   * Whether the committer writes manifests for this table: format v2 or later, where an appended manifest without
   * a snapshot id is used as it is (v1 manifests would be rewritten by the commit).
   */
  static boolean supported(Table table) {
    return ((HasTableOperations) table).operations().current().formatVersion() >= 2;
  }

  /** Writes the files into one manifest per partition spec; on failure deletes what it wrote and rethrows. */
  static List<ManifestFile> write(Table table, StagingLayout layout, CommitId id, List<DataFile> files) {
    Map<Integer, List<DataFile>> bySpec = new LinkedHashMap<>();
    files.forEach(file -> bySpec.computeIfAbsent(file.specId(), spec -> new ArrayList<>()).add(file));
    int formatVersion = ((HasTableOperations) table).operations().current().formatVersion();
    List<ManifestFile> written = new ArrayList<>();
    List<String> paths = new ArrayList<>();
    String prefix = layout.checkpointPrefix(id.jobId(), id.checkpointId());
    String name = id.jobId().value() + "-" + id.checkpointId() + "-committer-" + UUID.randomUUID();
    try {
      for (Map.Entry<Integer, List<DataFile>> entry : bySpec.entrySet()) {
        PartitionSpec spec = table.specs().get(entry.getKey());
        String path = prefix + name + "-" + entry.getKey() + "-manifest.avro";
        paths.add(path);
        OutputFile out = table.io().newOutputFile(path);
        ManifestWriter<DataFile> writer = ManifestFiles.write(formatVersion, spec, out, null);
        try (writer) {
          entry.getValue().forEach(writer::add);
        }
        written.add(writer.toManifestFile());
      }
      return written;
    } catch (IOException | RuntimeException e) {
      paths.forEach(path -> deleteQuietly(table, path));
      if (e instanceof IOException io) {
        throw new UncheckedIOException("Cannot write the manifest of " + id + " under " + prefix, io);
      }
      throw (RuntimeException) e;
    }
  }

  /** Deletes manifests that no snapshot references; best effort (a leftover is only an orphan file). */
  static void discard(Table table, List<ManifestFile> manifests) {
    manifests.forEach(manifest -> deleteQuietly(table, manifest.path()));
  }

  private static void deleteQuietly(Table table, String path) {
    try {
      table.io().deleteFile(path);
    } catch (RuntimeException e) {
      LOG.warn("Could not delete unused committer manifest {}: {}", path, e.toString());
    }
  }
}
