package dev.lakecommit.staging;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Serializer of {@link StagingManifest}. Version 1: job id, checkpoint id, writer index, attempt, the files
 * (count, then each with its own serializer's version, see {@link StagedFileSerializer}), and the Iceberg
 * manifest: a presence flag, then path, length, spec id, added files and rows, and the partition summaries
 * (count, then each: contains-null, contains-NaN as -1 unknown / 0 / 1, lower and upper bound or -1 for null).
 * Version 2 appends the delete files (count, then each with its serializer's version); version 1 bytes read as a
 * manifest without delete files. Version 3 appends the evolved schema: a presence flag, then the schema JSON;
 * version 1 and 2 bytes read as files written with the table's schema.
 */
public final class StagingManifestSerializer implements SimpleVersionedSerializer<StagingManifest> {
  private static final int VERSION = 3;

  private final StagedFileSerializer fileSerializer = new StagedFileSerializer();

  @Override
  public int version() {
    return VERSION;
  }

  @Override
  public byte[] serialize(StagingManifest manifest) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(512 * (manifest.files().size() + 1));
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      SerializationUtil.writeString(out, manifest.jobId().value());
      out.writeLong(manifest.checkpointId());
      out.writeInt(manifest.writerIndex());
      out.writeInt(manifest.attempt());
      out.writeInt(manifest.files().size());
      for (StagedFile file : manifest.files()) {
        VersionedSerialization.write(fileSerializer, file, out);
      }
      out.writeBoolean(manifest.icebergManifest().isPresent());
      if (manifest.icebergManifest().isPresent()) {
        writeIcebergManifest(out, manifest.icebergManifest().get());
      }
      out.writeInt(manifest.deleteFiles().size());
      for (StagedFile file : manifest.deleteFiles()) {
        VersionedSerialization.write(fileSerializer, file, out);
      }
      out.writeBoolean(manifest.evolvedSchema().isPresent());
      if (manifest.evolvedSchema().isPresent()) {
        SerializationUtil.writeString(out, manifest.evolvedSchema().get());
      }
    }
    return bytes.toByteArray();
  }

  @Override
  public StagingManifest deserialize(int version, byte[] serialized) throws IOException {
    switch (version) {
      case 1:
        return deserialize(serialized, false, false);
      case 2:
        return deserialize(serialized, true, false);
      case 3:
        return deserialize(serialized, true, true);
      default:
        throw VersionedSerialization.unknownVersion("StagingManifest", version);
    }
  }

  private StagingManifest deserialize(byte[] serialized, boolean withDeletes, boolean withSchema)
      throws IOException {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
      String job = SerializationUtil.readString(in);
      long checkpointId = in.readLong();
      int writerIndex = in.readInt();
      int attempt = in.readInt();
      int count = SerializationUtil.readSize(in);
      List<StagedFile> files = new ArrayList<>(Math.min(count, 1024));
      for (int i = 0; i < count; i++) {
        files.add(VersionedSerialization.read(fileSerializer, in));
      }
      Optional<IcebergManifest> icebergManifest =
          in.readBoolean() ? Optional.of(readIcebergManifest(in)) : Optional.empty();
      List<StagedFile> deleteFiles = new ArrayList<>();
      if (withDeletes) {
        int deletes = SerializationUtil.readSize(in);
        for (int i = 0; i < deletes; i++) {
          deleteFiles.add(VersionedSerialization.read(fileSerializer, in));
        }
      }
      Optional<String> evolvedSchema =
          withSchema && in.readBoolean() ? Optional.of(SerializationUtil.readString(in)) : Optional.empty();
      SerializationUtil.checkFullyRead(in, "staging manifest");
      try {
        return new StagingManifest(
            JobId.of(job), checkpointId, writerIndex, attempt, files, icebergManifest, deleteFiles, evolvedSchema);
      } catch (IllegalArgumentException e) {
        throw new IOException("Corrupt staging manifest: " + e.getMessage(), e);
      }
    }
  }

  private static void writeIcebergManifest(DataOutputStream out, IcebergManifest manifest) throws IOException {
    SerializationUtil.writeString(out, manifest.path());
    out.writeLong(manifest.length());
    out.writeInt(manifest.specId());
    out.writeInt(manifest.addedFilesCount());
    out.writeLong(manifest.addedRowsCount());
    out.writeInt(manifest.partitions().size());
    for (IcebergManifest.PartitionSummary summary : manifest.partitions()) {
      out.writeBoolean(summary.containsNull());
      out.writeByte(summary.containsNaN() == null ? -1 : summary.containsNaN() ? 1 : 0);
      SerializationUtil.writeNullableBuffer(out, summary.lowerBound());
      SerializationUtil.writeNullableBuffer(out, summary.upperBound());
    }
  }

  private static IcebergManifest readIcebergManifest(DataInputStream in) throws IOException {
    String path = SerializationUtil.readString(in);
    long length = in.readLong();
    int specId = in.readInt();
    int files = in.readInt();
    long rows = in.readLong();
    int count = SerializationUtil.readSize(in);
    List<IcebergManifest.PartitionSummary> partitions = new ArrayList<>(Math.min(count, 64));
    for (int i = 0; i < count; i++) {
      boolean containsNull = in.readBoolean();
      byte nan = in.readByte();
      if (nan < -1 || nan > 1) {
        throw new IOException("Corrupt staging manifest: contains-NaN flag " + nan + " of manifest " + path);
      }
      partitions.add(
          new IcebergManifest.PartitionSummary(
              containsNull,
              nan == -1 ? null : nan == 1,
              SerializationUtil.readNullableBuffer(in),
              SerializationUtil.readNullableBuffer(in)));
    }
    try {
      return new IcebergManifest(path, length, specId, files, rows, partitions);
    } catch (IllegalArgumentException e) {
      throw new IOException("Corrupt staging manifest: " + e.getMessage(), e);
    }
  }
}
