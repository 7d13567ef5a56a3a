package dev.lakecommit.core.testing;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * What one writer of the reference sink staged for a checkpoint (also used, with writer -1, as the combined commit
 * of all writers).
 */
public record RefManifest(JobId jobId, long checkpointId, int writer, List<String> files, long records) {
  public RefManifest {
    files = List.copyOf(files);
  }

  /** Version 1: job, checkpoint, writer, file count, files, records. */
  public static final SimpleVersionedSerializer<RefManifest> SERIALIZER =
      new SimpleVersionedSerializer<>() {
        @Override
        public int version() {
          return 1;
        }

        @Override
        public byte[] serialize(RefManifest value) throws IOException {
          ByteArrayOutputStream bytes = new ByteArrayOutputStream();
          try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeUTF(value.jobId().value());
            out.writeLong(value.checkpointId());
            out.writeInt(value.writer());
            out.writeInt(value.files().size());
            for (String file : value.files()) {
              out.writeUTF(file);
            }
            out.writeLong(value.records());
          }
          return bytes.toByteArray();
        }

        @Override
        public RefManifest deserialize(int version, byte[] serialized) throws IOException {
          if (version != 1) {
            throw VersionedSerialization.unknownVersion("RefManifest", version);
          }
          try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
            JobId jobId = JobId.of(in.readUTF());
            long checkpointId = in.readLong();
            int writer = in.readInt();
            int count = in.readInt();
            List<String> files = new ArrayList<>();
            for (int i = 0; i < count; i++) {
              files.add(in.readUTF());
            }
            return new RefManifest(jobId, checkpointId, writer, files, in.readLong());
          }
        }
      };
}
