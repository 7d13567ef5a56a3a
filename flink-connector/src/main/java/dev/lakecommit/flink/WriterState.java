package dev.lakecommit.flink;

import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.staging.StagingWriterState;
import dev.lakecommit.staging.StagingWriterStateSerializer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/**
 * What a Flink writer keeps in a checkpoint: references only, never data (every staged file is closed and reported
 * at each checkpoint).
 *
 * @param offset the job's checkpoint-id offset: Lakecommit checkpoint id = offset + Flink checkpoint id (the
 *     watermark the target held for the job when this lineage of Flink checkpoints began)
 * @param flinkCheckpointId the Flink checkpoint this state belongs to
 * @param staging the staging writer's own state (its last prepared Lakecommit checkpoint id)
 */
record WriterState(long offset, long flinkCheckpointId, StagingWriterState staging) {

  WriterState {
    if (offset < 0 || flinkCheckpointId < 0) {
      throw new IllegalArgumentException(String.format(
          "Invalid writer state: offset %s, Flink checkpoint %s (both must be >= 0)", offset, flinkCheckpointId));
    }
  }

  /** Version 1: offset, Flink checkpoint id, then the staging writer state with its own version. */
  static final class Serializer implements SimpleVersionedSerializer<WriterState> {
    private static final int VERSION = 1;
    private final StagingWriterStateSerializer staging = new StagingWriterStateSerializer();

    @Override
    public int version() {
      return VERSION;
    }

    @Override
    public byte[] serialize(WriterState value) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeLong(value.offset());
        out.writeLong(value.flinkCheckpointId());
        VersionedSerialization.write(staging, value.staging(), out);
      }
      return bytes.toByteArray();
    }

    @Override
    public WriterState deserialize(int version, byte[] serialized) throws IOException {
      if (version != VERSION) {
        throw VersionedSerialization.unknownVersion("Flink WriterState", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        long offset = in.readLong();
        long flinkCheckpointId = in.readLong();
        StagingWriterState state = VersionedSerialization.read(staging, in);
        if (in.available() > 0) {
          throw new IOException("Corrupt Flink WriterState: " + in.available() + " trailing bytes");
        }
        return new WriterState(offset, flinkCheckpointId, state);
      } catch (IllegalArgumentException e) {
        throw new IOException("Corrupt Flink WriterState: " + e.getMessage(), e);
      }
    }
  }
}
