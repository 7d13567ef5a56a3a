package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Objects;

/**
 * What a commit that moves files is about to do (DESIGN.md rule 12): written next to the staged files before the
 * first move and deleted after the watermark is recorded, so that a later run of the job finishes the commit or
 * undoes it before it stages anything new.
 *
 * @param mode how the committer applied the checkpoint (a later run applies it the same way)
 * @param epoch the run epoch of the committer that wrote it (0 for a committer that was not fenced)
 * @param committable the checkpoint's staged files
 */
record CommitIntent(WriteMode mode, long epoch, HiveCommittable committable) {

  CommitIntent {
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(committable, "committable");
    if (epoch < 0) {
      throw new IllegalArgumentException(String.format("Invalid run epoch: %s (must be >= 0)", epoch));
    }
  }

  CommitId commitId() {
    return committable.commitId();
  }

  /** Version 1: mode name, epoch, then the committable with its own versioned serializer. */
  static final class Serializer implements SimpleVersionedSerializer<CommitIntent> {
    private static final int VERSION = 1;
    private final HiveCommittable.Serializer committables = new HiveCommittable.Serializer();

    @Override
    public int version() {
      return VERSION;
    }

    @Override
    public byte[] serialize(CommitIntent value) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeUTF(value.mode().name());
        out.writeLong(value.epoch());
        VersionedSerialization.write(committables, value.committable(), out);
      }
      return bytes.toByteArray();
    }

    @Override
    public CommitIntent deserialize(int version, byte[] serialized) throws IOException {
      if (version != VERSION) {
        throw VersionedSerialization.unknownVersion("CommitIntent", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        WriteMode mode = WriteMode.valueOf(in.readUTF());
        long epoch = in.readLong();
        HiveCommittable committable = VersionedSerialization.read(committables, in);
        if (in.available() > 0) {
          throw new IOException("Corrupt CommitIntent: " + in.available() + " trailing bytes");
        }
        return new CommitIntent(mode, epoch, committable);
      }
    }
  }
}
