package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingManifestSerializer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.List;
import java.util.Objects;
import java.util.stream.Stream;

/**
 * The combined commit of one checkpoint of a Hive table: every writer's staging manifest. Persisted in the
 * checkpoint until the commit is done, so it holds references and statistics only.
 *
 * @param commitId the job and checkpoint
 * @param manifests one manifest per writer that staged files, in writer order
 */
public record HiveCommittable(CommitId commitId, List<StagingManifest> manifests) {

  public HiveCommittable {
    Objects.requireNonNull(commitId, "commitId");
    manifests = List.copyOf(manifests);
    for (StagingManifest manifest : manifests) {
      if (!manifest.commitId().equals(commitId)) {
        throw new IllegalArgumentException(String.format(
            "Manifest of writer %s belongs to %s, not to %s", manifest.writerIndex(), manifest.commitId(),
            commitId));
      }
    }
  }

  /** Every staged file of the checkpoint, writer by writer. */
  public Stream<StagedFile> files() {
    return manifests.stream().flatMap(manifest -> manifest.files().stream());
  }

  public long recordCount() {
    return manifests.stream().mapToLong(StagingManifest::recordCount).sum();
  }

  public long totalBytes() {
    return manifests.stream().mapToLong(StagingManifest::totalBytes).sum();
  }

  public int fileCount() {
    return manifests.stream().mapToInt(m -> m.files().size()).sum();
  }

  /** Version 1: job id, checkpoint id, manifest count, then each manifest with its own versioned serializer. */
  public static final class Serializer implements SimpleVersionedSerializer<HiveCommittable> {
    private static final int VERSION = 1;
    private final StagingManifestSerializer manifests = new StagingManifestSerializer();

    @Override
    public int version() {
      return VERSION;
    }

    @Override
    public byte[] serialize(HiveCommittable value) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeUTF(value.commitId().jobId().value());
        out.writeLong(value.commitId().checkpointId());
        VersionedSerialization.writeAll(manifests, value.manifests(), out);
      }
      return bytes.toByteArray();
    }

    @Override
    public HiveCommittable deserialize(int version, byte[] serialized) throws IOException {
      if (version != VERSION) {
        throw VersionedSerialization.unknownVersion("HiveCommittable", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        CommitId id = new CommitId(JobId.of(in.readUTF()), in.readLong());
        List<StagingManifest> list = VersionedSerialization.readAll(manifests, in, "HiveCommittable manifests");
        if (in.available() > 0) {
          throw new IOException("Corrupt HiveCommittable: " + in.available() + " trailing bytes");
        }
        return new HiveCommittable(id, list);
      }
    }
  }
}
