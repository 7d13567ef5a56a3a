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
 * manifest (a presence flag, then Iceberg's encoding of the manifest description).
 */
public final class StagingManifestSerializer implements SimpleVersionedSerializer<StagingManifest> {
  private static final int VERSION = 1;

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
        SerializationUtil.writeBytes(out, manifest.icebergManifest().get().encoded());
      }
    }
    return bytes.toByteArray();
  }

  @Override
  public StagingManifest deserialize(int version, byte[] serialized) throws IOException {
    switch (version) {
      case 1:
        return deserializeV1(serialized);
      default:
        throw VersionedSerialization.unknownVersion("StagingManifest", version);
    }
  }

  private StagingManifest deserializeV1(byte[] serialized) throws IOException {
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
          in.readBoolean()
              ? Optional.of(IcebergManifest.fromEncoded(VersionedSerialization.readBytes(in)))
              : Optional.empty();
      SerializationUtil.checkFullyRead(in, "staging manifest");
      try {
        return new StagingManifest(JobId.of(job), checkpointId, writerIndex, attempt, files, icebergManifest);
      } catch (IllegalArgumentException e) {
        throw new IOException("Corrupt staging manifest: " + e.getMessage(), e);
      }
    }
  }
}
