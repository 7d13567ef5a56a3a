package dev.lakecommit.iceberg;

import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingManifestSerializer;
import dev.lakecommit.staging.WriterManifest;
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
 * What one writer of a {@link MultiTableSink} staged for one checkpoint: a manifest per table it wrote, by table
 * name. A table the writer did not write in the checkpoint is not in it.
 *
 * @param manifests at least one
 */
public record TableManifests(SortedMap<String, StagingManifest> manifests) implements WriterManifest {

  public TableManifests {
    if (manifests.isEmpty()) {
      throw new IllegalArgumentException("A writer's manifests of a checkpoint name at least one table");
    }
    manifests = Collections.unmodifiableSortedMap(new TreeMap<>(manifests));
  }

  /** The highest checkpoint a table's files were named after (a writer names all of one checkpoint alike). */
  @Override
  public long checkpointId() {
    return manifests.values().stream().mapToLong(StagingManifest::checkpointId).max().orElseThrow();
  }

  @Override
  public int writerIndex() {
    return manifests.values().iterator().next().writerIndex();
  }

  @Override
  public long fileCount() {
    return manifests.values().stream().mapToLong(StagingManifest::fileCount).sum();
  }

  @Override
  public long recordCount() {
    return manifests.values().stream().mapToLong(StagingManifest::recordCount).sum();
  }

  /** Every table's manifest as of checkpoint {@code newCheckpointId}. */
  @Override
  public TableManifests withCheckpointId(long newCheckpointId) {
    SortedMap<String, StagingManifest> renumbered = new TreeMap<>();
    manifests.forEach((table, manifest) -> renumbered.put(table, manifest.withCheckpointId(newCheckpointId)));
    return new TableManifests(renumbered);
  }

  /** Version 1: the table count, then each table's name and manifest (with its own versioned serializer). */
  public static final class Serializer implements SimpleVersionedSerializer<TableManifests> {
    private final StagingManifestSerializer manifest = new StagingManifestSerializer();

    @Override
    public int version() {
      return 1;
    }

    @Override
    public byte[] serialize(TableManifests value) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeInt(value.manifests().size());
        for (Map.Entry<String, StagingManifest> entry : value.manifests().entrySet()) {
          out.writeUTF(entry.getKey());
          VersionedSerialization.write(manifest, entry.getValue(), out);
        }
      }
      return bytes.toByteArray();
    }

    @Override
    public TableManifests deserialize(int version, byte[] serialized) throws IOException {
      if (version != 1) {
        throw VersionedSerialization.unknownVersion("TableManifests", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        int count = in.readInt();
        if (count < 1 || count > serialized.length) {
          throw new IOException("Corrupt TableManifests: " + count + " tables");
        }
        SortedMap<String, StagingManifest> manifests = new TreeMap<>();
        for (int i = 0; i < count; i++) {
          manifests.put(in.readUTF(), VersionedSerialization.read(manifest, in));
        }
        if (in.available() > 0) {
          throw new IOException("Corrupt TableManifests: " + in.available() + " trailing bytes");
        }
        return new TableManifests(manifests);
      }
    }
  }

  /** Each table's manifests of one checkpoint over several writers, by table. */
  static SortedMap<String, List<StagingManifest>> byTable(List<TableManifests> writers) {
    SortedMap<String, List<StagingManifest>> tables = new TreeMap<>();
    for (TableManifests writer : writers) {
      writer.manifests().forEach((table, manifest) ->
          tables.computeIfAbsent(table, t -> new java.util.ArrayList<>()).add(manifest));
    }
    return tables;
  }
}
