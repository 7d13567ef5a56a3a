package dev.lakecommit.ingest.source;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Where a {@link FileSource} reader stands: just after a record of one file of the listing.
 *
 * <p>Bytes, big-endian: {@code int version (1)}, {@code int fileIndex}, {@code int fileCount}, {@code int n} +
 * {@code n} bytes UTF-8 file location, {@code long listingHash} (of the locations 0..fileIndex, to detect a changed
 * listing), {@code byte unit} (0 = lines: {@code offset} is the byte offset of the next unread line and
 * {@code count} the number of lines consumed; 1 = records: both are the number of records consumed), {@code long
 * offset}, {@code long count}.
 */
record Position(int fileIndex, int fileCount, String file, long listingHash, boolean lineBased, long offset,
    long count) {
  static final int VERSION = 1;

  /** Before the first record of the first file. */
  static Position start(List<String> files, boolean lineBased) {
    return new Position(0, files.size(), files.isEmpty() ? "" : files.get(0), listingHash(files, 0), lineBased, 0,
        0);
  }

  byte[] toBytes() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + file.length());
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(VERSION);
      out.writeInt(fileIndex);
      out.writeInt(fileCount);
      byte[] name = file.getBytes(StandardCharsets.UTF_8);
      out.writeInt(name.length);
      out.write(name);
      out.writeLong(listingHash);
      out.writeByte(lineBased ? 0 : 1);
      out.writeLong(offset);
      out.writeLong(count);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /**
   * Reads a position written by {@link #toBytes()}.
   *
   * @throws IllegalArgumentException for an unknown version ({@code Unknown version N ...}) or corrupt bytes
   */
  static Position parse(byte[] bytes) {
    if (bytes == null || bytes.length < 4) {
      throw new IllegalArgumentException("Corrupt file source position: " + (bytes == null ? 0 : bytes.length)
          + " bytes");
    }
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      int version = in.readInt();
      if (version != VERSION) {
        throw new IllegalArgumentException("Unknown version " + version + " of a file source position (this "
            + "build reads version " + VERSION + ")");
      }
      int fileIndex = in.readInt();
      int fileCount = in.readInt();
      int length = in.readInt();
      if (length < 0 || length > bytes.length || fileIndex < 0 || fileCount < 0) {
        throw new IllegalArgumentException("Corrupt file source position: file index " + fileIndex + ", count "
            + fileCount + ", name length " + length);
      }
      byte[] name = in.readNBytes(length);
      if (name.length != length) {
        throw new EOFException();
      }
      long hash = in.readLong();
      int unit = in.readByte();
      long offset = in.readLong();
      long count = in.readLong();
      if ((unit != 0 && unit != 1) || offset < 0 || count < 0 || in.available() > 0) {
        throw new IllegalArgumentException("Corrupt file source position: unit " + unit + ", offset " + offset
            + ", count " + count);
      }
      return new Position(fileIndex, fileCount, new String(name, StandardCharsets.UTF_8), hash, unit == 0, offset,
          count);
    } catch (EOFException e) {
      throw new IllegalArgumentException("Corrupt file source position: truncated at " + bytes.length + " bytes", e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code file 3/10 s3://b/in/c.jsonl line 1200}: the file (1-based) and the last line or record consumed. */
  String describe() {
    if (fileCount == 0) {
      return "no input files";
    }
    return "file " + (fileIndex + 1) + "/" + fileCount + " " + file + (lineBased ? " line " : " record ") + count;
  }

  /** A 64-bit FNV-1a hash of the locations {@code 0..upTo}, each followed by a 0 byte. */
  static long listingHash(List<String> files, int upTo) {
    long hash = 0xcbf29ce484222325L;
    for (int i = 0; i <= upTo && i < files.size(); i++) {
      for (byte b : files.get(i).getBytes(StandardCharsets.UTF_8)) {
        hash = (hash ^ (b & 0xff)) * 0x100000001b3L;
      }
      hash = hash * 0x100000001b3L;
    }
    return hash;
  }
}
