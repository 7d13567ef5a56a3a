package dev.lakecommit.ingest.verify;

import dev.lakecommit.hive.CheckpointRuns;
import dev.lakecommit.ingest.hive.HiveTableView;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.iceberg.Accessor;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.mapping.MappingUtil;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.parquet.ParquetSchemaUtil;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.thrift.TException;

/**
 * A Hive table read back as a Hive reader sees it: the directories the metastore lists (the table's location, or
 * each partition's location), the visible files in each (names starting with {@code .} or {@code _} are skipped,
 * so are sub-directories), each read as Parquet by column name. A partition column's value comes from the
 * partition, as Hive reads it. One file is open at a time; partitions are fetched from the metastore in batches.
 * Each pass over the table opens one Hadoop file system per scheme and authority and closes it at its end.
 * The out-of-order rate follows the checkpoint ids in hive-sink's file names (see {@link #outOfOrderRows}).
 */
public final class HiveTableRows implements TableRows {
  private final HiveTableView table;

  public HiveTableRows(HiveTableView table) {
    this.table = table;
  }

  @Override
  public String name() {
    return table.name();
  }

  @Override
  public void checkColumn(String column) {
    String lower = column.toLowerCase(Locale.ROOT);
    if (partitionIndex(lower) >= 0) {
      return;
    }
    String type = table.columns().get(lower);
    if (type == null) {
      List<String> columns = new ArrayList<>(table.columns().keySet());
      columns.addAll(table.partitionColumns());
      throw new IllegalArgumentException("The Hive table " + table.name() + " has no column '" + column
          + "' (columns: " + String.join(", ", columns) + ")");
    }
    if (type.contains("<")) {
      throw new IllegalArgumentException("Column '" + column + "' of the Hive table " + table.name() + " is "
          + type + ", not a primitive type");
    }
  }

  private int partitionIndex(String lowerColumn) {
    return table.partitionColumns().indexOf(lowerColumn);
  }

  @Override
  public CloseableIterable<Object> values(String column) throws IOException {
    checkColumn(column);
    Iterator<HiveTableView.DataDirectory> dirs;
    try {
      dirs = table.dataDirectories();
    } catch (TException e) {
      throw new IOException("Cannot list the partitions of the Hive table " + table.name() + ": "
          + e.getMessage(), e);
    }
    Configuration conf = table.conf();
    int partition = partitionIndex(column.toLowerCase(Locale.ROOT));
    return new CloseableIterable<>() {
      private final List<CloseableIterator<Object>> open = new ArrayList<>();

      @Override
      public CloseableIterator<Object> iterator() {
        CloseableIterator<Object> values = new Values(dirs, new DataFileSystems(conf), column, partition);
        open.add(values);
        return values;
      }

      @Override
      public void close() throws IOException {
        for (CloseableIterator<Object> values : open) {
          values.close();
        }
      }
    };
  }

