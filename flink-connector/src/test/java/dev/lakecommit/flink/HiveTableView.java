package dev.lakecommit.flink;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.hive.CheckpointRuns;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.LongStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.hadoop.HadoopInputFile;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.mapping.MappingUtil;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.parquet.ParquetSchemaUtil;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.thrift.TException;

/**
 * The test's own view of a job's Hive table, through metastore clients of its own (the TaskManagers have theirs):
 * rows committed so far (the partitions' {@code numRows}, which the sink records with each commit), the job's
 * watermark (a table parameter), and the {@link #audit} against the topic, which reads what a Hive reader reads:
 * every visible file of every partition the metastore lists.
 */
final class HiveTableView implements CommittedTable {
  private final HiveMetastoreServer hms;
  private final String database;
  private final String table;

  /** The table {@code database.table} of the metastore {@code hms}. */
  HiveTableView(HiveMetastoreServer hms, String database, String table) {
    this.hms = hms;
    this.database = database;
    this.table = table;
  }

  String name() {
    return database + "." + table;
  }

  /** The sum of the listed partitions' {@code numRows}; 0 before the table exists. */
  @Override
  public long committedRows() {
    return withClient(client -> {
      long rows = 0;
      for (Partition partition : client.listPartitions(database, table, (short) -1)) {
        String numRows = partition.getParameters() == null ? null : partition.getParameters().get("numRows");
        if (numRows == null) {
          throw new IllegalStateException("Partition " + partition.getValues() + " of " + name() + " has no"
              + " numRows statistic");
        }
        rows += Long.parseLong(numRows);
      }
      return rows;
    });
  }

  /** The table parameter {@code lakecommit.committed.<jobId>}; 0 before the table or the job's first commit. */
  @Override
  public long watermark(String jobId) {
    return withClient(client -> {
      String value = client.getTable(database, table).getParameters().get(CommitId.WATERMARK_KEY_PREFIX + jobId);
      return value == null ? 0 : Long.parseLong(value);
    });
  }

  @Override
  public void close() {
    // a client per call: nothing held
  }

  private interface MetastoreCall {
    long apply(IMetaStoreClient client) throws TException;
  }

  /** A call through a new client: one that outlives a metastore restart would fail until it reconnects. */
  private long withClient(MetastoreCall call) {
    IMetaStoreClient client = null;
    try {
      client = hms.newRetryingClient();
      return call.apply(client);
    } catch (NoSuchObjectException notYet) {
      return 0;
    } catch (TException e) {
      throw new IllegalStateException("Cannot read " + name() + " from the metastore " + hms.uri() + ": " + e, e);
    } finally {
      if (client != null) {
        client.close();
      }
    }
  }

