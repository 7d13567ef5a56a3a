package dev.lakecommit.flink;

import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingManifestSerializer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.List;

/**
 * The aggregation operator's state in a checkpoint.
 *
 * @param offset Lakecommit checkpoint id = offset + Flink checkpoint id (at least)
 * @param lastCommitId the last Lakecommit checkpoint id the operator gave a combined commit
 * @param lastFlinkCheckpointId the last Flink checkpoint the operator took part in
 * @param pending writers' manifests received but not yet combined (normally none: they are combined right
 *     before each checkpoint barrier)
 */
record AggregatorState(long offset, long lastCommitId, long lastFlinkCheckpointId, List<StagingManifest> pending) {

  AggregatorState {
    pending = List.copyOf(pending);
  }

  /** Version 1: offset, last commit id, last Flink checkpoint id, count, then each manifest versioned. */
  static final class Serializer implements SimpleVersionedSerializer<AggregatorState> {
    private static final int VERSION = 1;
    private final StagingManifestSerializer manifests = new StagingManifestSerializer();

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
      }
      return bytes.toByteArray();
    }

    @Override
    public AggregatorState deserialize(int version, byte[] serialized) throws IOException {
      if (version != VERSION) {
        throw VersionedSerialization.unknownVersion("Flink AggregatorState", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        long offset = in.readLong();
        long lastCommitId = in.readLong();
        long lastFlink = in.readLong();
        List<StagingManifest> pending =
            VersionedSerialization.readAll(manifests, in, "Flink AggregatorState manifests");
        if (in.available() > 0) {
          throw new IOException("Corrupt Flink AggregatorState: " + in.available() + " trailing bytes");
        }
        return new AggregatorState(offset, lastCommitId, lastFlink, pending);
      }
    }
  }
}
