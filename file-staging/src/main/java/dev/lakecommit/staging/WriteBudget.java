package dev.lakecommit.staging;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The open files and the buffered bytes one writer may hold, over every table it writes. A writer of one table has
 * a budget of its own ({@link StagingWriterConfig#maxOpenFiles}, {@link StagingWriterConfig#maxBufferedBytes}); a
 * writer of many tables gives one budget to the staging writers of all its tables, so that a job writing 1,000
 * tables opens no more files and buffers no more bytes per writer than a job writing one. Opening one file more
 * than the budget allows closes the least recently written file of any of its tables; buffering more closes the
 * largest.
 *
 * <p>Used by one thread, as the writer that owns it.
 */
public final class WriteBudget {
  /** How often (in rows, over all tables) the open files' buffers are measured against the bound. */
  static final int MEASURE_INTERVAL = 256;

  private final int maxOpenFiles;
  private final long maxBufferedBytes;
  /** The files of each table that has files open or records held. */
  private final Set<OpenFiles> members = new LinkedHashSet<>();
  private long clock;
  private int sinceMeasured;
  /** The most files open at once, over this budget's life (for tests and metrics). */
  private int mostOpen;

  /**
   * @param maxOpenFiles files open at once over all tables, at least 1
   * @param maxBufferedBytes bytes the open files (and held records) may buffer over all tables, at least 1
   */
  public WriteBudget(int maxOpenFiles, long maxBufferedBytes) {
    if (maxOpenFiles < 1) {
      throw new IllegalArgumentException("Invalid open-file bound: " + maxOpenFiles + " (must be > 0)");
    }
    if (maxBufferedBytes < 1) {
      throw new IllegalArgumentException("Invalid buffer bound: " + maxBufferedBytes + " (must be > 0)");
    }
    this.maxOpenFiles = maxOpenFiles;
    this.maxBufferedBytes = maxBufferedBytes;
  }

  /** The budget of a writer of one table, as its configuration bounds it. */
  static WriteBudget of(StagingWriterConfig config) {
    return new WriteBudget(config.maxOpenFiles(), config.maxBufferedBytes());
  }

  public int maxOpenFiles() {
    return maxOpenFiles;
  }

  public long maxBufferedBytes() {
    return maxBufferedBytes;
  }

  /** Files open now, over all tables. */
  public int openFiles() {
    int open = 0;
    for (OpenFiles files : members) {
      open += files.openCount();
    }
    return open;
  }

  /** What the open files and held records buffer now, over all tables, as the bound counts it. */
  public long bufferedBytes() {
    long bytes = 0;
    for (OpenFiles files : members) {
      bytes += files.bufferedBytes();
    }
    return bytes;
  }

  /** The most files that were open at once. */
  public int mostOpenFiles() {
    return mostOpen;
  }

  /** A tick of the writer's clock: files remember when they were last written. */
  long tick() {
    return ++clock;
  }

  /** Before {@code files} opens a file: closes the least recently written files of any table to make room. */
  void makeRoom() throws IOException {
    while (openFiles() >= maxOpenFiles) {
      OpenFiles eldest = null;
      long eldestWrite = Long.MAX_VALUE;
      for (OpenFiles files : members) {
        long written = files.eldestWrite();
        if (written < eldestWrite) {
          eldest = files;
          eldestWrite = written;
        }
      }
      if (eldest == null) {
        return;
      }
      eldest.closeEldestForLimit();
    }
  }

  /** After {@code files} opened a file or held a record. */
  void joined(OpenFiles files) {
    members.add(files);
    mostOpen = Math.max(mostOpen, openFiles());
  }

  /** After {@code files} closed its last file and has no records held. */
  void left(OpenFiles files) {
    members.remove(files);
  }

  /**
   * After a row was written or held: every {@link #MEASURE_INTERVAL} rows, writes held records out once they take
   * half the bound and closes the largest open files while the buffers take more than the bound.
   */
  void written() throws IOException {
    if (++sinceMeasured < MEASURE_INTERVAL) {
      return;
    }
    sinceMeasured = 0;
    long held = 0;
    for (OpenFiles files : members) {
      held += files.heldBytes();
    }
    if (held > maxBufferedBytes / 2) {
      for (OpenFiles files : List.copyOf(members)) {
        files.flushHeld();
      }
    }
    bound();
  }

  /** Closes the largest open files, of any table, while the buffers take more than the bound. */
  void bound() throws IOException {
    long total = bufferedBytes();
    while (total > maxBufferedBytes) {
      OpenFiles largest = null;
      long largestBytes = -1;
      for (OpenFiles files : new ArrayList<>(members)) {
        long bytes = files.largestBuffered();
        if (bytes > largestBytes) {
          largest = files;
          largestBytes = bytes;
        }
      }
      if (largest == null || largestBytes < 0) {
        return;
      }
      largest.closeLargestForMemory();
      total -= largestBytes;
    }
  }
}