  /**
   * The table against the topic, as {@link LakeTableView.Audit} does for an Iceberg table: every row of every
   * visible file (names not starting with {@code .} or {@code _}) of every partition the metastore lists, by id
   * and event time. Hive keeps no commit history, so the commit order is the checkpoint order of the files' names
   * ({@code <job>-<checkpoint>-e<epoch>-...}; a merged file's footer lists its checkpoints: {@link
   * CheckpointRuns}): a row is out of order if its event time is below the largest event time of an earlier
   * checkpoint. Checkpoints that add out-of-order rows are printed.
   *
   * @throws AssertionError if a visible file holds rows that no checkpoint of {@code jobId} wrote (their commit
   *     order is unknown; the table has one writer)
   */
  LakeTableView.Audit audit(String jobId, Map<Long, Long> topic) throws IOException {
    Configuration conf = hms.hiveConf();
    // event times per checkpoint, in file order; ids counted as read
    TreeMap<Long, LongStream.Builder> eventTimes = new TreeMap<>();
    Map<Long, Integer> seen = new HashMap<>();
    long rows = 0;
    long unknown = 0;
    for (FileStatus file : visibleFiles(conf)) {
      if (file.getLen() == 0) {
        continue;
      }
      ParquetMetadata footer;
      try (ParquetFileReader reader =
          ParquetFileReader.open(org.apache.parquet.hadoop.util.HadoopInputFile.fromStatus(file, conf))) {
        footer = reader.getFooter();
      }
      Iterator<CheckpointRuns.Run> runs = CheckpointRuns.of(file.getPath().getName(), footer, List.of(jobId))
          .runs().iterator();
      Schema fileSchema = ParquetSchemaUtil.convert(footer.getFileMetaData().getSchema());
      Schema projection = fileSchema.select("id", "event_time");
      CheckpointRuns.Run run = null;
      long left = 0;
      try (CloseableIterable<Record> records = Parquet.read(HadoopInputFile.fromStatus(file, conf))
          .project(projection)
          .createReaderFunc(type -> GenericParquetReaders.buildReader(projection, type))
          .withNameMapping(MappingUtil.create(fileSchema))
          .build()) {
        for (Record record : records) {
          while (left == 0) {
            if (!runs.hasNext()) {
              throw new AssertionError("Data file " + file.getPath() + " of " + name() + " holds more rows than"
                  + " its checkpoints account for");
            }
            run = runs.next();
            left = run.rows();
          }
          left--;
          if (!jobId.equals(run.job())) {
            throw new AssertionError("Data file " + file.getPath() + " of " + name() + " holds " + run.rows()
                + " rows that no checkpoint of job " + jobId + " wrote");
          }
          rows++;
          long id = (Long) record.getField("id");
          seen.merge(id, 1, Integer::sum);
          if (!topic.containsKey(id)) {
            unknown++;
          }
          eventTimes.computeIfAbsent(run.checkpointId(), c -> LongStream.builder())
              .add((Long) record.getField("event_time"));
        }
      }
    }
    long outOfOrder = 0;
    long maxLateness = 0;
    long committedMax = Long.MIN_VALUE;
    for (Map.Entry<Long, LongStream.Builder> checkpoint : eventTimes.entrySet()) {
      long checkpointMax = committedMax;
      long lateBefore = outOfOrder;
      for (long eventTime : checkpoint.getValue().build().toArray()) {
        if (eventTime < committedMax) {
          outOfOrder++;
          maxLateness = Math.max(maxLateness, committedMax - eventTime);
        }
        checkpointMax = Math.max(checkpointMax, eventTime);
      }
      if (outOfOrder > lateBefore) {
        System.out.printf("audit of %s: checkpoint %d adds %d rows out of order, event times up to %d%n", name(),
            checkpoint.getKey(), outOfOrder - lateBefore, checkpointMax);
      }
      committedMax = checkpointMax;
    }
    long duplicates = seen.values().stream().mapToLong(n -> n - 1).sum();
    long losses = topic.keySet().stream().filter(id -> !seen.containsKey(id)).count();
    return new LakeTableView.Audit(rows, eventTimes.size(), duplicates, losses, unknown, outOfOrder, maxLateness,
        "checkpoints");
  }

  /** The visible files of the partitions the metastore lists, as a Hive reader takes them. */
  private List<FileStatus> visibleFiles(Configuration conf) throws IOException {
    List<Partition> partitions;
    IMetaStoreClient client = null;
    try {
      client = hms.newRetryingClient();
      partitions = client.listPartitions(database, table, (short) -1);
    } catch (TException e) {
      throw new IOException("Cannot list the partitions of " + name() + ": " + e.getMessage(), e);
    } finally {
      if (client != null) {
        client.close();
      }
    }
    List<FileStatus> files = new ArrayList<>();
    for (Partition partition : partitions) {
      Path dir = new Path(partition.getSd().getLocation());
      FileSystem fs = dir.getFileSystem(conf);
      for (FileStatus file : fs.listStatus(dir)) {
        String fileName = file.getPath().getName();
        if (file.isFile() && !fileName.startsWith(".") && !fileName.startsWith("_")) {
          files.add(file);
        }
      }
    }
    return files;
  }
}
