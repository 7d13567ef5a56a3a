package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.testing.GoldenFiles;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The commit intent a Hive commit writes before its first move: round trips, and the bytes of versions 1 and 2 stay
 * readable.
 */
class CommitIntentTest {

  static CommitIntent sample() {
    return new CommitIntent(WriteMode.INSERT_OVERWRITE, 7, HiveCommittableTest.sample());
  }

  /** An intent of a commit whose staged files are pending S3 uploads. */
  static CommitIntent withUploads() {
    return new CommitIntent(WriteMode.APPEND, 3, HiveCommittableTest.sample(), List.of(
        new PendingUploads.Upload("s3a://b/t/__magic_job-lakecommit/j/ckpt-1/__base/p=1/j-1-e3-0-0-0.parquet",
            "s3a://b/t/p=1/j-1-e3-0-0-0.parquet", "upload-1", 12_345_678L, List.of("etag-1", "etag-2")),
        new PendingUploads.Upload("s3a://b/t/__magic_job-lakecommit/j/ckpt-1/__base/p=2/j-1-e3-0-0-1.parquet",
            "s3a://b/t/p=2/j-1-e3-0-0-1.parquet", "upload-2", 0L, List.of())));
  }

  @Test
  void version2StaysReadableAndIsStillWritten() throws IOException {
    CommitIntent.Serializer serializer = new CommitIntent.Serializer();
    byte[] current = VersionedSerialization.toBytes(serializer, withUploads());
    byte[] stored = GoldenFiles.load(getClass(), "commit-intent-v2.bin", current);

    assertThat(VersionedSerialization.fromBytes(serializer, stored)).isEqualTo(withUploads());
    assertThat(current).isEqualTo(stored);
    assertThat(VersionedSerialization.fromBytes(serializer, VersionedSerialization.toBytes(serializer, sample())))
        .isEqualTo(sample());
  }

  @Test
  void version1StaysReadable() throws IOException {
    byte[] stored;
    try (java.io.InputStream in = getClass().getResourceAsStream("/compat/commit-intent-v1-staging-v3.bin")) {
      assertThat(in).as("stored bytes /compat/commit-intent-v1-staging-v3.bin").isNotNull();
      stored = in.readAllBytes();
    }
    assertThat(VersionedSerialization.fromBytes(new CommitIntent.Serializer(), stored)).isEqualTo(sample());
  }

  /** An intent written before staging manifests carried their schema (manifests of version 2 inside). */
  @Test
  void version1WithVersion2ManifestsStaysReadable() throws IOException {
    byte[] stored;
    try (java.io.InputStream in = getClass().getResourceAsStream("/compat/commit-intent-v1.bin")) {
      assertThat(in).as("stored bytes /compat/commit-intent-v1.bin").isNotNull();
      stored = in.readAllBytes();
    }
    assertThat(VersionedSerialization.fromBytes(new CommitIntent.Serializer(), stored)).isEqualTo(sample());
  }

  @Test
  void unknownVersionsAndNegativeEpochsAreRefused() {
    assertThatThrownBy(() -> new CommitIntent.Serializer().deserialize(3, new byte[0]))
        .hasMessage("Unknown version 3 of CommitIntent (written by a newer Lakecommit?)");
    assertThatThrownBy(() -> new CommitIntent(WriteMode.APPEND, -1, HiveCommittableTest.sample()))
        .hasMessage("Invalid run epoch: -1 (must be >= 0)");
  }
}