  /**
   * Hive keeps no commit history, but hive-sink's files do: a checkpoint's file is named
   * {@code <job>-<checkpoint>-<writer>-<attempt>-<seq>}, and a merged file lists the checkpoints of its rows in its
   * footer ({@link CheckpointRuns}). For a table one job wrote, two passes over the column: the first finds each
   * checkpoint's largest event time, the second counts the rows whose time is below the largest of an earlier
   * checkpoint. The file list and one value per checkpoint are held in memory, the rows are not.
   *
   * @throws IllegalArgumentException if several jobs wrote the table, a visible file holds rows of no checkpoint of
   *     the job, or the column is a partition column
   */
  @Override
  public long outOfOrderRows(String eventTimeColumn) throws IOException {
    if (partitionIndex(eventTimeColumn.toLowerCase(Locale.ROOT)) >= 0) {
      throw new IllegalArgumentException("Option --event-time: '" + eventTimeColumn + "' is a partition column of "
          + "the Hive table " + table.name() + "; give a data column");
    }
    Map<String, ?> jobs = table.jobs();
    if (jobs.size() != 1) {
      throw new IllegalArgumentException("Option --event-time with --target hive needs a table that one job wrote "
          + "(the commit order comes from the checkpoint ids in its files); table " + table.name()
          + " was written by jobs " + jobs.keySet());
    }
    String job = jobs.keySet().iterator().next();
    try (DataFileSystems fileSystems = new DataFileSystems(table.conf())) {
      return outOfOrderRows(job, jobs.keySet(), eventTimeColumn, fileSystems);
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private long outOfOrderRows(String job, java.util.Set<String> jobs, String eventTimeColumn,
      DataFileSystems fileSystems) throws IOException {
    List<Map.Entry<FileStatus, CheckpointRuns>> files = new ArrayList<>();
    try {
      for (Iterator<HiveTableView.DataDirectory> dirs = table.dataDirectories(); dirs.hasNext(); ) {
        for (FileStatus file : Values.visibleFiles(dirs.next(), fileSystems)) {
          CheckpointRuns runs = runs(file, fileSystems, jobs);
          for (CheckpointRuns.Run run : runs.runs()) {
            if (!job.equals(run.job())) {
              throw new IllegalArgumentException("Option --event-time: data file " + file.getPath() + " holds "
                  + run.rows() + " rows not written by job " + job + ", so their commit order is unknown");
            }
          }
          files.add(Map.entry(file, runs));
        }
      }
    } catch (TException e) {
      throw new IOException("Cannot list the partitions of the Hive table " + table.name() + ": "
          + e.getMessage(), e);
    }
    TreeMap<Long, Comparable> largest = new TreeMap<>();
    for (Map.Entry<FileStatus, CheckpointRuns> file : files) {
      eachValue(file.getKey(), file.getValue(), eventTimeColumn, fileSystems,
          (time, checkpoint) -> largest.merge(checkpoint, time, (a, b) -> a.compareTo(b) >= 0 ? a : b));
    }
    // the largest event time of all checkpoints before each one
    Map<Long, Comparable> before = new java.util.HashMap<>();
    Comparable committed = null;
    for (Map.Entry<Long, Comparable> checkpoint : largest.entrySet()) {
      before.put(checkpoint.getKey(), committed);
      if (committed == null || checkpoint.getValue().compareTo(committed) > 0) {
        committed = checkpoint.getValue();
      }
    }
    long[] late = {0};
    for (Map.Entry<FileStatus, CheckpointRuns> file : files) {
      eachValue(file.getKey(), file.getValue(), eventTimeColumn, fileSystems, (time, checkpoint) -> {
        Comparable earlier = before.get(checkpoint);
        if (earlier != null && time.compareTo(earlier) < 0) {
          late[0]++;
        }
      });
    }
    return late[0];
  }

  private static CheckpointRuns runs(FileStatus file, DataFileSystems fileSystems, java.util.Set<String> jobs)
      throws IOException {
    if (file.getLen() == 0) {
      return new CheckpointRuns(List.of());
    }
    try (ParquetFileReader reader = ParquetFileReader.open(fileSystems.parquet(file))) {
      return CheckpointRuns.of(file.getPath().getName(), reader.getFooter(), jobs);
    } catch (IOException | RuntimeException e) {
      throw new IOException("Cannot read data file " + file.getPath() + " as Parquet: " + e.getMessage(), e);
    }
  }

  /** Each non-null value of {@code column} in {@code file}, with the checkpoint of its row. */
  @SuppressWarnings("rawtypes")
  private static void eachValue(FileStatus file, CheckpointRuns runs, String column, DataFileSystems fileSystems,
      java.util.function.ObjLongConsumer<Comparable> action) throws IOException {
    Iterator<CheckpointRuns.Run> run = runs.runs().iterator();
    CheckpointRuns.Run current = null;
    long left = 0;
    try (CloseableIterable<Object> values = Values.read(file, fileSystems, column, -1, List.of())) {
      for (Object value : values) {
        while (left == 0) {
          if (!run.hasNext()) {
            throw new IOException("Data file " + file.getPath() + " holds more rows than its checkpoints account "
                + "for (" + runs.rows() + ")");
          }
          current = run.next();
          left = current.rows();
        }
        left--;
        if (value != null) {
          action.accept((Comparable) value, current.checkpointId());
        }
      }
    }
  }

  /** One value, {@code count} times. */
  private static final class Repeated implements Iterator<Object> {
    private final Object value;
    private long left;

    Repeated(Object value, long count) {
      this.value = value;
      this.left = count;
    }

    @Override
    public boolean hasNext() {
      return left > 0;
    }

    @Override
    public Object next() {
      if (left <= 0) {
        throw new NoSuchElementException();
      }
      left--;
      return value;
    }
  }

  /** The values of one column, file by file; at most one file open, the file systems closed with it. */
  private static final class Values implements CloseableIterator<Object> {
    private final Iterator<HiveTableView.DataDirectory> dirs;
    private final DataFileSystems fileSystems;
    private final String column;
    private final int partitionIndex;
    private Iterator<FileStatus> files = Collections.emptyIterator();
    private List<String> partitionValues = List.of();
    private CloseableIterable<Object> current;
    private Iterator<Object> values = Collections.emptyIterator();

    Values(Iterator<HiveTableView.DataDirectory> dirs, DataFileSystems fileSystems, String column,
        int partitionIndex) {
      this.dirs = dirs;
      this.fileSystems = fileSystems;
      this.column = column;
      this.partitionIndex = partitionIndex;
    }

    @Override
    public boolean hasNext() {
      try {
        while (!values.hasNext()) {
          closeCurrent();
          if (!files.hasNext()) {
            if (!dirs.hasNext()) {
              return false;
            }
            HiveTableView.DataDirectory dir = dirs.next();
            partitionValues = dir.partitionValues();
            files = visibleFiles(dir, fileSystems).iterator();
            continue;
          }
          current = read(files.next(), fileSystems, column, partitionIndex, partitionValues);
          values = current.iterator();
        }
        return true;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public Object next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      return values.next();
    }

    /** The values of {@code column} in one data file (or its partition's value, once per row). */
    private static CloseableIterable<Object> read(FileStatus file, DataFileSystems fileSystems, String column,
      int partitionIndex, List<String> partitionValues) throws IOException {
      if (file.getLen() == 0) {
        return CloseableIterable.empty();
      }
      ParquetMetadata footer;
      try (ParquetFileReader reader = ParquetFileReader.open(fileSystems.parquet(file))) {
        footer = reader.getFooter();
      } catch (IOException | RuntimeException e) {
        throw new IOException("Cannot read data file " + file.getPath() + " as Parquet: " + e.getMessage(), e);
      }
      if (partitionIndex >= 0) {
        long rows = footer.getBlocks().stream().mapToLong(BlockMetaData::getRowCount).sum();
        String value = partitionValues.get(partitionIndex);
        return CloseableIterable.withNoopClose(() -> new Repeated(value, rows));
      }
      // The file's own schema (its field ids, or ids by position), the column found in it by name.
      Schema fileSchema = ParquetSchemaUtil.convert(footer.getFileMetaData().getSchema());
      org.apache.iceberg.types.Types.NestedField field = fileSchema.caseInsensitiveFindField(column);
      if (field == null) {
        throw new IOException("Data file " + file.getPath() + " has no column '" + column + "'");
      }
      String name = fileSchema.findColumnName(field.fieldId());
      Schema projection = fileSchema.select(name);
      Accessor<StructLike> accessor = Audit.accessor(projection, name, "data file " + file.getPath());
      // Records hold dates and times as java.time values; accessors expect Iceberg's internal longs.
      boolean topLevel = projection.asStruct().field(name) != null;
      CloseableIterable<Record> rows = Parquet.read(fileSystems.iceberg(file))
          .project(projection)
          .createReaderFunc(type -> GenericParquetReaders.buildReader(projection, type))
          .withNameMapping(MappingUtil.create(fileSchema))
          .build();
      java.time.ZoneId int96Zone = int96Zone(footer, name);
      return CloseableIterable.transform(rows, row -> {
        Object value = topLevel ? row.getField(name) : accessor.get(row);
        return int96Zone != null && value instanceof java.time.OffsetDateTime time
            ? time.atZoneSameInstant(int96Zone).toLocalDateTime() : value;
      });
    }

    /**
     * Hive's INT96 timestamps (as hive-sink writes them) hold a wall-clock time converted to UTC from the zone in
     * the footer's {@code writer.time.zone} (UTC when absent); Iceberg reads them as instants. The zone to read a
     * top-level INT96 column's values in, or null for any other column.
     */
    private static java.time.ZoneId int96Zone(ParquetMetadata footer, String column) {
      org.apache.parquet.schema.MessageType schema = footer.getFileMetaData().getSchema();
      for (org.apache.parquet.schema.Type field : schema.getFields()) {
        if (field.getName().equalsIgnoreCase(column) && field.isPrimitive()
            && field.asPrimitiveType().getPrimitiveTypeName()
                == org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.INT96) {
          String zone = footer.getFileMetaData().getKeyValueMetaData().get("writer.time.zone");
          return java.time.ZoneId.of(zone == null ? "UTC" : zone);
        }
      }
      return null;
    }

    private static List<FileStatus> visibleFiles(HiveTableView.DataDirectory dir, DataFileSystems fileSystems)
        throws IOException {
      FileSystem fs = fileSystems.of(dir.path());
      FileStatus[] children;
      try {
        children = fs.listStatus(dir.path());
      } catch (FileNotFoundException e) {
        return List.of();
      }
      List<FileStatus> files = new ArrayList<>();
      for (FileStatus child : children) {
        String name = child.getPath().getName();
        if (child.isFile() && !name.startsWith(".") && !name.startsWith("_")) {
          files.add(child);
        }
      }
      return files;
    }

    private void closeCurrent() throws IOException {
      if (current != null) {
        current.close();
        current = null;
      }
    }

    @Override
    public void close() throws IOException {
      values = Collections.emptyIterator();
      try {
        closeCurrent();
      } finally {
        fileSystems.close();
      }
    }
  }
}
