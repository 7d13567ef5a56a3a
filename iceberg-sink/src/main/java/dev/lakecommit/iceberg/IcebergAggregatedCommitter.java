package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitProperties;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingManifest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeSet;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Combines writers' manifests into one {@link IcebergCommittable} per checkpoint and commits it as one snapshot;
 * optionally coalesces several pending append checkpoints into one snapshot.
 */
final class IcebergAggregatedCommitter
    implements SinkAggregatedCommitter<StagingManifest, IcebergCommittable>,
        SupportsCommitProperties {
  private static final Logger LOG = LoggerFactory.getLogger(IcebergAggregatedCommitter.class);

  private final TableCommitter committer;
  private final Table table;
  private final StagingLayout layout;
  private final boolean coalesce;
  private final boolean epochCheck;
  /** The run epoch of {@link #fence}; 0 before (names of rewritten files carry it). */
  private long runEpoch;
  private Hooks hooks = Hooks.NONE;

  IcebergAggregatedCommitter(TableCommitter committer, Table table, StagingLayout layout, boolean coalesce) {
    this(committer, table, layout, coalesce, true);
  }

  /** With {@code epochCheck} off (tests only), {@link #fence} is ignored. */
  IcebergAggregatedCommitter(TableCommitter committer, Table table, StagingLayout layout, boolean coalesce,
      boolean epochCheck) {
    this.committer = committer;
    this.table = table;
    this.layout = layout;
    this.coalesce = coalesce;
    this.epochCheck = epochCheck;
  }

  @Override
  public IcebergCommittable combine(CommitId commitId, List<StagingManifest> infos) {
    List<StagingManifest> sorted = new ArrayList<>(infos);
    sorted.sort(Comparator.comparingInt(StagingManifest::writerIndex));
    return new IcebergCommittable(commitId, sorted);
  }

  /**
   * With coalescing on: the oldest pending append checkpoints, up to the first one that stages deletes, as one
   * commit carrying the newest one's id. Otherwise the oldest alone.
   */
  @Override
  public IcebergCommittable coalesce(List<IcebergCommittable> pending) {
    if (!coalesce || pending.size() < 2) {
      return pending.get(0);
    }
    List<StagingManifest> merged = new ArrayList<>();
    int taken = 0;
    for (IcebergCommittable committable : pending) {
      if (committable.manifests().stream().anyMatch(m -> !m.deleteFiles().isEmpty())) {
        break;
      }
      merged.addAll(committable.manifests());
      taken++;
    }
    if (taken < 2) {
      return pending.get(0);
    }
    IcebergCommittable newest = pending.get(taken - 1);
    LOG.info("Coalescing {} pending checkpoints ({} to {}) of job {} into one commit", taken,
        pending.get(0).firstCheckpointId(), newest.commitId().checkpointId(), newest.commitId().jobId());
    return new IcebergCommittable(newest.commitId(), merged, pending.get(0).firstCheckpointId());
  }

  @Override
  public CommitOutcome commit(IcebergCommittable committable) {
    IcebergCommittable remaining = committable;
    while (true) {
      try {
        return commitOnce(remaining);
      } catch (PartiallyCommittedException e) {
        // Some covered checkpoints are in the table already: commit the others, still as one snapshot.
        long upTo = e.committedUpTo();
        List<StagingManifest> rest =
            remaining.manifests().stream().filter(m -> m.checkpointId() > upTo).toList();
        long first = rest.stream().mapToLong(StagingManifest::checkpointId).min()
            .orElse(remaining.commitId().checkpointId());
        LOG.info("Table {} holds job {} up to checkpoint {} ({}); committing checkpoints {} to {} as one snapshot",
            table.name(), remaining.commitId().jobId(), upTo, e.getMessage(), first,
            remaining.commitId().checkpointId());
        remaining = new IcebergCommittable(remaining.commitId(), rest, first);
      }
    }
  }

  private CommitOutcome commitOnce(IcebergCommittable committable) {
    Optional<CommitOutcome> before = committer.committedBefore(committable.commitId());
    if (before.isPresent()) {
      FieldIdRewrite.deleteReplacedAfterReplay(table, committable);
      return before.get();
    }
    FieldIdRewrite.Result rewrite;
    Planned planned;
    try {
      rewrite = rewrite(committable);
    } catch (IllegalArgumentException e) {
      return CommitOutcome.fatal(new IllegalStateException(String.format(
          "Cannot commit %s to table %s: %s", committable.commitId(), table.name(), e.getMessage()), e));
    } catch (RuntimeException e) {
      return CommitOutcome.retryable(e);
    }
    try {
      hooks.afterRewrite(rewrite);
      planned = plan(rewrite.committable());
    } catch (IllegalArgumentException e) {
      FieldIdRewrite.deleteQuietly(table, rewrite.written(), "rewritten file of a commit not made");
      return CommitOutcome.fatal(new IllegalStateException(String.format(
          "Cannot commit %s to table %s: %s", committable.commitId(), table.name(), e.getMessage()), e));
    } catch (RuntimeException e) {
      FieldIdRewrite.deleteQuietly(table, rewrite.written(), "rewritten file of a commit not made");
      return CommitOutcome.retryable(e);
    }
    CommitOutcome outcome;
    try {
      outcome = committer.commit(planned.changes());
    } catch (PartiallyCommittedException e) {
      // Nothing of this attempt landed: the caller commits the rest, rewritten again against the table then.
      CommitterManifests.discard(table, planned.written());
      FieldIdRewrite.deleteQuietly(table, rewrite.written(), "rewritten file of a commit not made");
      throw e;
    } catch (RuntimeException e) {
      CommitterManifests.discard(table, planned.written());
      throw e;
    }
    boolean mayBeReferenced = outcome instanceof CommitOutcome.Committed || outcome instanceof CommitOutcome.Unknown;
    if (!mayBeReferenced) {
      CommitterManifests.discard(table, planned.written());
      FieldIdRewrite.deleteQuietly(table, rewrite.written(), "rewritten file of a commit not made");
    }
    if (outcome instanceof CommitOutcome.Committed && rewrite.rewrote()) {
      hooks.afterCommit(rewrite);
      // Only now, with the rewritten files in the table, are the originals the checkpoint refers to unneeded.
      FieldIdRewrite.deleteQuietly(table, rewrite.replaced(), "original of a rewritten file");
    } else if (outcome instanceof CommitOutcome.AlreadyCommitted) {
      FieldIdRewrite.deleteReplacedAfterReplay(table, committable);
    }
    return outcome;
  }

  /**
   * The committable with its files rewritten where the table, evolved by this commit as it is now, gives their
   * columns other field ids ({@link FieldIdRewrite}); as it is if the table holds its checkpoints already (the
   * commit then finds them there), so a committed file is never written again.
   */
  private FieldIdRewrite.Result rewrite(IcebergCommittable committable) {
    if (committable.manifests().stream().noneMatch(m -> m.evolvedSchema().isPresent())) {
      return FieldIdRewrite.Result.none(committable);
    }
    OptionalLong committed = committer.lastCommitted(committable.commitId().jobId());
    if (committed.isPresent() && committed.getAsLong() >= committable.firstCheckpointId()) {
      return FieldIdRewrite.Result.none(committable);
    }
    table.refresh();
    Map<String, Map<Integer, PartitionSpec>> evolvedSpecs = new java.util.HashMap<>();
    return FieldIdRewrite.plan(table, committable, runEpoch,
        (file, manifest) -> spec(file, manifest, evolvedSpecs));
  }

  /** Test-only: points between a commit's steps at which a test may crash the committer. */
  interface Hooks {
    Hooks NONE = new Hooks() {};

    /** After the files were rewritten, before the commit. */
    default void afterRewrite(FieldIdRewrite.Result rewrite) {}

    /** After a commit of rewritten files landed, before the originals are deleted. */
    default void afterCommit(FieldIdRewrite.Result rewrite) {}
  }

  /** Test-only. */
  IcebergAggregatedCommitter hooks(Hooks testHooks) {
    this.hooks = testHooks;
    return this;
  }

  /** What to commit, and the manifests written for it by the committer (to delete if they stay unused). */
  private record Planned(CheckpointChanges changes, List<ManifestFile> written) {}

  private Planned plan(IcebergCommittable committable) {
    List<DataFile> files = new ArrayList<>();
    List<DeleteFile> deletes = new ArrayList<>();
    List<ManifestFile> manifests = new ArrayList<>();
    TreeSet<Long> checkpoints = new TreeSet<>();
    checkpoints.add(committable.commitId().checkpointId());
    Map<String, Map<Integer, PartitionSpec>> evolvedSpecs = new java.util.HashMap<>();
    for (StagingManifest manifest : committable.manifests()) {
      checkpoints.add(manifest.checkpointId());
      if (manifest.icebergManifest().isPresent()) {
        manifests.add(manifest.icebergManifest().get().manifestFile());
      } else {
        for (StagedFile file : manifest.files()) {
          files.add(file.toDataFile(spec(file, manifest, evolvedSpecs)));
        }
      }
      for (StagedFile file : manifest.deleteFiles()) {
        deletes.add(file.toDeleteFile(spec(file, manifest, evolvedSpecs)));
      }
    }
    // Writers of one checkpoint that evolved the table's schema the same way carry equal schemas: merged here,
    // applied once in the commit's transaction.
    SchemaChange schemaChange = SchemaChange.ofManifests(committable.manifests());
    List<ManifestFile> written = List.of();
    // Not when the commit evolves the schema: the committer's manifests would be written with the table's spec as it
    // is, while the files' partition values follow the evolved schema (a widened partition source column); Iceberg
    // writes the manifests of appended files with the spec as the commit's own schema change leaves it.
    if (committer.mode() == CommitMode.APPEND && !files.isEmpty() && CommitterManifests.supported(table)
        && schemaChange.isEmpty()) {
      written = CommitterManifests.write(table, layout, committable.commitId(), files);
      manifests.addAll(written);
      files.clear();
    }
    CheckpointChanges changes = new CheckpointChanges(committable.commitId(), List.copyOf(checkpoints), files,
        deletes, manifests, committable.manifests().size(), committable.recordCount(), committable.totalBytes(),
        schemaChange);
    return new Planned(changes, written);
  }

  /**
   * The spec the writer partitioned {@code file} with: the table's spec of its id, bound to the schema the writer
   * wrote with when that evolved the table's (as the writer's own config binds it). A widened partition source
   * column (int to long) changes the partition's type; its values must be read with the writer's type, not the
   * table's old one (read as an int, a long partition value of 3,000,000,150 became -1,294,967,146).
   */
  private PartitionSpec spec(StagedFile file, StagingManifest manifest,
      Map<String, Map<Integer, PartitionSpec>> evolvedSpecs) {
    PartitionSpec spec = spec(file);
    if (manifest.evolvedSchema().isEmpty() || spec.isUnpartitioned()) {
      return spec;
    }
    return evolvedSpecs.computeIfAbsent(manifest.evolvedSchema().get(), json -> new java.util.HashMap<>())
        .computeIfAbsent(spec.specId(), id -> spec.toUnbound().bind(
            org.apache.iceberg.SchemaParser.fromJson(manifest.evolvedSchema().get())));
  }

  private PartitionSpec spec(StagedFile file) {
    Map<Integer, PartitionSpec> specs = table.specs();
    PartitionSpec spec = specs.get(file.specId());
    if (spec == null) {
      table.refresh();
      spec = table.specs().get(file.specId());
    }
    if (spec == null) {
      throw new IllegalArgumentException("staged file " + file.path() + " has unknown partition spec id "
          + file.specId());
    }
    return spec;
  }

  @Override
  public void fence(JobId jobId, long epoch) {
    runEpoch = epoch;
    if (epochCheck) {
      committer.fence(epoch);
    }
  }

  @Override
  public java.util.Optional<String> missingStaged(IcebergCommittable committable) {
    return missingStaged(table.io(), committable.manifests());
  }

  /**
   * The first file the manifests staged that {@code io} does not find (an Iceberg manifest, a data or a delete
   * file), if any.
   */
  static java.util.Optional<String> missingStaged(org.apache.iceberg.io.FileIO io, List<StagingManifest> manifests) {
    for (StagingManifest manifest : manifests) {
      List<String> paths = new ArrayList<>();
      manifest.icebergManifest().ifPresent(m -> paths.add(m.path()));
      manifest.files().forEach(f -> paths.add(f.path()));
      manifest.deleteFiles().forEach(f -> paths.add(f.path()));
      for (String path : paths) {
        if (!io.newInputFile(path).exists()) {
          return java.util.Optional.of(path);
        }
      }
    }
    return java.util.Optional.empty();
  }

  @Override
  public CommitId commitId(IcebergCommittable committable) {
    return committable.commitId();
  }

  @Override
  public void commitProperties(Map<String, String> properties) {
    committer.commitProperties(properties);
  }

  @Override
  public Map<String, String> currentProperties() throws IOException {
    try {
      return committer.currentProperties();
    } catch (RuntimeException e) {
      throw new IOException("Cannot read the properties of table " + table.name(), e);
    }
  }
}
