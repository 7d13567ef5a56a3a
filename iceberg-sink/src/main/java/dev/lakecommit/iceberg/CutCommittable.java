package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingManifestSerializer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * One checkpoint of a {@link MultiTableSink}: every writer's manifests of it, by table. Committed as one cut
 * ({@link CutCommitter}), persisted with the checkpoint until then.
 *
 * @param tables each table's manifests, at least one table
 */
public record CutCommittable(CommitId commitId, SortedMap<String, List<StagingManifest>> tables) {

  public CutCommittable {
    if (tables.isEmpty()) {
      throw new IllegalArgumentException("A cut of " + commitId + " needs at least one table");
    }
    SortedMap<String, List<StagingManifest>> copy = new TreeMap<>();
    tables.forEach((table, manifests) -> copy.put(table, List.copyOf(manifests)));
    tables = Collections.unmodifiableSortedMap(copy);
  }

  /** Rows of the checkpoint over all tables. */
  public long recordCount() {
    return tables.values().stream().flatMap(List::stream).mapToLong(StagingManifest::recordCount).sum();
  }

  /** Bytes of the checkpoint's data files over all tables. */
  public long totalBytes() {
    return tables.values().stream().flatMap(List::stream).mapToLong(StagingManifest::totalBytes).sum();
  }

  /** Data files of the checkpoint over all tables. */
  public int fileCount() {
    return tables.values().stream().flatMap(List::stream).mapToInt(m -> m.files().size()).sum();
  }

  /** Version 1: job id, checkpoint id, the table count, then each table's name and manifests. */
  public static final class Serializer implements SimpleVersionedSerializer<CutCommittable> {
    private final StagingManifestSerializer manifest = new StagingManifestSerializer();

    @Override
    public int version() {
      return 1;
    }

    @Override
    public byte[] serialize(CutCommittable value) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeUTF(value.commitId().jobId().value());
        out.writeLong(value.commitId().checkpointId());
        out.writeInt(value.tables().size());
        for (Map.Entry<String, List<StagingManifest>> entry : value.tables().entrySet()) {
          out.writeUTF(entry.getKey());
          VersionedSerialization.writeAll(manifest, entry.getValue(), out);
        }
      }
      return bytes.toByteArray();
    }

    @Override
    public CutCommittable deserialize(int version, byte[] serialized) throws IOException {
      if (version != 1) {
        throw VersionedSerialization.unknownVersion("CutCommittable", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        CommitId id = new CommitId(JobId.of(in.readUTF()), in.readLong());
        int count = in.readInt();
        if (count < 1 || count > serialized.length) {
          throw new IOException("Corrupt CutCommittable of " + id + ": " + count + " tables");
        }
        SortedMap<String, List<StagingManifest>> tables = new TreeMap<>();
        for (int i = 0; i < count; i++) {
          String table = in.readUTF();
          tables.put(table, VersionedSerialization.readAll(manifest, in, "CutCommittable manifests of " + table));
        }
        if (in.available() > 0) {
          throw new IOException("Corrupt CutCommittable of " + id + ": " + in.available() + " trailing bytes");
        }
        return new CutCommittable(id, tables);
      }
    }
  }
}
