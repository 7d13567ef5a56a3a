package dev.lakecommit.staging;

import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/** Serializer of {@link StagingWriterState}. Version 1: writer index (int), checkpoint id (long). */
public final class StagingWriterStateSerializer implements SimpleVersionedSerializer<StagingWriterState> {
  private static final int VERSION = 1;

  @Override
  public int version() {
    return VERSION;
  }

  @Override
  public byte[] serialize(StagingWriterState state) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(12);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(state.writerIndex());
      out.writeLong(state.checkpointId());
    }
    return bytes.toByteArray();
  }

  @Override
  public StagingWriterState deserialize(int version, byte[] serialized) throws IOException {
    switch (version) {
      case 1:
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
          StagingWriterState state = new StagingWriterState(in.readInt(), in.readLong());
          SerializationUtil.checkFullyRead(in, "staging writer state");
          return state;
        } catch (IllegalArgumentException e) {
          throw new IOException("Corrupt staging writer state: " + e.getMessage(), e);
        }
      default:
        throw VersionedSerialization.unknownVersion("StagingWriterState", version);
    }
  }
}
