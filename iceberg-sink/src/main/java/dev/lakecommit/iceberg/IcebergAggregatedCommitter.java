package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitLookup;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.exceptions.RuntimeIOException;

/** Combines writers' manifests into one {@link IcebergCommittable} per checkpoint and commits it as one snapshot. */
final class IcebergAggregatedCommitter
    implements SinkAggregatedCommitter<StagingManifest, IcebergCommittable>, SupportsCommitLookup {
  private final TableCommitter committer;
  private final Table table;

  IcebergAggregatedCommitter(TableCommitter committer, Table table) {
    this.committer = committer;
    this.table = table;
  }

  @Override
  public IcebergCommittable combine(CommitId commitId, List<StagingManifest> infos) {
    List<StagingManifest> sorted = new ArrayList<>(infos);
    sorted.sort(Comparator.comparingInt(StagingManifest::writerIndex));
    return new IcebergCommittable(commitId, sorted);
  }

  @Override
  public CommitOutcome commit(IcebergCommittable committable) {
    CheckpointChanges changes;
    try {
      changes = changes(committable);
    } catch (IllegalArgumentException e) {
      return CommitOutcome.fatal(new IllegalStateException(String.format(
          "Cannot commit %s to table %s: %s", committable.commitId(), table.name(), e.getMessage()), e));
    }
    return committer.commit(changes);
  }

  private CheckpointChanges changes(IcebergCommittable committable) {
    List<DataFile> files = new ArrayList<>();
    List<ManifestFile> manifests = new ArrayList<>();
    Map<Integer, PartitionSpec> specs = table.specs();
    for (StagingManifest manifest : committable.manifests()) {
      if (manifest.icebergManifest().isPresent()) {
        manifests.add(manifest.icebergManifest().get().manifestFile());
        continue;
      }
      for (StagedFile file : manifest.files()) {
        PartitionSpec spec = specs.get(file.specId());
        if (spec == null) {
          table.refresh();
          specs = table.specs();
          spec = specs.get(file.specId());
        }
        if (spec == null) {
          throw new IllegalArgumentException("staged file " + file.path() + " has unknown partition spec id "
              + file.specId());
        }
        files.add(file.toDataFile(spec));
      }
    }
    return new CheckpointChanges(committable.commitId(), files, manifests, committable.manifests().size(),
        committable.recordCount(), committable.totalBytes());
  }

  @Override
  public void abort(IcebergCommittable committable) {
    for (StagingManifest manifest : committable.manifests()) {
      for (StagedFile file : manifest.files()) {
        try {
          table.io().deleteFile(file.path());
        } catch (RuntimeIOException e) {
          // best effort: the orphan sweeper finds it by prefix
        }
      }
      manifest.icebergManifest().ifPresent(m -> table.io().deleteFile(m.path()));
    }
  }

  @Override
  public CommitId commitId(IcebergCommittable committable) {
    return committable.commitId();
  }

  @Override
  public OptionalLong lastCommittedCheckpoint(JobId jobId) throws IOException {
    try {
      return committer.lastCommitted(jobId);
    } catch (RuntimeException e) {
      throw new IOException("Cannot read the watermark of job " + jobId + " from table " + table.name(), e);
    }
  }
}
