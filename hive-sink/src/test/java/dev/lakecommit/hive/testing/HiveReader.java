package dev.lakecommit.hive.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat;
import org.apache.hadoop.hive.ql.io.parquet.read.DataWritableReadSupport;
import org.apache.hadoop.hive.ql.io.parquet.read.ParquetRecordReaderWrapper;
import org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe;
import org.apache.hadoop.hive.serde.serdeConstants;
import org.apache.hadoop.hive.serde2.ColumnProjectionUtils;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorUtils;
import org.apache.hadoop.hive.serde2.objectinspector.StructObjectInspector;
import org.apache.hadoop.io.ArrayWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;
import org.apache.parquet.hadoop.ParquetInputFormat;

/**
 * A table read by Hive 2.3's own Parquet reader ({@code MapredParquetInputFormat} and {@code ParquetHiveSerDe}, from
 * hive-exec) as a Hive query reads it, by code that knows nothing of Lakecommit: the table's columns from the files
 * of the partitions the metastore lists, then the partition's values. Needs hive-exec's core jar on the class path.
 */
public final class HiveReader {
  private HiveReader() {}

  /** Every row: the table's columns as the metastore describes them, then the partition values. */
  public static List<List<Object>> read(IMetaStoreClient client, Configuration conf, String database, String table)
      throws Exception {
    Table t = client.getTable(database, table);
    List<FieldSchema> columns = t.getSd().getCols();
    Properties props = new Properties();
    props.setProperty(serdeConstants.LIST_COLUMNS, String.join(",", columns.stream().map(FieldSchema::getName)
        .toList()));
    props.setProperty(serdeConstants.LIST_COLUMN_TYPES,
        String.join(":", columns.stream().map(FieldSchema::getType).toList()));
    JobConf job = new JobConf(conf);
    props.forEach((k, v) -> job.set((String) k, (String) v));
    ColumnProjectionUtils.setReadAllColumns(job);
    ParquetHiveSerDe serde = new ParquetHiveSerDe();
    serde.initialize(job, props);
    StructObjectInspector inspector = (StructObjectInspector) serde.getObjectInspector();

    List<List<Object>> rows = new ArrayList<>();
    List<String> names = client.listPartitionNames(database, table, (short) -1);
    for (Partition partition : client.getPartitionsByNames(database, table, names)) {
      JobConf partJob = new JobConf(job);
      FileInputFormat.setInputPaths(partJob, new Path(partition.getSd().getLocation()));
      MapredParquetInputFormat format = new MapredParquetInputFormat();
      for (InputSplit split : format.getSplits(partJob, 1)) {
        // What format.getRecordReader returns for a non-vectorized read (its check for vectorization loads Hive's
        // query-plan utilities, which need --add-opens on Java 17; the reader itself does not).
        RecordReader<NullWritable, ArrayWritable> reader = new ParquetRecordReaderWrapper(
            new ParquetInputFormat<>(DataWritableReadSupport.class), split, partJob, Reporter.NULL);
        try {
          NullWritable key = reader.createKey();
          ArrayWritable value = reader.createValue();
          while (reader.next(key, value)) {
            Object row = serde.deserialize(value);
            @SuppressWarnings("unchecked")
            List<Object> javaRow = new ArrayList<>((List<Object>) ObjectInspectorUtils.copyToStandardJavaObject(
                row, inspector));
            javaRow.addAll(partition.getValues());
            rows.add(javaRow);
          }
        } finally {
          reader.close();
        }
      }
    }
    return rows;
  }
}
