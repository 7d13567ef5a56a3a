package dev.lakecommit.staging;

import dev.lakecommit.core.VersionedSerialization;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/** Length-prefixed strings, byte buffers and id maps, shared by the serializers of this package. */
final class SerializationUtil {
  private SerializationUtil() {}

  static void writeString(DataOutputStream out, String value) throws IOException {
    writeBytes(out, value.getBytes(StandardCharsets.UTF_8));
  }

  static String readString(DataInputStream in) throws IOException {
    return new String(VersionedSerialization.readBytes(in), StandardCharsets.UTF_8);
  }

  static void writeBytes(DataOutputStream out, byte[] bytes) throws IOException {
    out.writeInt(bytes.length);
    out.write(bytes);
  }

  /** Writes a buffer, or length -1 for null. */
  static void writeNullableBuffer(DataOutputStream out, ByteBuffer buffer) throws IOException {
    if (buffer == null) {
      out.writeInt(-1);
    } else {
      writeBytes(out, ColumnMetrics.bytesOf(buffer));
    }
  }

  static ByteBuffer readNullableBuffer(DataInputStream in) throws IOException {
    int length = in.readInt();
    if (length == -1) {
      return null;
    }
    if (length < 0) {
      throw new IOException("Corrupt length: " + length);
    }
    byte[] bytes = in.readNBytes(length);
    if (bytes.length != length) {
      throw new IOException("Truncated value: " + length + " bytes announced, " + bytes.length + " present");
    }
    return ByteBuffer.wrap(bytes);
  }

  static void writeCounts(DataOutputStream out, Map<Integer, Long> counts) throws IOException {
    out.writeInt(counts.size());
    for (Map.Entry<Integer, Long> e : counts.entrySet()) {
      out.writeInt(e.getKey());
      out.writeLong(e.getValue());
    }
  }

  static Map<Integer, Long> readCounts(DataInputStream in) throws IOException {
    int size = readSize(in);
    Map<Integer, Long> counts = new LinkedHashMap<>();
    for (int i = 0; i < size; i++) {
      counts.put(in.readInt(), in.readLong());
    }
    return counts;
  }

  static void writeBounds(DataOutputStream out, Map<Integer, ByteBuffer> bounds) throws IOException {
    out.writeInt(bounds.size());
    for (Map.Entry<Integer, ByteBuffer> e : bounds.entrySet()) {
      out.writeInt(e.getKey());
      writeBytes(out, ColumnMetrics.bytesOf(e.getValue()));
    }
  }

  static Map<Integer, ByteBuffer> readBounds(DataInputStream in) throws IOException {
    int size = readSize(in);
    Map<Integer, ByteBuffer> bounds = new LinkedHashMap<>();
    for (int i = 0; i < size; i++) {
      bounds.put(in.readInt(), ByteBuffer.wrap(VersionedSerialization.readBytes(in)));
    }
    return bounds;
  }

  static int readSize(DataInputStream in) throws IOException {
    int size = in.readInt();
    if (size < 0) {
      throw new IOException("Corrupt size: " + size);
    }
    return size;
  }

  static void checkFullyRead(DataInputStream in, String type) throws IOException {
    if (in.available() > 0) {
      throw new IOException("Corrupt " + type + ": " + in.available() + " trailing bytes");
    }
  }
}
