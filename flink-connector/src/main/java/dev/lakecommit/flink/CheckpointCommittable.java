package dev.lakecommit.flink;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Objects;

/**
 * The one combined commit of a checkpoint, as it travels from the aggregation operator to the committer and
 * rests in the committer's state until committed. Flink's commit requests carry no checkpoint id, so the
 * Lakecommit commit id travels inside.
 *
 * @param flinkCheckpointId the Flink checkpoint whose completion releases the commit
 * @param commitId the job and the Lakecommit checkpoint id the target records
 * @param committable the target's combined commit (an {@code IcebergCommittable} or a {@code HiveCommittable})
 */
record CheckpointCommittable(long flinkCheckpointId, CommitId commitId, Object committable) {

  CheckpointCommittable {
    Objects.requireNonNull(commitId, "commitId");
    Objects.requireNonNull(committable, "committable");
  }

  @Override
  public String toString() {
    return commitId + " (Flink checkpoint " + flinkCheckpointId + ")";
  }

  /** Version 1: Flink checkpoint id, job id, Lakecommit checkpoint id, then the target's committable. */
  static final class Serializer implements SimpleVersionedSerializer<CheckpointCommittable> {
    private static final int VERSION = 1;
    private final SimpleVersionedSerializer<Object> target;

    Serializer(SimpleVersionedSerializer<Object> target) {
      this.target = Objects.requireNonNull(target, "target");
    }

    @Override
    public int version() {
      return VERSION;
    }

    @Override
    public byte[] serialize(CheckpointCommittable value) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeLong(value.flinkCheckpointId());
        out.writeUTF(value.commitId().jobId().value());
        out.writeLong(value.commitId().checkpointId());
        VersionedSerialization.write(target, value.committable(), out);
      }
      return bytes.toByteArray();
    }

    @Override
    public CheckpointCommittable deserialize(int version, byte[] serialized) throws IOException {
      if (version != VERSION) {
        throw VersionedSerialization.unknownVersion("Flink CheckpointCommittable", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        long flinkCheckpointId = in.readLong();
        CommitId id = new CommitId(JobId.of(in.readUTF()), in.readLong());
        Object committable = VersionedSerialization.read(target, in);
        if (in.available() > 0) {
          throw new IOException("Corrupt Flink CheckpointCommittable: " + in.available() + " trailing bytes");
        }
        return new CheckpointCommittable(flinkCheckpointId, id, committable);
      } catch (IllegalArgumentException e) {
        throw new IOException("Corrupt Flink CheckpointCommittable: " + e.getMessage(), e);
      }
    }
  }
}
