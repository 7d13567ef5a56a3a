package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The one committer of a {@link MultiTableSink} job: combines every writer's manifests of a checkpoint by table and
 * commits them as one cut ({@link CutCommitter}), keyed by (job id, checkpoint id), while every table holds the
 * run's epoch.
 */
final class CutAggregatedCommitter implements SinkAggregatedCommitter<TableManifests, CutCommittable>,
    dev.lakecommit.core.SupportsCommitProperties {
  private final MultiTableSink<?> sink;
  private JobId jobId;
  private long epoch;
  private CutCommitter cut;
  private Map<String, String> properties = Map.of();

  CutAggregatedCommitter(MultiTableSink<?> sink) {
    this.sink = sink;
  }

  @Override
  public CutCommittable combine(CommitId commitId, List<TableManifests> commitInfos) {
    return new CutCommittable(commitId, TableManifests.byTable(commitInfos));
  }

  @Override
  public void fence(JobId job, long runEpoch) {
    this.jobId = job;
    this.epoch = runEpoch;
  }

  @Override
  public CommitId commitId(CutCommittable committable) {
    return committable.commitId();
  }

  @Override
  public CommitOutcome commit(CutCommittable committable) {
    CommitId id = committable.commitId();
    if (jobId != null && !jobId.equals(id.jobId())) {
      return CommitOutcome.fatal(new IllegalStateException("A committer of job " + jobId + " was given " + id));
    }
    if (cut == null) {
      cut = sink.cutCommitter(id.jobId());
    }
    List<TableIdentifier> tables = committable.tables().keySet().stream().map(TableNames::decode).toList();
    Map<TableIdentifier, List<DataFile>> files = new LinkedHashMap<>();
    Map<TableIdentifier, List<org.apache.iceberg.DeleteFile>> deletes = new LinkedHashMap<>();
    Map<TableIdentifier, SchemaChange> schemaChanges = new LinkedHashMap<>();
    Map<String, org.apache.iceberg.Schema> writtenSchemas = new java.util.HashMap<>();
    try {
      for (Map.Entry<String, List<StagingManifest>> entry : committable.tables().entrySet()) {
        TableIdentifier identifier = TableNames.decode(entry.getKey());
        Table table = sink.catalog().loadTable(identifier);
        List<DataFile> dataFiles = new ArrayList<>();
        List<org.apache.iceberg.DeleteFile> deleteFiles = new ArrayList<>();
        for (StagingManifest manifest : entry.getValue()) {
          for (StagedFile file : manifest.files()) {
            dataFiles.add(file.toDataFile(spec(identifier, table, file, manifest, writtenSchemas)));
          }
          for (StagedFile file : manifest.deleteFiles()) {
            deleteFiles.add(file.toDeleteFile(spec(identifier, table, file, manifest, writtenSchemas)));
          }
        }
        files.put(identifier, dataFiles);
        if (!deleteFiles.isEmpty()) {
          deletes.put(identifier, deleteFiles);
        }
        SchemaChange change = SchemaChange.ofManifests(entry.getValue());
        if (!change.isEmpty()) {
          schemaChanges.put(identifier, change);
        }
      }
    } catch (org.apache.iceberg.exceptions.NoSuchTableException e) {
      return cut.fatalUnlessHeld(id, tables, new IllegalStateException("Cannot commit " + id + " as one cut over "
          + tables + ": " + e.getMessage() + " (dropped while the job ran?)", e));
    } catch (RuntimeException e) {
      return CommitOutcome.retryable(e);
    }
    return cut.commit(id, epoch, files, deletes, schemaChanges, properties);
  }

  /** The spec a staged file was written for, bound as the writer's schema types its partition values. */
  private static PartitionSpec spec(TableIdentifier identifier, Table table, StagedFile file,
      StagingManifest manifest, Map<String, org.apache.iceberg.Schema> writtenSchemas) {
    PartitionSpec spec = table.specs().get(file.specId());
    if (spec == null) {
      throw new IllegalStateException("Table " + identifier + " has no partition spec " + file.specId()
          + " that staged file " + file.path() + " was written for");
    }
    // partition values as the writer's schema types them (a widened source column: see the one-table sink)
    return manifest.evolvedSchema().isEmpty() || spec.isUnpartitioned() ? spec
        : spec.toUnbound().bind(writtenSchemas.computeIfAbsent(manifest.evolvedSchema().get(),
            org.apache.iceberg.SchemaParser::fromJson));
  }

  /** The first staged file of the cut that is gone, in any of its tables (a restored cut is checked first). */
  @Override
  public java.util.Optional<String> missingStaged(CutCommittable committable) {
    for (Map.Entry<String, List<StagingManifest>> entry : committable.tables().entrySet()) {
      java.util.Optional<String> missing = IcebergAggregatedCommitter.missingStaged(
          sink.catalog().loadTable(TableNames.decode(entry.getKey())).io(), entry.getValue());
      if (missing.isPresent()) {
        return missing;
      }
    }
    return java.util.Optional.empty();
  }

  /** Set in every table each cut touches, in its change (the job's source position, say). */
  @Override
  public void commitProperties(Map<String, String> commitProperties) {
    this.properties = Map.copyOf(commitProperties);
  }

  /** The properties of the job's last cut, as its newest table (or its record) holds them. */
  @Override
  public Map<String, String> currentProperties() throws java.io.IOException {
    if (jobId == null) {
      return Map.of();
    }
    if (cut == null) {
      cut = sink.cutCommitter(jobId);
    }
    java.util.Collection<TableIdentifier> tables = sink.jobTables(jobId).tables().keySet();
    return cut.lastCut(jobId, tables, properties.keySet()).map(CutCommitter.Cut::properties).orElse(Map.of());
  }

  @Override
  public void close() {
    if (cut != null) {
      cut.close();
    }
  }
}
