package dev.lakecommit.ingest.source;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;

/**
 * What each file a reader finished was when it was read (size, modification time, a hash of the object version),
 * in listing order, so that a later run can tell a finished file that was replaced under the same name (DESIGN.md
 * rule 13). 24 bytes a file in a position.
 *
 * <p>An append-only list: a reader appends once per finished file, and each append returns a new value that shares
 * the array of the one before when it can (positions are taken after every record; copying the list each time
 * would cost the square of the file count). Values never change once made.
 */
final class ConsumedFiles {
  static final ConsumedFiles NONE = new ConsumedFiles(new Entry[0], 0);

  /** One finished file: {@code version} is a 64-bit FNV-1a hash of its object version, 0 for none. */
  record Entry(long size, long modified, long version) {
    static Entry of(Fingerprint fingerprint) {
      return new Entry(fingerprint.size(), fingerprint.modified(), versionHash(fingerprint.version()));
    }

    boolean known() {
      return size >= 0;
    }

    /**
     * What is not the same in {@code now}: {@code its size (1,200 bytes then, 1,300 now)}, ...; null if nothing.
     */
    String changes(Fingerprint now) {
      StringBuilder text = new StringBuilder();
      if (size != now.size()) {
        text.append(String.format("its size (%,d bytes then, %,d now)", size, now.size()));
      }
      if (modified != now.modified()) {
        text.append(text.length() > 0 ? ", " : "").append("its modification time (").append(time(modified))
            .append(" then, ").append(time(now.modified())).append(" now)");
      }
      if (version != versionHash(now.version())) {
        text.append(text.length() > 0 ? ", " : "").append("its object version (ETag or version id; now ")
            .append(now.version().isEmpty() ? "none" : now.version()).append(")");
      }
      return text.length() == 0 ? null : text.toString();
    }

    private static String time(long millis) {
      return millis < 0 ? "unknown" : Instant.ofEpochMilli(millis).toString();
    }
  }

  private final Entry[] entries;
  private final int size;

  private ConsumedFiles(Entry[] entries, int size) {
    this.entries = entries;
    this.size = size;
  }

  static ConsumedFiles of(Entry... entries) {
    return new ConsumedFiles(entries.clone(), entries.length);
  }

  int size() {
    return size;
  }

  Entry get(int index) {
    if (index < 0 || index >= size) {
      throw new IndexOutOfBoundsException("Index " + index + " of " + size + " finished files");
    }
    return entries[index];
  }

  /** This list and {@code entry} after it; this value stays as it is. */
  ConsumedFiles plus(Entry entry) {
    Entry[] array = entries;
    if (size == array.length || array[size] != null) {
      // full, or another value already appended to this one: a copy of its own
      array = Arrays.copyOf(array, Math.max(8, size * 2));
    }
    array[size] = entry;
    return new ConsumedFiles(array, size + 1);
  }

  static long versionHash(String version) {
    if (version == null || version.isEmpty()) {
      return 0;
    }
    long hash = 0xcbf29ce484222325L;
    for (byte b : version.getBytes(StandardCharsets.UTF_8)) {
      hash = (hash ^ (b & 0xff)) * 0x100000001b3L;
    }
    return hash == 0 ? 1 : hash;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof ConsumedFiles that
        && Arrays.equals(entries, 0, size, that.entries, 0, that.size);
  }

  @Override
  public int hashCode() {
    int hash = 1;
    for (int i = 0; i < size; i++) {
      hash = 31 * hash + entries[i].hashCode();
    }
    return hash;
  }

  @Override
  public String toString() {
    return size + " finished file(s)";
  }
}
