package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import java.util.List;
import java.util.Objects;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.ManifestFile;

/**
 * Everything one commit adds to a table: data files to add one by one, manifests (written by the writers or the
 * committer) to append whole, and delete files (upserts). Usually one checkpoint; a coalesced commit covers
 * several pending append checkpoints and carries the newest one's id.
 *
 * @param commitId the job and the (newest) checkpoint
 * @param checkpoints the checkpoints covered, ascending; the last is {@code commitId}'s
 * @param dataFiles files to add one by one
 * @param deleteFiles delete files of a row delta
 * @param manifests manifests to append as they are (snapshot id unassigned)
 * @param writers how many writer manifests contributed
 * @param records rows added
 * @param bytes bytes added
 * @param schemaChange the schema evolution the files need, applied in the same transaction
 */
record CheckpointChanges(
    CommitId commitId, List<Long> checkpoints, List<DataFile> dataFiles, List<DeleteFile> deleteFiles,
    List<ManifestFile> manifests, int writers, long records, long bytes, SchemaChange schemaChange) {

  CheckpointChanges {
    Objects.requireNonNull(commitId, "commitId");
    checkpoints = List.copyOf(checkpoints);
    if (checkpoints.isEmpty() || checkpoints.get(checkpoints.size() - 1) != commitId.checkpointId()) {
      throw new IllegalArgumentException("Covered checkpoints " + checkpoints + " must end with " + commitId);
    }
    dataFiles = List.copyOf(dataFiles);
    deleteFiles = List.copyOf(deleteFiles);
    manifests = List.copyOf(manifests);
    Objects.requireNonNull(schemaChange, "schemaChange");
  }

  /** Changes whose files were written with the table's schema. */
  CheckpointChanges(CommitId commitId, List<Long> checkpoints, List<DataFile> dataFiles,
      List<DeleteFile> deleteFiles, List<ManifestFile> manifests, int writers, long records, long bytes) {
    this(commitId, checkpoints, dataFiles, deleteFiles, manifests, writers, records, bytes, SchemaChange.NONE);
  }

  /** The changes of one checkpoint without delete files. */
  CheckpointChanges(CommitId commitId, List<DataFile> dataFiles, List<ManifestFile> manifests, int writers,
      long records, long bytes) {
    this(commitId, List.of(commitId.checkpointId()), dataFiles, List.of(), manifests, writers, records, bytes);
  }

  /** The oldest checkpoint covered. */
  long firstCheckpointId() {
    return checkpoints.get(0);
  }

  boolean coalesced() {
    return checkpoints.size() > 1;
  }

  int fileCount() {
    int count = dataFiles.size() + deleteFiles.size();
    for (ManifestFile manifest : manifests) {
      Integer added = manifest.addedFilesCount();
      count += added == null ? 0 : added;
    }
    return count;
  }
}
