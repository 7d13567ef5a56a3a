package dev.lakecommit.flink;

import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.staging.WriterManifest;
import dev.lakecommit.staging.StagingManifestSerializer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.List;
import java.util.Objects;

/**
 * The aggregation operator's state in a checkpoint.
 *
 * @param offset Lakecommit checkpoint id = offset + Flink checkpoint id (at least)
 * @param lastCommitId the last Lakecommit checkpoint id the operator gave a combined commit
 * @param lastFlinkCheckpointId the last Flink checkpoint the operator took part in
 * @param pending writers' manifests received but not yet combined (normally none: they are combined right
 *     before each checkpoint barrier)
 * @param tableIdentity the identity of the table the state was taken against ({@code CommitTarget.identity()}),
 *     empty if unknown (state stored by serializer version 1)
 */
record AggregatorState(long offset, long lastCommitId, long lastFlinkCheckpointId,
    List<WriterManifest> pending,
    String tableIdentity) {

  AggregatorState {
    pending = List.copyOf(pending);
    Objects.requireNonNull(tableIdentity, "tableIdentity");
  }

  /** The highest Lakecommit checkpoint id the state refers to: its last commit or a pending manifest's. */
  long highestCheckpointId() {
    long highest = lastCommitId;
    for (WriterManifest manifest : pending) {
      highest = Math.max(highest, manifest.checkpointId());
    }
    return highest;
  }

  /**
   * Version 2: offset, last commit id, last Flink checkpoint id, count, each manifest versioned, then the table
   * identity. Version 1 lacks the identity: read as unknown.
   */
  static final class Serializer implements SimpleVersionedSerializer<AggregatorState> {
    private static final int VERSION = 2;
    private final SimpleVersionedSerializer<WriterManifest> manifests;

    /** For the state of a sink of one table (its writers report {@code StagingManifest}s). */
    Serializer() {
      this(FlinkSerializers.erase(new StagingManifestSerializer()));
    }

    /** For the state of a sink whose writers report what {@code manifests} reads. */
    Serializer(SimpleVersionedSerializer<WriterManifest> manifests) {
      this.manifests = manifests;
    }

    @Override
    public int version() {
      return VERSION;
    }

    @Override
    public byte[] serialize(AggregatorState value) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeLong(value.offset());
        out.writeLong(value.lastCommitId());
        out.writeLong(value.lastFlinkCheckpointId());
        VersionedSerialization.writeAll(manifests, value.pending(), out);
        out.writeUTF(value.tableIdentity());
      }
      return bytes.toByteArray();
    }

    @Override
    public AggregatorState deserialize(int version, byte[] serialized) throws IOException {
      if (version != 1 && version != VERSION) {
        throw VersionedSerialization.unknownVersion("Flink AggregatorState", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        long offset = in.readLong();
        long lastCommitId = in.readLong();
        long lastFlink = in.readLong();
        List<WriterManifest> pending =
            VersionedSerialization.readAll(manifests, in, "Flink AggregatorState manifests");
        String identity = version == 1 ? "" : in.readUTF();
        if (in.available() > 0) {
          throw new IOException("Corrupt Flink AggregatorState: " + in.available() + " trailing bytes");
        }
        return new AggregatorState(offset, lastCommitId, lastFlink, pending, identity);
      }
    }
  }
}
