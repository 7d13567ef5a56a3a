package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.testing.GoldenFiles;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/** The commit intent a Hive commit writes before its first move: round trips, and version 1's bytes stay readable. */
class CommitIntentTest {

  static CommitIntent sample() {
    return new CommitIntent(WriteMode.INSERT_OVERWRITE, 7, HiveCommittableTest.sample());
  }

  @Test
  void version1StaysReadableAndIsStillWritten() throws IOException {
    CommitIntent.Serializer serializer = new CommitIntent.Serializer();
    byte[] current = VersionedSerialization.toBytes(serializer, sample());
    byte[] stored = GoldenFiles.load(getClass(), "commit-intent-v1-staging-v3.bin", current);

    assertThat(VersionedSerialization.fromBytes(serializer, stored)).isEqualTo(sample());
    assertThat(current).isEqualTo(stored);
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
    assertThatThrownBy(() -> new CommitIntent.Serializer().deserialize(2, new byte[0]))
        .hasMessage("Unknown version 2 of CommitIntent (written by a newer Lakecommit?)");
    assertThatThrownBy(() -> new CommitIntent(WriteMode.APPEND, -1, HiveCommittableTest.sample()))
        .hasMessage("Invalid run epoch: -1 (must be >= 0)");
  }
}
