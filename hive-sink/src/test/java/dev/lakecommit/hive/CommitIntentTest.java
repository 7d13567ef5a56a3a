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
    byte[] stored = GoldenFiles.load(getClass(), "commit-intent-v1.bin", current);

    assertThat(VersionedSerialization.fromBytes(serializer, stored)).isEqualTo(sample());
    assertThat(current).isEqualTo(stored);
  }

  @Test
  void unknownVersionsAndNegativeEpochsAreRefused() {
    assertThatThrownBy(() -> new CommitIntent.Serializer().deserialize(2, new byte[0]))
        .hasMessage("Unknown version 2 of CommitIntent (written by a newer Lakecommit?)");
    assertThatThrownBy(() -> new CommitIntent(WriteMode.APPEND, -1, HiveCommittableTest.sample()))
        .hasMessage("Invalid run epoch: -1 (must be >= 0)");
  }
}
