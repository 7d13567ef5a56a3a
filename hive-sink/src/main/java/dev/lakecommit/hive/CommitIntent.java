package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What a commit that moves files is about to do (DESIGN.md rule 12): written next to the staged files before the
 * first move and deleted after the watermark is recorded, so that a later run of the job finishes the commit or
 * undoes it before it stages anything new.
 *
 * @param mode how the committer applied the checkpoint (a later run applies it the same way)
 * @param epoch the run epoch of the committer that wrote it (0 for a committer that was not fenced)
 * @param committable the checkpoint's staged files
 * @param uploads the pending S3 uploads of staged files (upload id, part ETags), so that a later run completes them
 *     or finds them completed; empty where files are staged as plain files
 */
record CommitIntent(WriteMode mode, long epoch, HiveCommittable committable, List<PendingUploads.Upload> uploads) {

  CommitIntent {
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(committable, "committable");
    uploads = List.copyOf(uploads);
    if (epoch < 0) {
      throw new IllegalArgumentException(String.format("Invalid run epoch: %s (must be >= 0)", epoch));
    }
  }

  CommitIntent(WriteMode mode, long epoch, HiveCommittable committable) {
    this(mode, epoch, committable, List.of());
  }

  CommitId commitId() {
    return committable.commitId();
  }

  /**
   * Version 2: mode name, epoch, the committable with its own versioned serializer, then the number of uploads and
   * each one's staged path, destination, upload id, length, and its part ETags (count, then each). Version 1 is
   * version 2 without uploads.
   */
  static final class Serializer implements SimpleVersionedSerializer<CommitIntent> {
    private static final int VERSION = 2;
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
        out.writeInt(value.uploads().size());
        for (PendingUploads.Upload upload : value.uploads()) {
          out.writeUTF(upload.staged());
          out.writeUTF(upload.destination());
          out.writeUTF(upload.uploadId());
          out.writeLong(upload.length());
          out.writeInt(upload.etags().size());
          for (String etag : upload.etags()) {
            out.writeUTF(etag);
          }
        }
      }
      return bytes.toByteArray();
    }

    @Override
    public CommitIntent deserialize(int version, byte[] serialized) throws IOException {
      if (version != 1 && version != VERSION) {
        throw VersionedSerialization.unknownVersion("CommitIntent", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        WriteMode mode = WriteMode.valueOf(in.readUTF());
        long epoch = in.readLong();
        HiveCommittable committable = VersionedSerialization.read(committables, in);
        List<PendingUploads.Upload> uploads = new ArrayList<>();
        int count = version == 1 ? 0 : in.readInt();
        for (int i = 0; i < count; i++) {
          String staged = in.readUTF();
          String destination = in.readUTF();
          String uploadId = in.readUTF();
          long length = in.readLong();
          int parts = in.readInt();
          List<String> etags = new ArrayList<>(parts);
          for (int p = 0; p < parts; p++) {
            etags.add(in.readUTF());
          }
          uploads.add(new PendingUploads.Upload(staged, destination, uploadId, length, etags));
        }
        if (in.available() > 0) {
          throw new IOException("Corrupt CommitIntent: " + in.available() + " trailing bytes");
        }
        return new CommitIntent(mode, epoch, committable, uploads);
      }
    }
  }
}
