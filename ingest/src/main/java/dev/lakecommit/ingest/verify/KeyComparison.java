package dev.lakecommit.ingest.verify;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Compares the keys of a source with the keys of a table without holding more than a bound of keys in memory:
 * keys stay in memory up to the bound; past it, the keys of both sides are hash-partitioned into spill files
 * ({@value #PARTITIONS} partitions per side) and compared partition by partition. A partition still over the bound
 * is partitioned again, with another hash seed and as many partitions as it needs.
 */
final class KeyComparison implements Closeable {
  static final int PARTITIONS = 64;
  private static final int MAX_DEPTH = 4;

  /** The figures of a comparison. */
  record Counts(long duplicateKeys, long lostKeys, long unexpectedKeys) {
    Counts plus(Counts other) {
      return new Counts(duplicateKeys + other.duplicateKeys, lostKeys + other.lostKeys,
          unexpectedKeys + other.unexpectedKeys);
    }
  }

  private final Path spillRoot;
  private final int maxKeysInMemory;
  private final int seed;
  private final int partitions;
  private final List<String> sourceKeys = new ArrayList<>();
  private final List<String> tableKeys = new ArrayList<>();
  private Path dir;
  private DataOutputStream[] sourceOut;
  private DataOutputStream[] tableOut;
  private long[] sizes;

  KeyComparison(Path spillRoot, int maxKeysInMemory) {
    this(spillRoot, maxKeysInMemory, 0, PARTITIONS);
  }

  private KeyComparison(Path spillRoot, int maxKeysInMemory, int seed, int partitions) {
    if (maxKeysInMemory < 1) {
      throw new IllegalArgumentException("maxKeysInMemory must be positive: " + maxKeysInMemory);
    }
    this.spillRoot = spillRoot;
    this.maxKeysInMemory = maxKeysInMemory;
    this.seed = seed;
    this.partitions = partitions;
  }

  void addSource(String key) throws IOException {
    add(false, key);
  }

  void addTable(String key) throws IOException {
    add(true, key);
  }

  /** Whether keys went to spill files. */
  boolean spilled() {
    return dir != null;
  }

  private void add(boolean table, String key) throws IOException {
    if (dir != null) {
      write(table, key);
      return;
    }
    (table ? tableKeys : sourceKeys).add(key);
    if (sourceKeys.size() + tableKeys.size() > maxKeysInMemory) {
      spill();
    }
  }

  private void spill() throws IOException {
    Files.createDirectories(spillRoot);
    dir = Files.createTempDirectory(spillRoot, "keys-");
    sourceOut = new DataOutputStream[partitions];
    tableOut = new DataOutputStream[partitions];
    sizes = new long[partitions];
    for (String key : sourceKeys) {
      write(false, key);
    }
    for (String key : tableKeys) {
      write(true, key);
    }
    sourceKeys.clear();
    tableKeys.clear();
  }

  private static DataOutputStream open(Path file) throws IOException {
    return new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file), 16 * 1024));
  }

  private void write(boolean table, String key) throws IOException {
    int p = partition(key, seed, partitions);
    byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
    DataOutputStream[] outs = table ? tableOut : sourceOut;
    if (outs[p] == null) {
      outs[p] = open(file(table, p));
    }
    DataOutputStream out = outs[p];
    out.writeInt(bytes.length);
    out.write(bytes);
    sizes[p]++;
  }

  private Path file(boolean table, int p) {
    return dir.resolve((table ? "table-" : "source-") + p);
  }

  static int partition(String key, int seed, int partitions) {
    int h = key.hashCode() ^ (seed * 0x9E3779B9);
    h ^= h >>> 16;
    h *= 0x85EBCA6B;
    h ^= h >>> 13;
    h *= 0xC2B2AE35;
    h ^= h >>> 16;
    return Math.floorMod(h, partitions);
  }

  /** Compares everything added. */
  Counts compare() throws IOException {
    if (dir == null) {
      return compare(sourceKeys, tableKeys);
    }
    closeWriters();
    Counts total = new Counts(0, 0, 0);
    for (int p = 0; p < partitions; p++) {
      Path source = file(false, p);
      Path table = file(true, p);
      if (sizes[p] > maxKeysInMemory && seed < MAX_DEPTH) {
        long needed = 2 * ((sizes[p] + maxKeysInMemory - 1) / maxKeysInMemory);
        int parts = (int) Math.min(PARTITIONS, Math.max(2, needed));
        try (KeyComparison sub = new KeyComparison(dir, maxKeysInMemory, seed + 1, parts)) {
          forEach(source, sub::addSource);
          forEach(table, sub::addTable);
          total = total.plus(sub.compare());
        }
      } else {
        List<String> sourcePart = new ArrayList<>();
        List<String> tablePart = new ArrayList<>();
        forEach(source, sourcePart::add);
        forEach(table, tablePart::add);
        total = total.plus(compare(sourcePart, tablePart));
      }
      Files.deleteIfExists(source);
      Files.deleteIfExists(table);
    }
    return total;
  }

  private static Counts compare(List<String> source, List<String> table) {
    Map<String, int[]> counts = new HashMap<>();
    for (String key : table) {
      counts.computeIfAbsent(key, k -> new int[1])[0]++;
    }
    long duplicates = counts.values().stream().filter(c -> c[0] > 1).count();
    Set<String> seen = new HashSet<>();
    long lost = 0;
    for (String key : source) {
      if (seen.add(key) && !counts.containsKey(key)) {
        lost++;
      }
    }
    long unexpected = counts.keySet().stream().filter(key -> !seen.contains(key)).count();
    return new Counts(duplicates, lost, unexpected);
  }

  private interface KeyConsumer {
    void accept(String key) throws IOException;
  }

  private static void forEach(Path file, KeyConsumer consumer) throws IOException {
    if (!Files.exists(file)) {
      return;
    }
    try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file), 16 * 1024))) {
      while (true) {
        int length;
        try {
          length = in.readInt();
        } catch (java.io.EOFException e) {
          return;
        }
        consumer.accept(new String(in.readNBytes(length), StandardCharsets.UTF_8));
      }
    }
  }

  private void closeWriters() throws IOException {
    if (sourceOut == null) {
      return;
    }
    for (int p = 0; p < partitions; p++) {
      if (sourceOut[p] != null) {
        sourceOut[p].close();
      }
      if (tableOut[p] != null) {
        tableOut[p].close();
      }
    }
    sourceOut = null;
    tableOut = null;
  }

  /** Deletes the spill files. */
  @Override
  public void close() throws IOException {
    closeWriters();
    if (dir != null && Files.exists(dir)) {
      try (Stream<Path> files = Files.walk(dir)) {
        for (Path file : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) {
          Files.deleteIfExists(file);
        }
      }
    }
  }
}
