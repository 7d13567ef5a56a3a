package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.testing.GoldenFiles;
import dev.lakecommit.staging.ColumnMetrics;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.iceberg.FileFormat;
import org.junit.jupiter.api.Test;

/** The combined commit persisted in checkpoints: round trips, and version 1's stored bytes stay readable. */
class HiveCommittableTest {
  private static final JobId JOB = JobId.of("job-1");

  static HiveCommittable sample() {
    StagedFile a = new StagedFile("file:/t/.lakecommit-staging/job-1/ckpt-3/cat=a%2Fb/job-1-3-0-0-0.parquet",
        FileFormat.PARQUET, 0, "cat=a%2Fb", List.of(ByteBuffer.wrap("a/b".getBytes(StandardCharsets.UTF_8))),
        10, 1234, ColumnMetrics.EMPTY, List.of(4L));
    StagedFile b = new StagedFile("file:/t/.lakecommit-staging/job-1/ckpt-3/cat=null/job-1-3-1-0-0.parquet",
        FileFormat.PARQUET, 0, "cat=null", java.util.Arrays.asList((ByteBuffer) null), 5, 987,
        ColumnMetrics.EMPTY, List.of());
    return new HiveCommittable(new CommitId(JOB, 3),
        List.of(new StagingManifest(JOB, 3, 0, 2, List.of(a)), new StagingManifest(JOB, 3, 1, 2, List.of(b))));
  }

  @Test
  void version1StaysReadable() throws IOException {
    // Stored with StagingManifest/StagedFile serializers v1: still read to the same value.
    try (var in = getClass().getResourceAsStream("/compat/hive-committable-v1.bin")) {
      assertThat(VersionedSerialization.fromBytes(new HiveCommittable.Serializer(), in.readAllBytes()))
          .isEqualTo(sample());
    }
  }

  @Test
  void version1WithStagingV2StaysReadable() throws IOException {
    try (var in = getClass().getResourceAsStream("/compat/hive-committable-v1-staging-v2.bin")) {
      assertThat(VersionedSerialization.fromBytes(new HiveCommittable.Serializer(), in.readAllBytes()))
          .isEqualTo(sample());
    }
  }

  @Test
  void version1WithStagingV3StaysReadableAndIsStillWritten() throws IOException {
    HiveCommittable.Serializer serializer = new HiveCommittable.Serializer();
    byte[] current = VersionedSerialization.toBytes(serializer, sample());
    byte[] stored = GoldenFiles.load(getClass(), "hive-committable-v1-staging-v3.bin", current);

    assertThat(VersionedSerialization.fromBytes(serializer, stored)).isEqualTo(sample());
    assertThat(current).isEqualTo(stored);
  }

  @Test
  void unknownVersionsAndMismatchedManifestsAreRefused() {
    assertThatThrownBy(() -> new HiveCommittable.Serializer().deserialize(2, new byte[0]))
        .hasMessage("Unknown version 2 of HiveCommittable (written by a newer Lakecommit?)");
    assertThatThrownBy(() -> new HiveCommittable(new CommitId(JOB, 4), sample().manifests()))
        .hasMessage("Manifest of writer 0 belongs to checkpoint 3 of job job-1, not to checkpoint 4 of job job-1");
  }

  @Test
  void countsFilesRowsAndBytes() {
    HiveCommittable committable = sample();
    assertThat(committable.fileCount()).isEqualTo(2);
    assertThat(committable.recordCount()).isEqualTo(15);
    assertThat(committable.totalBytes()).isEqualTo(2221);
  }
}
