package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
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
import java.util.Objects;

/**
 * The combined commit of one checkpoint: every writer's staging manifest. Persisted in the checkpoint until the
 * commit is done, so it holds references and statistics only. A coalesced commit (several pending append
 * checkpoints committed as one snapshot) covers the checkpoints {@code firstCheckpointId} to {@code commitId}'s.
 *
 * @param commitId the job and the (newest) checkpoint
 * @param manifests one manifest per writer that staged files, in checkpoint and writer order
 * @param firstCheckpointId the oldest checkpoint covered; {@code commitId}'s unless coalesced
 */
public record IcebergCommittable(CommitId commitId, List<StagingManifest> manifests, long firstCheckpointId) {

  public IcebergCommittable {
    Objects.requireNonNull(commitId, "commitId");
    manifests = List.copyOf(manifests);
    if (firstCheckpointId < 1 || firstCheckpointId > commitId.checkpointId()) {
      throw new IllegalArgumentException(String.format(
          "Invalid first checkpoint %s of %s (must be in [1, %s])", firstCheckpointId, commitId,
          commitId.checkpointId()));
    }
    for (StagingManifest manifest : manifests) {
      boolean inRange = manifest.jobId().equals(commitId.jobId()) && manifest.checkpointId() >= firstCheckpointId
          && manifest.checkpointId() <= commitId.checkpointId();
      if (!inRange) {
        throw new IllegalArgumentException(String.format(
            "Manifest of writer %s belongs to %s, not to %s%s", manifest.writerIndex(), manifest.commitId(),
            commitId, firstCheckpointId == commitId.checkpointId() ? "" : " (coalesced from " + firstCheckpointId
                + ")"));
      }
    }
  }

  /** The commit of one checkpoint. */
  public IcebergCommittable(CommitId commitId, List<StagingManifest> manifests) {
    this(commitId, manifests, commitId.checkpointId());
  }

  /** Whether this commit covers more than one checkpoint. */
  public boolean coalesced() {
    return firstCheckpointId < commitId.checkpointId();
  }

  public long recordCount() {
    return manifests.stream().mapToLong(StagingManifest::recordCount).sum();
  }

  public long totalBytes() {
    return manifests.stream().mapToLong(StagingManifest::totalBytes).sum();
  }

  public int fileCount() {
    return manifests.stream().mapToInt(m -> m.files().size() + m.deleteFiles().size()).sum();
  }

  /**
   * Version 1: job id, checkpoint id, manifest count, then each manifest with its own versioned serializer.
   * Version 2 appends the first checkpoint covered; version 1 bytes read as a commit of one checkpoint.
   */
  public static final class Serializer implements SimpleVersionedSerializer<IcebergCommittable> {
    private static final int VERSION = 2;
    private final StagingManifestSerializer manifests = new StagingManifestSerializer();

    @Override
    public int version() {
      return VERSION;
    }

    @Override
    public byte[] serialize(IcebergCommittable value) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeUTF(value.commitId().jobId().value());
        out.writeLong(value.commitId().checkpointId());
        VersionedSerialization.writeAll(manifests, value.manifests(), out);
        out.writeLong(value.firstCheckpointId());
      }
      return bytes.toByteArray();
    }

    @Override
    public IcebergCommittable deserialize(int version, byte[] serialized) throws IOException {
      if (version != 1 && version != 2) {
        throw VersionedSerialization.unknownVersion("IcebergCommittable", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        CommitId id = new CommitId(dev.lakecommit.core.JobId.of(in.readUTF()), in.readLong());
        List<StagingManifest> list = VersionedSerialization.readAll(manifests, in, "IcebergCommittable manifests");
        long first = version == 1 ? id.checkpointId() : in.readLong();
        if (in.available() > 0) {
          throw new IOException("Corrupt IcebergCommittable of " + id + ": " + in.available() + " trailing bytes");
        }
        try {
          return new IcebergCommittable(id, list, first);
        } catch (IllegalArgumentException e) {
          throw new IOException("Corrupt IcebergCommittable: " + e.getMessage(), e);
        }
      }
    }
  }
}
