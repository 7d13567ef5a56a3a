package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.testing.GoldenFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.junit.jupiter.api.Test;

/**
 * Every persisted format of this module: stored bytes of every version still read to the same value, and the
 * bytes of the current version are still what it writes ({@code src/test/resources/compat/}, regenerated only on
 * purpose with {@code -Dlakecommit.regenerate-compat=true}); unknown versions and corrupt bytes fail with a clear
 * message.
 */
class StagingSerializersTest {
  private static ByteBuffer bytes(int... values) {
    byte[] array = new byte[values.length];
    for (int i = 0; i < values.length; i++) {
      array[i] = (byte) values[i];
    }
    return ByteBuffer.wrap(array);
  }

  static StagedFile sampleFile(int n) {
    return new StagedFile(
        "s3://bucket/t/data/job-7/ckpt-3/flag=true/id_bucket=" + n + "/job-7-3-1-0-" + n + ".parquet",
        FileFormat.PARQUET,
        2,
        "flag=true/id_bucket=" + n,
        Arrays.asList(bytes(1), null, bytes(n, 0, 0, 0)),
        1000L + n,
        65_536L + n,
        new ColumnMetrics(
            Map.of(1, 100L, 2, 200L),
            Map.of(1, 1000L, 2, 1000L),
            Map.of(1, 0L, 2, 7L),
            Map.of(2, 3L),
            Map.of(1, bytes(0, 0, 0, 0, 0, 0, 0, 0), 2, ByteBuffer.wrap("abc".getBytes(StandardCharsets.UTF_8))),
            Map.of(1, bytes(9, 0, 0, 0, 0, 0, 0, 0), 2, ByteBuffer.wrap("xyz".getBytes(StandardCharsets.UTF_8)))),
        List.of(4L, 40_000L));
  }

  static StagingManifest sampleManifest() {
    IcebergManifest icebergManifest =
        new IcebergManifest(
            "s3://bucket/t/data/job-7/ckpt-3/job-7-3-1-0-manifest.avro",
            4321L,
            2,
            2,
            2001L,
            List.of(
                new IcebergManifest.PartitionSummary(false, false, bytes(1), bytes(1)),
                new IcebergManifest.PartitionSummary(true, null, null, null),
                new IcebergManifest.PartitionSummary(false, true, bytes(0, 0, 0, 0), bytes(1, 0, 0, 0))));
    return new StagingManifest(
        JobId.of("job-7"), 3, 1, 0, List.of(sampleFile(0), sampleFile(1)), Optional.of(icebergManifest));
  }

  /** An equality delete file on field 1 and a position delete file, as an upsert writer stages them. */
  static StagedFile sampleDeleteFile(int n, boolean equality) {
    StagedFile data = sampleFile(n);
    return new StagedFile(data.path().replace(".parquet", equality ? "-eq.parquet" : "-pos.parquet"),
        FileFormat.PARQUET, data.specId(), data.partitionPath(), data.partitionValues(), 10 + n, 2048 + n,
        data.metrics(), List.of(4L), equality ? FileContent.EQUALITY_DELETES : FileContent.POSITION_DELETES,
        equality ? List.of(1, 2) : List.of());
  }

  static StagingManifest sampleManifestWithDeletes() {
    return new StagingManifest(JobId.of("job-7"), 4, 2, 1, List.of(sampleFile(3)), Optional.empty(),
        List.of(sampleDeleteFile(3, true), sampleDeleteFile(3, false)));
  }

  /** Stored bytes of an older version: still read to the same value (the current version writes others). */
  private static <T> void assertReadable(SimpleVersionedSerializer<T> serializer, String name, T value)
      throws IOException {
    try (var in = StagingSerializersTest.class.getResourceAsStream("/compat/" + name)) {
      assertThat(in).as("stored bytes /compat/%s", name).isNotNull();
      assertThat(VersionedSerialization.fromBytes(serializer, in.readAllBytes())).isEqualTo(value);
    }
  }

  private static <T> void assertCompatible(SimpleVersionedSerializer<T> serializer, String name, T value)
      throws IOException {
    byte[] current = VersionedSerialization.toBytes(serializer, value);
    byte[] stored = GoldenFiles.load(StagingSerializersTest.class, name, current);
    assertThat(VersionedSerialization.fromBytes(serializer, stored)).isEqualTo(value);
    assertThat(current).as("version %s still writes the stored bytes of %s", serializer.version(), name)
        .isEqualTo(stored);
  }

  @Test
  void storedBytesOfVersion1StillRead() throws IOException {
    assertReadable(new StagedFileSerializer(), "staged-file-v1.bin", sampleFile(5));
    assertReadable(new StagingManifestSerializer(), "staging-manifest-v1.bin", sampleManifest());
    assertCompatible(
        new StagingWriterStateSerializer(), "staging-writer-state-v1.bin", new StagingWriterState(3, 42));
  }

  @Test
  void storedBytesOfVersion2StillReadAndAreStillWritten() throws IOException {
    assertCompatible(new StagedFileSerializer(), "staged-file-v2.bin", sampleFile(5));
    assertCompatible(new StagedFileSerializer(), "staged-file-eq-delete-v2.bin", sampleDeleteFile(5, true));
    // Manifests of version 2 (no evolved schema) still read; version 3 writes them.
    assertReadable(new StagingManifestSerializer(), "staging-manifest-v2.bin", sampleManifest());
    assertReadable(
        new StagingManifestSerializer(), "staging-manifest-deletes-v2.bin", sampleManifestWithDeletes());
  }

