package dev.lakecommit.hive;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.hadoop.HadoopInputFile;
import org.apache.iceberg.hadoop.HadoopOutputFile;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileAppender;
import org.apache.iceberg.mapping.MappingUtil;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.parquet.ParquetSchemaUtil;
import org.apache.iceberg.types.Types;
import org.apache.parquet.hadoop.ParquetFileReader;

/**
 * Rewrites a partition's small files into one file, row by row, with the sink's own appender: the same Parquet
 * as a checkpoint's staged files (data columns only, INT96 or INT64 timestamps per the table, the table's codec).
 * Each source file is read with its own schema and matched to the table's columns by name (a column a file lacks is
 * null). Timestamps are read as the instants stored and written as the same instants, so INT96 values keep their
 * bytes.
 */
final class MergeWriter {
  private final HiveTable table;
  private final Configuration conf;

  MergeWriter(HiveTable table, Configuration conf) {
    this.table = table;
    this.conf = conf;
  }

  /**
   * Writes the rows of {@code sources}, in order, to {@code target}, with the checkpoints they came from in its
   * footer ({@link CheckpointRuns}); returns the rows written.
   *
   * @param jobs the ids of the jobs that wrote the table (their files' names tell the checkpoint)
   */
  long merge(List<FileStatus> sources, Path target, Collection<String> jobs) throws IOException {
    List<Source> read = new ArrayList<>();
    for (FileStatus source : sources) {
      if (source.getLen() > 0) {
        read.add(Source.open(source, conf, jobs));
      }
    }
    CheckpointRuns runs = CheckpointRuns.concat(read.stream().map(Source::runs).toList());
    FileAppender<Record> appender = HiveParquetAppender.factory(table, Map.of(),
            Map.of(CheckpointRuns.FOOTER_KEY, runs.encode()), conf)
        .open(HadoopOutputFile.fromPath(target, conf));
    long rows = 0;
    try (appender) {
      for (Source source : read) {
        rows += copyRows(source, appender);
      }
    }
    if (rows != runs.rows()) {
      throw new IOException("Merging into " + target + " copied " + rows + " rows, but the sources' footers count "
          + runs.rows());
    }
    return rows;
  }

  /** A source file with its footer's schema and the checkpoints of its rows. */
  private record Source(FileStatus status, Schema schema, CheckpointRuns runs) {
    static Source open(FileStatus status, Configuration conf, Collection<String> jobs) throws IOException {
      try (ParquetFileReader reader = ParquetFileReader.open(
          org.apache.parquet.hadoop.util.HadoopInputFile.fromStatus(status, conf))) {
        return new Source(status, ParquetSchemaUtil.convert(reader.getFooter().getFileMetaData().getSchema()),
            CheckpointRuns.of(status.getPath().getName(), reader.getFooter(), jobs));
      } catch (RuntimeException e) {
        throw new IOException("Cannot read data file " + status.getPath() + " as Parquet: " + e.getMessage(), e);
      }
    }
  }

  private long copyRows(Source from, FileAppender<Record> appender) throws IOException {
    FileStatus source = from.status();
    Schema fileSchema = from.schema();
    Schema staged = table.stagedSchema();
    int[] fromFile = new int[staged.columns().size()];
    for (int i = 0; i < fromFile.length; i++) {
      Types.NestedField column = staged.columns().get(i);
      fromFile[i] = -1;
      if (table.partitionColumns().contains(column.name().toLowerCase(Locale.ROOT))) {
        continue;
      }
      for (int j = 0; j < fileSchema.columns().size(); j++) {
        if (fileSchema.columns().get(j).name().equalsIgnoreCase(column.name())) {
          fromFile[i] = j;
        }
      }
    }
    long rows = 0;
    try (CloseableIterable<Record> records = Parquet.read(HadoopInputFile.fromStatus(source, conf))
        .project(fileSchema)
        .createReaderFunc(type -> GenericParquetReaders.buildReader(fileSchema, type))
        .withNameMapping(MappingUtil.create(fileSchema))
        .build()) {
      for (Record record : records) {
        Record row = GenericRecord.create(staged);
        for (int i = 0; i < fromFile.length; i++) {
          if (fromFile[i] >= 0) {
            row.set(i, record.get(fromFile[i]));
          }
        }
        appender.add(row);
        rows++;
      }
    } catch (RuntimeException e) {
      throw new IOException("Cannot merge data file " + source.getPath() + ": " + e.getMessage(), e);
    }
    return rows;
  }
}
