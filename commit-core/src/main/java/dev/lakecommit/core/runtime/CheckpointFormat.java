package dev.lakecommit.core.runtime;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.VersionedSerialization;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * The bytes of a checkpoint file: {@code magic "LKCP", format version, payload length, payload, CRC32C of the
 * payload}. A torn, truncated or altered file fails the checksum and is never read as a checkpoint.
 */
final class CheckpointFormat {
  static final int MAGIC = 0x4C4B4350; // "LKCP"
  /**
   * Version 2 adds the target identity after the pending commits, version 3 the commit positions after it; older
   * files are still read.
   */
  static final int VERSION = 3;

  private CheckpointFormat() {}

  static byte[] encode(CheckpointRecord record) throws IOException {
    return encode(record, VERSION);
  }

  /** Test-only: the bytes an older version wrote. */
  static byte[] encode(CheckpointRecord record, int version) throws IOException {
    byte[] payload = payload(record, version);
    CRC32C crc = new CRC32C();
    crc.update(payload);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(payload.length + 20);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(MAGIC);
      out.writeInt(version);
      out.writeInt(payload.length);
      out.write(payload);
      out.writeLong(crc.getValue());
    }
    return bytes.toByteArray();
  }

  /**
   * @throws CorruptCheckpointException if the bytes are not a complete checkpoint of a known version
   */
  static CheckpointRecord decode(String file, byte[] bytes) throws CorruptCheckpointException {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      if (bytes.length < 12 || in.readInt() != MAGIC) {
        throw new CorruptCheckpointException(file, "not a Lakecommit checkpoint (bad magic)");
      }
      int version = in.readInt();
      if (version < 1 || version > VERSION) {
        throw new CorruptCheckpointException(file, "unknown checkpoint format version " + version);
      }
      int length = in.readInt();
      if (length < 0 || length > bytes.length - 20) {
        throw new CorruptCheckpointException(
            file, "truncated: payload of " + length + " bytes announced, file has " + bytes.length);
      }
      byte[] payload = in.readNBytes(length);
      long stored = in.readLong();
      CRC32C crc = new CRC32C();
      crc.update(payload);
      if (crc.getValue() != stored || in.available() != 0) {
        throw new CorruptCheckpointException(file, "checksum mismatch");
      }
      return readPayload(payload, version);
    } catch (CorruptCheckpointException e) {
      throw e;
    } catch (EOFException e) {
      throw new CorruptCheckpointException(file, "truncated");
    } catch (IOException | IllegalArgumentException e) {
      throw new CorruptCheckpointException(file, e.getMessage());
    }
  }

  private static byte[] payload(CheckpointRecord record, int version) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeUTF(record.jobId().value());
      out.writeLong(record.checkpointId());
      out.writeInt(record.attempt());
      out.writeLong(record.recordCount());
      writeBytes(out, record.sourcePosition());
      out.writeInt(record.writerStates().size());
      for (byte[] state : record.writerStates()) {
        writeBytes(out, state);
      }
      out.writeInt(record.pendingCommits().size());
      for (var entry : record.pendingCommits().entrySet()) {
        out.writeLong(entry.getKey());
        writeBytes(out, entry.getValue());
      }
      if (version >= 2) {
        out.writeUTF(record.targetIdentity());
      }
      if (version >= 3) {
        out.writeInt(record.commitPositions().size());
        for (var entry : record.commitPositions().entrySet()) {
          out.writeLong(entry.getKey());
          writeBytes(out, entry.getValue().getBytes(StandardCharsets.UTF_8));
        }
      }
    }
    return bytes.toByteArray();
  }

  private static CheckpointRecord readPayload(byte[] payload, int version) throws IOException {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(payload))) {
      JobId jobId = JobId.of(in.readUTF());
      long checkpointId = in.readLong();
      int attempt = in.readInt();
      long recordCount = in.readLong();
      byte[] position = VersionedSerialization.readBytes(in);
      int writers = in.readInt();
      List<byte[]> states = new ArrayList<>();
      for (int i = 0; i < writers; i++) {
        states.add(VersionedSerialization.readBytes(in));
      }
      int pendingCount = in.readInt();
      TreeMap<Long, byte[]> pending = new TreeMap<>();
      for (int i = 0; i < pendingCount; i++) {
        long id = in.readLong();
        pending.put(id, VersionedSerialization.readBytes(in));
      }
      String identity = version >= 2 ? in.readUTF() : "";
      TreeMap<Long, String> positions = new TreeMap<>();
      int positionCount = version >= 3 ? in.readInt() : 0;
      for (int i = 0; i < positionCount; i++) {
        long id = in.readLong();
        positions.put(id, new String(VersionedSerialization.readBytes(in), StandardCharsets.UTF_8));
      }
      return new CheckpointRecord(jobId, checkpointId, attempt, recordCount, position, states, pending, identity,
          positions);
    }
  }

  private static void writeBytes(DataOutputStream out, byte[] value) throws IOException {
    out.writeInt(value.length);
    out.write(value);
  }
}
