package dev.lakecommit.iceberg;

import java.util.List;
import java.util.function.Supplier;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.util.PropertyUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rewrites the current snapshot's small data manifests (below the table's {@code commit.manifest.target-size-bytes})
 * into manifests clustered by partition, with Iceberg's {@code RewriteManifests}, once there are many of them (one
 * checkpoint commit adds at least one manifest, and every scan opens each) or once one of them carries entries of
 * deleted files: a compaction's commit rewrites the manifests that listed its files with those entries marked
 * deleted, and Iceberg carries such a manifest, deleted entries and all, into every later snapshot that does not
 * rewrite it, so every scan reads them (thousands after a round that compacted many checkpoints). The rewritten
 * manifests hold live entries only. A rewrite that conflicts is dropped; one that only lost races to checkpoint
 * commits is retried ({@link MaintenanceCommits}).
 */
public final class ManifestRewrite {
  private static final Logger LOG = LoggerFactory.getLogger(ManifestRewrite.class);

  private ManifestRewrite() {}

  public record Plan(List<String> manifests, long targetBytes) {}

  /** {@code rewritten} manifests replaced; 0 if nothing was due or the rewrite was dropped ({@code dropped}). */
  public record Result(int rewritten, boolean dropped, String reason) {}

  static Plan plan(Table table, int minSmall) {
    if (minSmall < 2) {
      throw new IllegalArgumentException(String.format("Invalid small manifest count: %s (must be >= 2)", minSmall));
    }
    long target = PropertyUtil.propertyAsLong(table.properties(), TableProperties.MANIFEST_TARGET_SIZE_BYTES,
        TableProperties.MANIFEST_TARGET_SIZE_BYTES_DEFAULT);
    Snapshot current = table.currentSnapshot();
    if (current == null) {
      return new Plan(List.of(), target);
    }
    List<ManifestFile> small = current.dataManifests(table.io()).stream()
        .filter(manifest -> manifest.length() < target)
        .toList();
    boolean due = small.size() >= minSmall || small.stream().anyMatch(ManifestRewrite::carriesDeletedEntries);
    return new Plan(due ? small.stream().map(ManifestFile::path).toList() : List.of(), target);
  }

  /** Whether the manifest lists files as deleted (unknown counts, of old manifests, count as none). */
  static boolean carriesDeletedEntries(ManifestFile manifest) {
    return manifest.deletedFilesCount() != null && manifest.deletedFilesCount() > 0;
  }

  static Result run(Supplier<Table> load, int minSmall) {
    Table table = load.get();
    Plan plan = plan(table, minSmall);
    if (plan.manifests().isEmpty()) {
      return new Result(0, false, "fewer than " + minSmall + " small manifests, none with deleted entries");
    }
    java.util.Set<String> chosen = new java.util.HashSet<>(plan.manifests());
    try {
      // A chosen manifest that a concurrent commit replaced is simply no longer there to rewrite.
      MaintenanceCommits.commit(load, current -> current.rewriteManifests()
          .rewriteIf(manifest -> manifest.content() == ManifestContent.DATA && chosen.contains(manifest.path()))
          .clusterBy(file -> file.specId() + "|" + current.specs().get(file.specId()).partitionToPath(
              file.partition()))
          .set(Compaction.MAINTENANCE_KEY, "rewrite-manifests"));
    } catch (ValidationException | CommitFailedException e) {
      LOG.info("Dropped the manifest rewrite of table {}: {}", table.name(), e.getMessage());
      return new Result(0, true, e.getMessage());
    }
    LOG.info("Rewrote {} small manifests of table {}", plan.manifests().size(), table.name());
    return new Result(plan.manifests().size(), false, null);
  }
}
