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
 * Where a {@link FileSource} reader stands: just after a record of one file of the listing, with what that file
 * was (DESIGN.md rule 13) and how many bad records the job diverted up to here.
 *
 * <p>Bytes, big-endian: {@code int version (2)}, {@code int fileIndex}, {@code int fileCount}, {@code int n} +
 * {@code n} bytes UTF-8 file location, {@code long listingHash} (of the locations 0..fileIndex, to detect a changed
 * listing), {@code byte unit} (0 = lines: {@code offset} is the byte offset of the next unread line and
 * {@code count} the number of lines consumed; 1 = records: both are the number of records consumed), {@code long
 * offset}, {@code long count}; version 2 adds the file's fingerprint when the reader opened it ({@code long size}
 * (-1 unknown), {@code long modified}, {@code int n} + {@code n} bytes UTF-8 object version), {@code long
 * checksum} (lines: the 64-bit FNV-1a hash of the bytes {@code 0..offset}, the part consumed; records: 0), and
 * {@code long diverted} (records handed to the bad-record sink by the job up to here, over all its runs), {@code
 * byte finished} (1: the file was rejected whole and is done; resume with the next file); version 3 adds what
 * the files before this one were when they were read ({@code int n}, then per file {@code long size}, {@code long
 * modified}, {@code long versionHash}; see {@link ConsumedFiles}) and {@code long records} (records the job read,
 * good and bad, up to here over all its runs; for {@code --max-bad-records P%}). Version 1 positions are read with an unknown
 * fingerprint, 0 diverted and not finished; versions 1 and 2 with no finished files' fingerprints and 0 records.
 */
record Position(int fileIndex, int fileCount, String file, long listingHash, boolean lineBased, long offset,
    long count, Fingerprint fingerprint, long checksum, long diverted, boolean finished, ConsumedFiles done,
    long records) {
  static final int VERSION = 3;

  Position(int fileIndex, int fileCount, String file, long listingHash, boolean lineBased, long offset, long count) {
    this(fileIndex, fileCount, file, listingHash, lineBased, offset, count, Fingerprint.UNKNOWN, 0, 0, false);
  }

  Position(int fileIndex, int fileCount, String file, long listingHash, boolean lineBased, long offset, long count,
      Fingerprint fingerprint, long checksum, long diverted, boolean finished) {
    this(fileIndex, fileCount, file, listingHash, lineBased, offset, count, fingerprint, checksum, diverted, finished,
        ConsumedFiles.NONE, 0);
  }

  /** Before the first record of the first file. */
  static Position start(List<String> files, boolean lineBased) {
    return new Position(0, files.size(), files.isEmpty() ? "" : files.get(0), listingHash(files, 0), lineBased, 0,
        0);
  }

  byte[] toBytes() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + file.length() + 24 * done.size());
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
      out.writeLong(fingerprint.size());
      out.writeLong(fingerprint.modified());
      byte[] version = fingerprint.version().getBytes(StandardCharsets.UTF_8);
      out.writeInt(version.length);
      out.write(version);
      out.writeLong(checksum);
      out.writeLong(diverted);
      out.writeByte(finished ? 1 : 0);
      out.writeInt(done.size());
      for (int i = 0; i < done.size(); i++) {
        ConsumedFiles.Entry entry = done.get(i);
        out.writeLong(entry.size());
        out.writeLong(entry.modified());
        out.writeLong(entry.version());
      }
      out.writeLong(records);
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
      if (version < 1 || version > VERSION) {
        throw new IllegalArgumentException("Unknown version " + version + " of a file source position (this "
            + "build reads versions 1 to " + VERSION + ")");
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
      Fingerprint fingerprint = Fingerprint.UNKNOWN;
      long checksum = 0;
      long diverted = 0;
      int finished = 0;
      if (version >= 2) {
        long size = in.readLong();
        long modified = in.readLong();
        int versionLength = in.readInt();
        if (versionLength < 0 || versionLength > bytes.length) {
          throw new IllegalArgumentException("Corrupt file source position: version length " + versionLength);
        }
        byte[] objectVersion = in.readNBytes(versionLength);
        if (objectVersion.length != versionLength) {
          throw new EOFException();
        }
        fingerprint = new Fingerprint(size, modified, new String(objectVersion, StandardCharsets.UTF_8));
        checksum = in.readLong();
        diverted = in.readLong();
        finished = in.readByte();
      }
      ConsumedFiles done = ConsumedFiles.NONE;
      long records = 0;
      if (version >= 3) {
        int n = in.readInt();
        if (n < 0 || n > fileIndex + 1 || (long) n * 24 > in.available()) {
          throw new IllegalArgumentException("Corrupt file source position: " + n + " finished files at file index "
              + fileIndex);
        }
        ConsumedFiles.Entry[] entries = new ConsumedFiles.Entry[n];
        for (int i = 0; i < n; i++) {
          entries[i] = new ConsumedFiles.Entry(in.readLong(), in.readLong(), in.readLong());
        }
        done = ConsumedFiles.of(entries);
        records = in.readLong();
      }
      if ((unit != 0 && unit != 1) || offset < 0 || count < 0 || diverted < 0 || records < 0
          || (finished != 0 && finished != 1)
          || in.available() > 0) {
        throw new IllegalArgumentException("Corrupt file source position: unit " + unit + ", offset " + offset
            + ", count " + count + ", diverted " + diverted);
      }
      return new Position(fileIndex, fileCount, new String(name, StandardCharsets.UTF_8), hash, unit == 0, offset,
          count, fingerprint, checksum, diverted, finished == 1, done, records);
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
    return "file " + (fileIndex + 1) + "/" + fileCount + " " + file
        + (finished ? " (rejected whole)" : (lineBased ? " line " : " record ") + count);
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
