package dev.lakecommit.ingest.source;

import java.time.Instant;

/**
 * What an input file was when a reader opened it: its size, its modification time, and on an object store the
 * object's version (S3 version id, else its ETag). Stored in every position (DESIGN.md rule 13), so a resume can
 * tell a file that was replaced or rewritten under the same name.
 *
 * @param size bytes, or -1 if unknown (a position of an older version)
 * @param modified milliseconds since the epoch, or -1 if unknown
 * @param version the object's version id or ETag; empty for file systems
 */
record Fingerprint(long size, long modified, String version) {
  /** Nothing known: positions written before fingerprints were recorded. */
  static final Fingerprint UNKNOWN = new Fingerprint(-1, -1, "");

  Fingerprint {
    version = version == null ? "" : version;
  }

  boolean known() {
    return size >= 0;
  }

  /** {@code 1,200 bytes, modified 2026-05-01T10:00:00Z, version "abc"} */
  String describe() {
    StringBuilder text = new StringBuilder(String.format("%,d bytes", size));
    if (modified >= 0) {
      text.append(", modified ").append(Instant.ofEpochMilli(modified));
    }
    if (!version.isEmpty()) {
      text.append(", version ").append(version);
    }
    return text.toString();
  }
}