  @Test
  void storedBytesOfVersion3StillReadAndAreStillWritten() throws IOException {
    assertCompatible(new StagingManifestSerializer(), "staging-manifest-v3.bin", sampleManifest());
    assertCompatible(
        new StagingManifestSerializer(), "staging-manifest-evolved-schema-v3.bin", sampleManifestWithSchema());
    StagingManifest renumbered = sampleManifestWithSchema().withCheckpointId(9);
    assertThat(renumbered.checkpointId()).isEqualTo(9);
    assertThat(renumbered.evolvedSchema()).isEqualTo(sampleManifestWithSchema().evolvedSchema()).isPresent();
  }

  /** A manifest of files written with a schema that adds a column to the table's. */
  static StagingManifest sampleManifestWithSchema() {
    StagingManifest manifest = sampleManifest();
    String schema = org.apache.iceberg.SchemaParser.toJson(new org.apache.iceberg.Schema(
        org.apache.iceberg.types.Types.NestedField.required(1, "id", org.apache.iceberg.types.Types.LongType.get()),
        org.apache.iceberg.types.Types.NestedField.optional(2, "email",
            org.apache.iceberg.types.Types.StringType.get())));
    return new StagingManifest(manifest.jobId(), manifest.checkpointId(), manifest.writerIndex(),
        manifest.attempt(), manifest.files(), manifest.icebergManifest(), List.of(), Optional.of(schema));
  }

  @Test
  void deleteFilesKeepTheirKindAndStayOutOfTheDataFiles() throws IOException {
    StagingManifest manifest = sampleManifestWithDeletes();
    StagingManifestSerializer serializer = new StagingManifestSerializer();
    StagingManifest read =
        VersionedSerialization.fromBytes(serializer, VersionedSerialization.toBytes(serializer, manifest));
    assertThat(read.deleteFiles()).extracting(StagedFile::content)
        .containsExactly(FileContent.EQUALITY_DELETES, FileContent.POSITION_DELETES);
    assertThat(read.deleteFiles().get(0).equalityFieldIds()).containsExactly(1, 2);
    assertThat(read.recordCount()).isEqualTo(sampleFile(3).recordCount());
    assertThat(read.deleteRecordCount()).isEqualTo(26);
    assertThatThrownBy(() -> new StagingManifest(JobId.of("j"), 1, 0, 0, List.of(sampleDeleteFile(1, true))))
        .hasMessageContaining("delete file").hasMessageContaining("among the data files");
    assertThatThrownBy(() -> new StagedFile("p", FileFormat.PARQUET, 0, "", List.of(), 1, 1, ColumnMetrics.EMPTY,
            List.of(), FileContent.EQUALITY_DELETES, List.of()))
        .hasMessageContaining("equality field ids");
    assertThatThrownBy(() -> sampleDeleteFile(1, false).toDataFile(null))
        .hasMessageContaining("not data");
  }

  @Test
  void roundTripsWithoutOptionalParts() throws IOException {
    StagedFile unpartitioned =
        new StagedFile("/tmp/x/a.parquet", FileFormat.PARQUET, 0, "", List.of(), 0, 4, ColumnMetrics.EMPTY,
            List.of());
    StagingManifest manifest = new StagingManifest(JobId.of("j"), 1, 0, 5, List.of(unpartitioned));
    StagingManifestSerializer serializer = new StagingManifestSerializer();
    assertThat(VersionedSerialization.fromBytes(serializer, VersionedSerialization.toBytes(serializer, manifest)))
        .isEqualTo(manifest)
        .hasSameHashCodeAs(manifest);
  }

  @Test
  void unknownVersionsAreRefusedByName() {
    assertThatThrownBy(() -> new StagedFileSerializer().deserialize(3, new byte[0]))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("Unknown version 3 of StagedFile");
    assertThatThrownBy(() -> new StagingManifestSerializer().deserialize(7, new byte[0]))
        .hasMessageContaining("Unknown version 7 of StagingManifest");
    assertThatThrownBy(() -> new StagingWriterStateSerializer().deserialize(0, new byte[0]))
        .hasMessageContaining("Unknown version 0 of StagingWriterState");
  }

  @Test
  void truncatedOrPaddedBytesAreCorrupt() throws IOException {
    StagingManifestSerializer serializer = new StagingManifestSerializer();
    byte[] bytes = serializer.serialize(sampleManifest());
    assertThatThrownBy(() -> serializer.deserialize(serializer.version(), Arrays.copyOf(bytes, bytes.length - 3)))
        .isInstanceOf(IOException.class);
    assertThatThrownBy(() -> serializer.deserialize(serializer.version(), Arrays.copyOf(bytes, bytes.length + 2)))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("trailing bytes");
  }

  @Test
  void valuesAreImmutableAndCompareByContent() {
    StagedFile file = sampleFile(1);
    assertThat(file).isEqualTo(sampleFile(1)).hasSameHashCodeAs(sampleFile(1)).isNotEqualTo(sampleFile(2));
    assertThat(file.partitionValues().get(0).isReadOnly()).isTrue();
    assertThat(file.metrics().lowerBounds().get(1).isReadOnly()).isTrue();
    assertThatThrownBy(() -> file.splitOffsets().add(1L)).isInstanceOf(UnsupportedOperationException.class);
    assertThat(file.toString()).contains("partitionValues=[01, null, 01000000]").contains("lowerBounds={1=");
    assertThatThrownBy(() -> new StagingManifest(JobId.of("j"), 0, 0, 0, List.of(file)))
        .hasMessageContaining("Invalid checkpoint id: 0");
    assertThatThrownBy(() -> new StagingManifest(JobId.of("j"), 1, 0, 0, List.of()))
        .hasMessageContaining("no files");
    assertThatThrownBy(() -> new StagedFile("p", FileFormat.PARQUET, 0, "", List.of(), -1, 0, ColumnMetrics.EMPTY,
            List.of()))
        .hasMessageContaining("Invalid record count of p: -1");
  }
}
