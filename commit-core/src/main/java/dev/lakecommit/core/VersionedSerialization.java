package dev.lakecommit.core;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** Helpers to store a serializer's version next to its bytes, and to read them back. */
public final class VersionedSerialization {
  private VersionedSerialization() {}

  /** Writes {@code version, length, bytes}. */
  public static <T> void write(SimpleVersionedSerializer<T> serializer, T value, DataOutputStream out)
      throws IOException {
    byte[] bytes = serializer.serialize(value);
    out.writeInt(serializer.version());
    out.writeInt(bytes.length);
    out.write(bytes);
  }

  /** Reads what {@link #write} wrote, with the serializer that handles the stored version. */
  public static <T> T read(SimpleVersionedSerializer<T> serializer, DataInputStream in) throws IOException {
    int version = in.readInt();
    byte[] bytes = readBytes(in);
    return serializer.deserialize(version, bytes);
  }

  /** {@code version, length, bytes} as one array. */
  public static <T> byte[] toBytes(SimpleVersionedSerializer<T> serializer, T value) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      write(serializer, value, out);
    }
    return bytes.toByteArray();
  }

  /** Reads an array written by {@link #toBytes}. */
  public static <T> T fromBytes(SimpleVersionedSerializer<T> serializer, byte[] bytes) throws IOException {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      T value = read(serializer, in);
      if (in.available() > 0) {
        throw new IOException("Trailing " + in.available() + " bytes after a serialized value");
      }
      return value;
    }
  }

  /** Reads a length-prefixed byte array; a negative or truncated length is an error, never a short read. */
  public static byte[] readBytes(DataInputStream in) throws IOException {
    int length = in.readInt();
    if (length < 0) {
      throw new IOException("Corrupt length: " + length);
    }
    byte[] bytes = in.readNBytes(length);
    if (bytes.length != length) {
      throw new IOException("Truncated value: " + length + " bytes announced, " + bytes.length + " present");
    }
    return bytes;
  }

  /** Writes {@code count}, then each value as {@link #write} does. */
  public static <T> void writeAll(SimpleVersionedSerializer<T> serializer, List<T> values, DataOutputStream out)
      throws IOException {
    out.writeInt(values.size());
    for (T value : values) {
      write(serializer, value, out);
    }
  }

  /**
   * Reads what {@link #writeAll} wrote.
   *
   * @param what names the list in the error for a corrupt count
   */
  public static <T> List<T> readAll(SimpleVersionedSerializer<T> serializer, DataInputStream in, String what)
      throws IOException {
    int count = in.readInt();
    if (count < 0) {
      throw new IOException("Corrupt " + what + ": count " + count);
    }
    List<T> values = new ArrayList<>(Math.min(count, 1024));
    for (int i = 0; i < count; i++) {
      values.add(read(serializer, in));
    }
    return values;
  }

  /** A serializer for lists whose elements use another serializer; the element version is stored once. */
  public static <T> SimpleVersionedSerializer<List<T>> listOf(SimpleVersionedSerializer<T> element) {
    return new ListSerializer<>(element);
  }

  /** Fails with the message every serializer uses for a version it does not know. */
  public static IOException unknownVersion(String type, int version) {
    return new IOException(
        String.format("Unknown version %s of %s (written by a newer Lakecommit?)", version, type));
  }

  private static final class ListSerializer<T> implements SimpleVersionedSerializer<List<T>> {
    private static final int VERSION = 1;
    private final SimpleVersionedSerializer<T> element;

    ListSerializer(SimpleVersionedSerializer<T> element) {
      this.element = element;
    }

    @Override
    public int version() {
      return VERSION;
    }

    @Override
    public byte[] serialize(List<T> values) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        writeAll(element, values, out);
      }
      return bytes.toByteArray();
    }

    @Override
    public List<T> deserialize(int version, byte[] serialized) throws IOException {
      if (version != VERSION) {
        throw unknownVersion("list", version);
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        return readAll(element, in, "list");
      }
    }
  }
}
