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
 * @param tableIdentity the identity of the table the commit was made for ({@code CommitTarget.identity()}, for
 *     example the Iceberg table UUID), or empty if unknown (a commit stored by serializer version 1): a commit is
 *     never applied to a table of another identity (one dropped and created again under the same name)
 */
record CheckpointCommittable(long flinkCheckpointId, CommitId commitId, Object committable, String tableIdentity) {

  CheckpointCommittable {
    Objects.requireNonNull(commitId, "commitId");
    Objects.requireNonNull(committable, "committable");
    Objects.requireNonNull(tableIdentity, "tableIdentity");
  }

  /** Whether the commit was made for a table of another identity than {@code current} (unknown ones are not). */
  boolean madeForAnotherTable(String current) {
    return !tableIdentity.isEmpty() && !current.isEmpty() && !tableIdentity.equals(current);
  }

  @Override
  public String toString() {
    return commitId + " (Flink checkpoint " + flinkCheckpointId + ")";
  }

  /**
   * Version 2: Flink checkpoint id, job id, Lakecommit checkpoint id, table identity, then the target's
   * committable. Version 1 (written before the identity was recorded) lacks the identity: read as unknown.
   */
  static final class Serializer implements SimpleVersionedSerializer<CheckpointCommittable> {
    private static final int VERSION = 2;
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
        out.writeUTF(value.tableIdentity());
        VersionedSerialization.write(target, value.committable(), out);
      }
      return bytes.toByteArray();
    }

    @Override
    public CheckpointCommittable deserialize(int version, byte[] serialized) throws IOException {
      if (version != 1 && version != VERSION) {
        throw VersionedSerialization.unknownVersion("Flink CheckpointCommittable", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        long flinkCheckpointId = in.readLong();
        CommitId id = new CommitId(JobId.of(in.readUTF()), in.readLong());
        String identity = version == 1 ? "" : in.readUTF();
        Object committable = VersionedSerialization.read(target, in);
        if (in.available() > 0) {
          throw new IOException("Corrupt Flink CheckpointCommittable: " + in.available() + " trailing bytes");
        }
        return new CheckpointCommittable(flinkCheckpointId, id, committable, identity);
      } catch (IllegalArgumentException e) {
        throw new IOException("Corrupt Flink CheckpointCommittable: " + e.getMessage(), e);
      }
    }
  }
}
