package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import java.util.List;
import java.util.Objects;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.ManifestFile;

/**
 * Everything one checkpoint adds to a table: data files to add one by one, and manifests (written by the writers
 * or the committer) to append whole.
 *
 * @param commitId the job and checkpoint
 * @param dataFiles files to add one by one
 * @param manifests manifests to append as they are (snapshot id unassigned)
 * @param writers how many writers contributed
 * @param records rows added
 * @param bytes bytes added
 */
record CheckpointChanges(
    CommitId commitId, List<DataFile> dataFiles, List<ManifestFile> manifests, int writers, long records,
    long bytes) {

  CheckpointChanges {
    Objects.requireNonNull(commitId, "commitId");
    dataFiles = List.copyOf(dataFiles);
    manifests = List.copyOf(manifests);
  }

  int fileCount() {
    int count = dataFiles.size();
    for (ManifestFile manifest : manifests) {
      Integer added = manifest.addedFilesCount();
      count += added == null ? 0 : added;
    }
    return count;
  }
}
