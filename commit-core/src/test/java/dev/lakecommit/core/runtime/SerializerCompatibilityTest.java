package dev.lakecommit.core.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.testing.GoldenFiles;
import dev.lakecommit.core.testing.RefManifest;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Round trips, and the stored bytes of version 1 of every persisted type stay readable. */
class SerializerCompatibilityTest {
  private static final RefManifest MANIFEST =
      new RefManifest(JobId.of("job-1"), 42, 3, List.of("staging/a.rows", "staging/b.rows"), 1234);

  @Test
  void checkpointFileV1() throws IOException {
    CheckpointRecord record = CheckpointStoreTest.record(7);
    byte[] stored = GoldenFiles.load(getClass(), "checkpoint-v1.bin", CheckpointFormat.encode(record));

    assertThat(CheckpointFormat.decode("checkpoint-v1.bin", stored)).isEqualTo(record);
    assertThat(CheckpointFormat.encode(record, 1)).isEqualTo(stored);
  }

  @Test
  void checkpointFileV2() throws IOException {
    CheckpointRecord v1 = CheckpointStoreTest.record(7);
    CheckpointRecord record = new CheckpointRecord(v1.jobId(), v1.checkpointId(), v1.attempt(), v1.recordCount(),
        v1.sourcePosition(), v1.writerStates(), v1.pendingCommits(), "iceberg-table-uuid:6f1c2e0a");
    byte[] stored = GoldenFiles.load(getClass(), "checkpoint-v2.bin", CheckpointFormat.encode(record, 2));

    assertThat(CheckpointFormat.decode("checkpoint-v2.bin", stored)).isEqualTo(record);
    assertThat(CheckpointFormat.encode(record, 2)).isEqualTo(stored);
  }

  /** Version 3 adds the source's commit position of each pending checkpoint (e.g. Kafka offsets). */
  @Test
  void checkpointFileV3() throws IOException {
    CheckpointRecord v1 = CheckpointStoreTest.record(7);
    java.util.TreeMap<Long, String> positions = new java.util.TreeMap<>();
    positions.put(v1.pendingCommits().firstKey(), "events:0=120,events:1=98");
    CheckpointRecord record = new CheckpointRecord(v1.jobId(), v1.checkpointId(), v1.attempt(), v1.recordCount(),
        v1.sourcePosition(), v1.writerStates(), v1.pendingCommits(), "iceberg-table-uuid:6f1c2e0a", positions);
    byte[] stored = GoldenFiles.load(getClass(), "checkpoint-v3.bin", CheckpointFormat.encode(record));

    assertThat(CheckpointFormat.decode("checkpoint-v3.bin", stored)).isEqualTo(record);
    assertThat(CheckpointFormat.decode("checkpoint-v3.bin", stored).commitPositions()).isEqualTo(positions);
    assertThat(CheckpointFormat.encode(record)).isEqualTo(stored);
  }

  @Test
  void checkpointFileOfAnUnknownVersionIsRefusedByName() throws IOException {
    byte[] bytes = CheckpointFormat.encode(CheckpointStoreTest.record(7));
    bytes[7] = 9;
    assertThatThrownBy(() -> CheckpointFormat.decode("f.ckpt", bytes))
        .hasMessage("Corrupt checkpoint file f.ckpt: unknown checkpoint format version 9");
  }

  @Test
  void referenceManifestV1() throws IOException {
    roundTripAndCompare(RefManifest.SERIALIZER, MANIFEST, "ref-manifest-v1.bin");
  }

  @Test
  void listV1() throws IOException {
    SimpleVersionedSerializer<List<RefManifest>> lists = VersionedSerialization.listOf(RefManifest.SERIALIZER);
    roundTripAndCompare(lists, List.of(MANIFEST, MANIFEST), "list-v1.bin");
    assertThat(VersionedSerialization.fromBytes(lists, VersionedSerialization.toBytes(lists, List.of()))).isEmpty();
  }

  @Test
  void unknownVersionsAreNamed() {
    assertThatThrownBy(() -> RefManifest.SERIALIZER.deserialize(2, new byte[0]))
        .hasMessage("Unknown version 2 of RefManifest (written by a newer Lakecommit?)");
    assertThatThrownBy(() -> VersionedSerialization.listOf(RefManifest.SERIALIZER).deserialize(5, new byte[0]))
        .hasMessageContaining("Unknown version 5 of list");
  }

  @Test
  void truncatedValuesAreErrorsNotShortReads() throws IOException {
    byte[] bytes = VersionedSerialization.toBytes(RefManifest.SERIALIZER, MANIFEST);
    assertThatThrownBy(() -> VersionedSerialization.fromBytes(
        RefManifest.SERIALIZER, java.util.Arrays.copyOf(bytes, bytes.length - 3)))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("Truncated");
  }

  private static <T> void roundTripAndCompare(SimpleVersionedSerializer<T> serializer, T value, String name)
      throws IOException {
    byte[] current = VersionedSerialization.toBytes(serializer, value);
    assertThat(VersionedSerialization.fromBytes(serializer, current)).isEqualTo(value);
    byte[] stored = GoldenFiles.load(SerializerCompatibilityTest.class, name, current);
    assertThat(VersionedSerialization.fromBytes(serializer, stored)).isEqualTo(value);
    assertThat(current).as("version 1 bytes unchanged").isEqualTo(stored);
  }
}
