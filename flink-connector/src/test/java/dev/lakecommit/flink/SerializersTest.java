package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.testing.GoldenFiles;
import dev.lakecommit.hive.HiveCommittable;
import dev.lakecommit.iceberg.IcebergCommittable;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingManifestSerializer;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.apache.flink.core.io.SimpleVersionedSerialization;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/** Every value the Flink sink persists (writer state, write results, combined commits) round-trips, and the bytes
 * of every earlier version stay readable. */
class SerializersTest {
  private static final JobId JOB = JobId.of("db.events-ingest");
  private static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "part", Types.StringType.get()));
  private static final String ICEBERG_IDENTITY = "iceberg-table-uuid:00000000-0000-0000-0000-000000000001";
  private static final String HIVE_IDENTITY = "hive created 1764547200 at file:/wh/lc.db/events id 7f3a";
  private static final PartitionSpec SPEC = PartitionSpec.builderFor(SCHEMA).identity("part").build();

  static StagingManifest manifest(long checkpointId, int writer) {
    DataFile file = DataFiles.builder(SPEC)
        .withPath("/wh/db/events/data/lakecommit/db.events-ingest/ckpt-" + checkpointId + "/part=hot/db.events-ingest-"
            + checkpointId + "-" + writer + "-0-0.parquet")
        .withFormat(FileFormat.PARQUET)
        .withPartitionPath("part=hot")
        .withFileSizeInBytes(2048)
        .withMetrics(new Metrics(50L, Map.of(1, 400L), Map.of(1, 50L), Map.of(1, 0L), Map.of(),
            Map.of(1, ByteBuffer.wrap(new byte[] {1, 0, 0, 0, 0, 0, 0, 0})),
            Map.of(1, ByteBuffer.wrap(new byte[] {50, 0, 0, 0, 0, 0, 0, 0}))))
        .build();
    return new StagingManifest(JOB, checkpointId, writer, 0, List.of(StagedFile.of(file, SPEC)));
  }

  private static <T> void checkGolden(SimpleVersionedSerializer<T> serializer, T value, String name)
      throws IOException {
    byte[] current = VersionedSerialization.toBytes(serializer, value);
    byte[] stored = GoldenFiles.load(SerializersTest.class, name, current);
    assertThat(VersionedSerialization.fromBytes(serializer, current)).isEqualTo(value);
    assertThat(VersionedSerialization.fromBytes(serializer, stored)).isEqualTo(value);
    assertThat(current).isEqualTo(stored);
  }

  /** Bytes stored before an embedded format (a staging manifest, a target's commit) got a new version. */
  private static <T> void checkStillReadable(SimpleVersionedSerializer<T> serializer, T value, String name)
      throws IOException {
    try (var in = SerializersTest.class.getResourceAsStream("/compat/" + name)) {
      assertThat(in).as("stored bytes /compat/%s", name).isNotNull();
      assertThat(VersionedSerialization.fromBytes(serializer, in.readAllBytes())).isEqualTo(value);
    }
  }

  @Test
  void writerStateVersion1() throws IOException {
    checkGolden(new WriterState.Serializer(), new WriterState(40, 7, new StagingWriterState(3, 47)),
        "flink-writer-state-v1.bin");
  }

  @Test
  void icebergCheckpointCommittableVersion2() throws IOException {
    CommitId id = new CommitId(JOB, 47);
    IcebergCommittable combined = new IcebergCommittable(id, List.of(manifest(47, 0), manifest(47, 1)));
    CheckpointCommittable.Serializer serializer =
        new CheckpointCommittable.Serializer(SinkRecipe.iceberg(SerializersTest::unused).committableSerializer());
    CheckpointCommittable value = new CheckpointCommittable(7, id, combined, ICEBERG_IDENTITY);
    // The envelope's v2 (with the table identity) around the current IcebergCommittable (staging manifests v3) ...
    checkGolden(serializer, value, "flink-iceberg-checkpoint-committable-v2-staging-v3.bin");
    checkStillReadable(serializer, value, "flink-iceberg-checkpoint-committable-v2.bin");
    // ... and the envelope's v1 (no identity: unknown, never compared), around the current IcebergCommittable (v2,
    // staging manifests v2) and around the versions Flink states written before hold (v1, manifests v1).
    CheckpointCommittable unknown = new CheckpointCommittable(7, id, combined, "");
    checkStillReadable(serializer, unknown, "flink-iceberg-checkpoint-committable-v1-iceberg-v2.bin");
    checkStillReadable(serializer, unknown, "flink-iceberg-checkpoint-committable-v1.bin");
    assertThat(unknown.madeForAnotherTable(ICEBERG_IDENTITY)).isFalse();
    assertThat(value.madeForAnotherTable(ICEBERG_IDENTITY)).isFalse();
    assertThat(value.madeForAnotherTable("iceberg-table-uuid:00000000-0000-0000-0000-000000000002")).isTrue();
  }

  @Test
  void hiveCheckpointCommittableVersion2() throws IOException {
    CommitId id = new CommitId(JOB, 47);
    HiveCommittable combined = new HiveCommittable(id, List.of(manifest(47, 2)));
    CheckpointCommittable.Serializer serializer =
        new CheckpointCommittable.Serializer(erase(new HiveCommittable.Serializer()));
    CheckpointCommittable value = new CheckpointCommittable(7, id, combined, HIVE_IDENTITY);
    checkGolden(serializer, value, "flink-hive-checkpoint-committable-v2-staging-v3.bin");
    checkStillReadable(serializer, value, "flink-hive-checkpoint-committable-v2.bin");
    CheckpointCommittable unknown = new CheckpointCommittable(7, id, combined, "");
    checkStillReadable(serializer, unknown, "flink-hive-checkpoint-committable-v1-staging-v2.bin");
    checkStillReadable(serializer, unknown, "flink-hive-checkpoint-committable-v1.bin");
  }

  @Test
  void aggregatorStateVersion2() throws IOException {
    AggregatorState value = new AggregatorState(40, 47, 7, List.of(manifest(48, 1)), ICEBERG_IDENTITY);
    checkGolden(new AggregatorState.Serializer(), value, "flink-aggregator-state-v2-staging-v3.bin");
    checkStillReadable(new AggregatorState.Serializer(), value, "flink-aggregator-state-v2.bin");
    AggregatorState unknown = new AggregatorState(40, 47, 7, List.of(manifest(48, 1)), "");
    checkStillReadable(new AggregatorState.Serializer(), unknown, "flink-aggregator-state-v1-staging-v2.bin");
    checkStillReadable(new AggregatorState.Serializer(), unknown, "flink-aggregator-state-v1.bin");
    assertThat(value.highestCheckpointId()).as("a pending manifest above the last commit").isEqualTo(48);
  }

  @Test
  void writeResultIsTheStagingManifestThroughFlinksEnvelope() throws IOException {
    org.apache.flink.core.io.SimpleVersionedSerializer<StagingManifest> flink =
        FlinkSerializers.of(new StagingManifestSerializer());
    byte[] bytes = SimpleVersionedSerialization.writeVersionAndSerialize(flink, manifest(9, 1));
    assertThat(SimpleVersionedSerialization.readVersionAndDeSerialize(flink, bytes)).isEqualTo(manifest(9, 1));
    assertThat(flink.getVersion()).isEqualTo(new StagingManifestSerializer().version());
  }

  @Test
  void unknownVersionsAreRefusedByName() {
    assertThatThrownBy(() -> new WriterState.Serializer().deserialize(99, new byte[0]))
        .hasMessageContaining("Unknown version 99 of Flink WriterState");
    assertThatThrownBy(() -> new AggregatorState.Serializer().deserialize(3, new byte[0]))
        .hasMessageContaining("Unknown version 3 of Flink AggregatorState");
    assertThatThrownBy(() -> new CheckpointCommittable.Serializer(erase(new HiveCommittable.Serializer()))
        .deserialize(3, new byte[0])).hasMessageContaining("Unknown version 3 of Flink CheckpointCommittable");
  }

  @Test
  void truncatedBytesAreRefused() throws IOException {
    byte[] bytes = new WriterState.Serializer().serialize(new WriterState(1, 2, new StagingWriterState(0, 3)));
    byte[] cut = java.util.Arrays.copyOf(bytes, bytes.length - 3);
    assertThatThrownBy(() -> new WriterState.Serializer().deserialize(1, cut)).isInstanceOf(IOException.class);
  }

  private static dev.lakecommit.iceberg.IcebergSinkConfig unused() {
    return dev.lakecommit.iceberg.IcebergSinkConfig.builder().catalogProperty("type", "hadoop")
        .table("db.events").build();
  }

  @SuppressWarnings("unchecked")
  private static SimpleVersionedSerializer<Object> erase(SimpleVersionedSerializer<?> serializer) {
    return (SimpleVersionedSerializer<Object>) serializer;
  }
}
