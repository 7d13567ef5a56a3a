package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.testing.GoldenFiles;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.PartitionSpec;
import org.junit.jupiter.api.Test;

/** The combined commit of a checkpoint round-trips, and the bytes of every version stay readable. */
class IcebergCommittableTest {
  private static final JobId JOB = JobId.of("orders-ingest");
  private static final PartitionSpec SPEC =
      PartitionSpec.builderFor(TestTables.SCHEMA).bucket("id", 4).build();

  static IcebergCommittable sample() {
    DataFile file = DataFiles.builder(SPEC)
        .withPath("s3://bucket/wh/db/events/data/lakecommit/orders-ingest/ckpt-7/id_bucket=2/orders-ingest-7-1-0-0.parquet")
        .withFormat(FileFormat.PARQUET)
        .withPartitionPath("id_bucket=2")
        .withFileSizeInBytes(4096)
        .withMetrics(new Metrics(120L, Map.of(1, 800L), Map.of(1, 120L), Map.of(1, 0L), Map.of(),
            Map.of(1, ByteBuffer.wrap(new byte[] {1, 0, 0, 0, 0, 0, 0, 0})),
            Map.of(1, ByteBuffer.wrap(new byte[] {9, 0, 0, 0, 0, 0, 0, 0}))))
        .withSplitOffsets(List.of(4L))
        .build();
    StagedFile staged = StagedFile.of(file, SPEC);
    return new IcebergCommittable(new CommitId(JOB, 7), List.of(
        new StagingManifest(JOB, 7, 0, 2, List.of(staged)),
        new StagingManifest(JOB, 7, 1, 2, List.of(staged, staged))));
  }

  @Test
  void version1BytesStayReadable() throws IOException {
    IcebergCommittable.Serializer serializer = new IcebergCommittable.Serializer();
    try (var in = getClass().getResourceAsStream("/compat/iceberg-committable-v1.bin")) {
      assertThat(in).isNotNull();
      assertThat(VersionedSerialization.fromBytes(serializer, in.readAllBytes())).isEqualTo(sample());
    }
  }

  @Test
  void version2BytesWithStagingManifestsV2StayReadable() throws IOException {
    IcebergCommittable.Serializer serializer = new IcebergCommittable.Serializer();
    try (var in = getClass().getResourceAsStream("/compat/iceberg-committable-v2.bin")) {
      assertThat(in).isNotNull();
      assertThat(VersionedSerialization.fromBytes(serializer, in.readAllBytes())).isEqualTo(sample());
    }
  }

  @Test
  void version2BytesWithStagingManifestsV3StayReadableAndAreStillWritten() throws IOException {
    IcebergCommittable.Serializer serializer = new IcebergCommittable.Serializer();
    byte[] current = VersionedSerialization.toBytes(serializer, sample());
    byte[] stored = GoldenFiles.load(getClass(), "iceberg-committable-v2-staging-v3.bin", current);

    assertThat(VersionedSerialization.fromBytes(serializer, current)).isEqualTo(sample());
    assertThat(VersionedSerialization.fromBytes(serializer, stored)).isEqualTo(sample());
    assertThat(current).isEqualTo(stored);
  }

  @Test
  void aCoalescedCommitKeepsItsRange() throws IOException {
    StagingManifest older = new StagingManifest(JOB, 5, 0, 2, sample().manifests().get(0).files());
    IcebergCommittable coalesced =
        new IcebergCommittable(new CommitId(JOB, 7), List.of(older, sample().manifests().get(1)), 5);
    IcebergCommittable.Serializer serializer = new IcebergCommittable.Serializer();

    assertThat(coalesced.coalesced()).isTrue();
    assertThat(VersionedSerialization.fromBytes(serializer, VersionedSerialization.toBytes(serializer, coalesced)))
        .isEqualTo(coalesced);
    assertThatThrownBy(() -> new IcebergCommittable(new CommitId(JOB, 7), List.of(older), 6))
        .hasMessageContaining("belongs to checkpoint 5 of job orders-ingest").hasMessageContaining("coalesced from 6");
  }

  @Test
  void countsWhatItCommits() {
    assertThat(sample().fileCount()).isEqualTo(3);
    assertThat(sample().recordCount()).isEqualTo(360);
    assertThat(sample().totalBytes()).isEqualTo(3 * 4096);
  }

  @Test
  void refusesManifestsOfAnotherCheckpointAndUnknownVersions() {
    StagingManifest other = sample().manifests().get(0);
    assertThatThrownBy(() -> new IcebergCommittable(new CommitId(JOB, 8), List.of(other)))
        .hasMessageContaining("belongs to checkpoint 7 of job orders-ingest, not to checkpoint 8");
    assertThatThrownBy(() -> new IcebergCommittable.Serializer().deserialize(3, new byte[0]))
        .hasMessageContaining("Unknown version 3 of IcebergCommittable");
  }
}
