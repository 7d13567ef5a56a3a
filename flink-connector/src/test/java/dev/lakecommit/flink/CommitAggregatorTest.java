package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.JobId;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import java.util.List;
import java.util.Optional;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.PartitionSpec;
import org.junit.jupiter.api.Test;

/**
 * The aggregation operator gives every manifest of a checkpoint the commit's id; nothing else of the manifest may
 * change (issue 17: an upsert table written through Flink lost its delete files here).
 */
class CommitAggregatorTest {
  private static final JobId JOB = JobId.of("db.events-ingest");
  private static final PartitionSpec SPEC =
      PartitionSpec.builderFor(TestJobs.SCHEMA).identity("part").build();

  private static StagedFile deletes(long checkpointId) {
    DeleteFile file = FileMetadata.deleteFileBuilder(SPEC)
        .ofEqualityDeletes(1)
        .withPath("/wh/db/events/data/lakecommit/db.events-ingest/ckpt-" + checkpointId
            + "/part=hot/db.events-ingest-" + checkpointId + "-e1-0-0-1-deletes.parquet")
        .withFormat(FileFormat.PARQUET)
        .withPartitionPath("part=hot")
        .withFileSizeInBytes(512)
        .withRecordCount(3)
        .build();
    return StagedFile.of(file, SPEC);
  }

  @Test
  void restampingKeepsDataFilesDeleteFilesAndTheIcebergManifest() {
    StagingManifest upsert = SerializersTest.manifest(41, 1);
    StagingManifest withDeletes = new StagingManifest(JOB, 41, 1, 2, upsert.files(), Optional.empty(),
        List.of(deletes(41)));

    StagingManifest restamped = (StagingManifest) CommitAggregator.restamp(withDeletes, 47);

    assertThat(restamped.checkpointId()).isEqualTo(47);
    assertThat(restamped.deleteFiles()).as("delete files of an upsert").isEqualTo(withDeletes.deleteFiles());
    assertThat(restamped.deleteRecordCount()).isEqualTo(3);
    assertThat(restamped).usingRecursiveComparison().ignoringFields("checkpointId").isEqualTo(withDeletes);
  }

  @Test
  void aManifestOfDeletesOnlyIsRestampedToo() {
    StagingManifest deletesOnly = new StagingManifest(JOB, 41, 0, 0, List.of(), Optional.empty(),
        List.of(deletes(41)));

    StagingManifest restamped = (StagingManifest) CommitAggregator.restamp(deletesOnly, 47);

    assertThat(restamped.checkpointId()).isEqualTo(47);
    assertThat(restamped.files()).isEmpty();
    assertThat(restamped.deleteFiles()).isEqualTo(deletesOnly.deleteFiles());
  }

  @Test
  void aManifestAlreadyUnderTheCommitsIdIsKept() {
    StagingManifest manifest = SerializersTest.manifest(47, 0);
    assertThat(CommitAggregator.restamp(manifest, 47)).isSameAs(manifest);
  }
}
