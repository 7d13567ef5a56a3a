package dev.lakecommit.staging;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The files a writer has open for one table, one per partition, within the writer's {@link WriteBudget}: opening
 * one more than the budget allows closes the least recently written (of this table or another the writer writes).
 * Files roll at a row count or a target size, and the largest open file is closed when the writer's open files
 * buffer more than the budget's bytes. Every closed file is kept until drained.
 *
 * <p>With {@link StagingWriterConfig#clusterPastOpenFiles}, once files are being reopened for partitions the limit
 * closed, records of partitions without an open file are held and written grouped by
 * partition when they take half the buffer bound and when all files close (at the checkpoint).
 */
final class OpenFiles {
  private static final Logger LOG = LoggerFactory.getLogger(OpenFiles.class);

  /** Files reopened after the open-file limit closed them, before the writer says its files stay small. */
  static final int REOPENS_BEFORE_WARNING = 100;

  /** Files reopened after the open-file limit closed them, before the writer holds records to group them. */
  static final int REOPENS_BEFORE_CLUSTERING = 16;

  /** Partitions closed for the open-file limit that a writer remembers, to see them come back. */
  static final int REMEMBERED_CLOSES = 10_000;

  /** How often (in rows) a file's length is checked against the target size: the check sums column buffers. */
  private static final int SIZE_CHECK_INTERVAL = WriteBudget.MEASURE_INTERVAL;

  /** Opens a writer for a partition (its key is a private copy). */
  interface Factory {
    DataWriter<Record> open(PartitionKey partition) throws IOException;
  }

  private final Factory factory;
  private final StagingWriterConfig config;
  private final WriteBudget budget;
  private final PartitionKey key;
  private final InternalRecordWrapper wrapper;
  private final LinkedHashMap<PartitionKey, OpenFile> open = new LinkedHashMap<>(16, 0.75f, true);
  private final List<StagedFile> closed = new ArrayList<>();
  private final boolean unpartitioned;
  /** Unpartitioned specs have one file open at most: it, skipping the key and the map for every record. */
  private OpenFile only;
  /** Files closed because the open files buffered too much, since this writer began. */
  private long closedForMemory;
  /**
   * Partitions whose file the open-file limit closed, in this checkpoint or earlier ones (a writer that closes a
   * file every few records may not get through all partitions within one checkpoint); forgotten past {@link
   * #REMEMBERED_CLOSES}.
   */
  private final Set<PartitionKey> closedForLimit = new HashSet<>();
  /** Files opened again for a partition whose file the limit had closed. */
  private long reopenedAfterLimit;
  /** Whether records of partitions without an open file are held ({@link StagingWriterConfig#clusterPastOpenFiles}). */
  private boolean clustering;
  /** The held records by partition, in the order their partitions first came. */
  private Map<PartitionKey, List<Record>> held = new LinkedHashMap<>();
  /** What the held records take in memory, estimated. */
  private long heldBytes;
  /** Times the held records were written out. */
  private long heldFlushes;

  OpenFiles(StagingWriterConfig config, Factory factory, WriteBudget budget) {
    this.config = config;
    this.factory = factory;
    this.budget = budget;
    this.key = new PartitionKey(config.spec(), config.schema());
    this.wrapper = new InternalRecordWrapper(config.schema().asStruct());
    this.unpartitioned = config.spec().isUnpartitioned();
  }

  void write(Record record) throws IOException {
    OpenFile file = only;
    if (file == null) {
      if (clustering) {
        partitionOf(record);
        file = open.get(key);
        if (file == null) {
          hold(record);
        }
      } else {
        file = lookUp(record);
      }
    }
    if (file != null) {
      append(file, record);
    }
    budget.written();
  }

  /** Writes the record to its open file ({@link #key} is its partition) and rolls the file if it is full. */
  private void append(OpenFile file, Record record) throws IOException {
    file.writer.write(record);
    file.rows++;
    file.lastWrite = budget.tick();
    if (file.rows >= config.maxRowsPerFile()
        || (file.rows % SIZE_CHECK_INTERVAL == 0 && file.writer.length() >= config.targetFileSizeBytes())) {
      open.remove(key);
      only = null;
      close(file);
      leaveIfIdle();
    }
  }

  /** Keeps the record (its partition is {@link #key}) until the held records are written grouped. */
  private void hold(Record record) {
    List<Record> records = held.get(key);
    if (records == null) {
      records = new ArrayList<>();
      held.put(key.copy(), records);
    }
    // a copy: callers may hand the writer the same object (a view of a reused row) every time
    Record copy = (Record) copyOf(config.schema().asStruct(), record);
    records.add(copy);
    heldBytes += Long.BYTES + estimatedBytes(copy);
    budget.joined(this);
  }

  /** A copy of a value of {@code type} that shares nothing mutable with it: records become generic records. */
  static Object copyOf(Type type, Object value) {
    if (value == null) {
      return null;
    }
    switch (type.typeId()) {
      case STRUCT: {
        Types.StructType struct = type.asStructType();
        StructLike from = (StructLike) value;
        GenericRecord copy = GenericRecord.create(struct);
        List<Types.NestedField> fields = struct.fields();
        for (int i = 0; i < fields.size(); i++) {
          copy.set(i, copyOf(fields.get(i).type(), from.get(i, Object.class)));
        }
        return copy;
      }
      case LIST: {
        Type element = type.asListType().elementType();
        List<Object> copy = new ArrayList<>();
        for (Object item : (java.util.Collection<?>) value) {
          copy.add(copyOf(element, item));
        }
        return copy;
      }
      case MAP: {
        Types.MapType map = type.asMapType();
        Map<Object, Object> copy = new LinkedHashMap<>();
        ((Map<?, ?>) value).forEach((k, v) -> copy.put(copyOf(map.keyType(), k), copyOf(map.valueType(), v)));
        return copy;
      }
      case STRING:
        return value.toString();
      case BINARY:
      case FIXED:
        if (value instanceof java.nio.ByteBuffer buffer) {
          byte[] bytes = new byte[buffer.remaining()];
          buffer.duplicate().get(bytes);
          return java.nio.ByteBuffer.wrap(bytes);
        }
        return value instanceof byte[] bytes ? bytes.clone() : value;
      default:
        return value; // boxed numbers, BigDecimal, dates and times, UUIDs: immutable
    }
  }

  /** Writes the held records, partition by partition, opening (and closing the least recently used) files. */
  void flushHeld() throws IOException {
    if (held.isEmpty()) {
      return;
    }
    Map<PartitionKey, List<Record>> groups = held;
    held = new LinkedHashMap<>();
    heldBytes = 0;
    heldFlushes++;
    int written = 0;
    for (List<Record> records : groups.values()) {
      for (Record record : records) {
        append(lookUp(record), record);
        if (++written % SIZE_CHECK_INTERVAL == 0) {
          budget.bound();
        }
      }
    }
  }

  /**
   * What a record takes on the heap, roughly: its object and array, boxed values, strings as Latin-1 or UTF-16,
   * nested records, lists and maps. Enough to bound held records by bytes, not to account exactly.
   */
  static long estimatedBytes(Object value) {
    if (value == null) {
      return 0;
    }
    if (value instanceof CharSequence text) {
      return 56 + 2L * text.length();
    }
    if (value instanceof Record record) {
      long bytes = 40 + 8L * record.size();
      for (int i = 0; i < record.size(); i++) {
        bytes += estimatedBytes(record.get(i, Object.class));
      }
      return bytes;
    }
    if (value instanceof java.nio.ByteBuffer buffer) {
      return 64 + buffer.remaining();
    }
    if (value instanceof byte[] bytes) {
      return 16 + bytes.length;
    }
    if (value instanceof java.util.Collection<?> collection) {
      long bytes = 40 + 8L * collection.size();
      for (Object element : collection) {
        bytes += estimatedBytes(element);
      }
      return bytes;
    }
    if (value instanceof Map<?, ?> map) {
      long bytes = 64;
      for (Map.Entry<?, ?> entry : map.entrySet()) {
        bytes += 40 + estimatedBytes(entry.getKey()) + estimatedBytes(entry.getValue());
      }
      return bytes;
    }
    if (value instanceof Number || value instanceof Boolean) {
      return value instanceof java.math.BigDecimal ? 72 : 16;
    }
    return 96; // dates, times, timestamps, UUIDs: a few small objects
  }

  /** The buffered bytes of the largest open file, -1 if none is open. */
  long largestBuffered() {
    long largest = -1;
    for (OpenFile file : open.values()) {
      largest = Math.max(largest, buffered(file));
    }
    return largest;
  }

  /** Closes the open file that buffers the most: the writer's files buffer more than its budget allows. */
  void closeLargestForMemory() throws IOException {
    Map.Entry<PartitionKey, OpenFile> largest = null;
    long largestBytes = -1;
    for (Map.Entry<PartitionKey, OpenFile> entry : open.entrySet()) {
      long bytes = buffered(entry.getValue());
      if (bytes > largestBytes) {
        largest = entry;
        largestBytes = bytes;
      }
    }
    open.remove(largest.getKey());
    only = null;
    close(largest.getValue());
    closedForMemory++;
    leaveIfIdle();
  }

  /** What the held records take in memory, estimated. */
  long heldBytes() {
    return heldBytes;
  }

  /** What the open files and the held records hold in memory, as the budget counts it. */
  long bufferedBytes() {
    long total = heldBytes;
    for (OpenFile file : open.values()) {
      total += buffered(file);
    }
    return total;
  }

  /** An open file's length, up to one row group: Parquet writes a full row group out of memory. */
  private long buffered(OpenFile file) {
    return Math.min(file.writer.length(), config.rowGroupSizeBytes());
  }

  long closedForMemory() {
    return closedForMemory;
  }

  /** Files opened again for a partition whose file the open-file limit had closed. */
  long reopenedAfterLimit() {
    return reopenedAfterLimit;
  }

  /** Times held records were written out grouped by partition (0 unless the writer clusters). */
  long heldFlushes() {
    return heldFlushes;
  }

  /** Sets {@link #key} to the record's partition. */
  private void partitionOf(Record record) {
    if (!unpartitioned) {
      // The wrapper turns date/time values into Iceberg's internal ints/longs, which the transforms expect.
      key.partition(wrapper.wrap(record));
    }
  }

  /** The record's open file, opened (and the least recently used one closed) if needed; sets {@link #key}. */
  private OpenFile lookUp(Record record) throws IOException {
    partitionOf(record);
    OpenFile file = open.get(key);
    if (file == null) {
      budget.makeRoom();
      if (!clustering && !closedForLimit.isEmpty() && closedForLimit.contains(key)) {
        reopened();
      }
      PartitionKey copy = key.copy();
      file = new OpenFile(factory.open(copy), budget.tick());
      open.put(copy, file);
      budget.joined(this);
    }
    if (unpartitioned) {
      only = file;
    }
    return file;
  }

  /** When the least recently written open file (of this table) was last written; max if none is open. */
  long eldestWrite() {
    return open.isEmpty() ? Long.MAX_VALUE : open.values().iterator().next().lastWrite;
  }

  /** Closes the least recently written open file: the writer has as many files open as its budget allows. */
  void closeEldestForLimit() throws IOException {
    Iterator<Map.Entry<PartitionKey, OpenFile>> eldest = open.entrySet().iterator();
    Map.Entry<PartitionKey, OpenFile> lru = eldest.next();
    eldest.remove();
    only = null;
    if (!clustering) {
      if (closedForLimit.size() >= REMEMBERED_CLOSES) {
        closedForLimit.clear();
      }
      closedForLimit.add(lru.getKey());
    }
    close(lru.getValue());
    leaveIfIdle();
  }

  /** Leaves the budget once nothing is open or held. */
  private void leaveIfIdle() {
    if (open.isEmpty() && held.isEmpty()) {
      budget.left(this);
    }
  }

  /** Counts a file reopened after the limit closed it: past a few, the writer clusters or warns. */
  private void reopened() {
    reopenedAfterLimit++;
    if (reopenedAfterLimit != REOPENS_BEFORE_CLUSTERING && reopenedAfterLimit != REOPENS_BEFORE_WARNING) {
      return;
    }
    String spec = "partition spec " + config.spec().fields();
    if (config.clusterPastOpenFiles() && reopenedAfterLimit == REOPENS_BEFORE_CLUSTERING) {
      clustering = true;
      LOG.info("A writer of {} writes more partitions per checkpoint than its {} open files in no order: it now holds "
          + "the records of partitions without an open file (up to {} KB) and writes them grouped by partition",
          spec, config.maxOpenFiles(), config.maxBufferedBytes() / 2 / 1024);
    } else if (!config.clusterPastOpenFiles() && reopenedAfterLimit == REOPENS_BEFORE_WARNING) {
      LOG.warn("A writer of {} opened files again {} times for partitions whose file the open-file limit ({} per "
          + "writer) had closed: the input has more partitions per writer and checkpoint than the limit, in no "
          + "order, so the files stay small. Raise the limit (maxOpenFiles; the tool's --max-open-files; "
          + "an open Parquet file holds about two pages in memory, 2 MB at the default page size) or cluster the "
          + "input by the partition columns.", spec, REOPENS_BEFORE_WARNING, config.maxOpenFiles());
    }
  }

  int openCount() {
    return open.size();
  }

  /** Forgets the held records: they are not written. */
  void dropHeld() {
    held.clear();
    heldBytes = 0;
    leaveIfIdle();
  }

  /**
   * Writes the held records and closes every open file; a failure leaves the remaining files open for {@link
   * #abandon}.
   */
  void closeAll() throws IOException {
    flushHeld();
    only = null;
    Iterator<OpenFile> files = open.values().iterator();
    while (files.hasNext()) {
      OpenFile file = files.next();
      files.remove();
      close(file);
    }
    leaveIfIdle();
  }

  /** The files closed since the last drain, in closing order. */
  List<StagedFile> drain() {
    List<StagedFile> files = List.copyOf(closed);
    closed.clear();
    return files;
  }

  /** Closes open writers without reporting them, and forgets closed files: their paths are deleted elsewhere. */
  void abandon() {
    only = null;
    for (OpenFile file : open.values()) {
      try {
        file.writer.close();
      } catch (IOException | RuntimeException e) {
        // The file is deleted by the caller; a failed close only means a broken file to delete.
      }
    }
    open.clear();
    closed.clear();
    closedForLimit.clear();
    dropHeld();
    budget.left(this);
  }

  private void close(OpenFile file) throws IOException {
    file.writer.close();
    closed.add(StagedFile.of(file.writer.toDataFile(), config.spec()));
  }

  private static final class OpenFile {
    private final DataWriter<Record> writer;
    private long rows;
    /** The budget's clock when the file was last written (or opened). */
    private long lastWrite;

    OpenFile(DataWriter<Record> writer, long opened) {
      this.writer = writer;
      this.lastWrite = opened;
    }
  }
}
