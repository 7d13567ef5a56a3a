package dev.lakecommit.core;

import java.io.IOException;

/**
 * Turns a value into bytes tagged with a version, and reads back the bytes of every version it ever wrote.
 *
 * <p>The version is stored beside the bytes (see {@link VersionedSerialization}); a serializer whose format
 * changes bumps {@link #version()} and keeps a {@code case} for each older version in {@link #deserialize}.
 *
 * @param <T> the type of value
 */
public interface SimpleVersionedSerializer<T> {

  /** The version that {@link #serialize} writes. */
  int version();

  /** Serializes a value in the format of {@link #version()}. Must not modify the value. */
  byte[] serialize(T value) throws IOException;

  /**
   * Reads bytes written by some version of this serializer.
   *
   * @throws IOException if the bytes are corrupt or the version is unknown; the message names the version
   */
  T deserialize(int version, byte[] serialized) throws IOException;
}
