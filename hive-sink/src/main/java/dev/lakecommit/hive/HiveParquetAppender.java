package dev.lakecommit.hive;

import dev.lakecommit.staging.StagedFileAppenders;
import java.io.IOException;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.FileAppender;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.DelegatingPositionOutputStream;

/**
 * A staged data file in Hive's Parquet conventions ({@link HiveParquetWriteSupport}), written by parquet-hadoop's
 * own writer. Its metrics count records only: Hive keeps no column statistics of the sink's files.
 */
final class HiveParquetAppender implements FileAppender<Record> {
  private final ParquetWriter<Record> writer;
  private final Output output;
  private long records;
  private boolean closed;

  private HiveParquetAppender(ParquetWriter<Record> writer, Output output) {
    this.writer = writer;
    this.output = output;
  }

  /**
   * Appenders of staged files of {@code table}, with the row-group and page sizes of {@code writeProperties}
   * (Iceberg's {@code write.parquet.*} keys) and the table's codec.
   */
  static StagedFileAppenders factory(HiveTable table, Map<String, String> writeProperties, Configuration conf) {
    return factory(table, writeProperties, Map.of(), conf);
  }

  /** As {@link #factory(HiveTable, Map, Configuration)}, with {@code footer} in every file's key-value metadata. */
  static StagedFileAppenders factory(HiveTable table, Map<String, String> writeProperties,
      Map<String, String> footer, Configuration conf) {
    CompressionCodecName codec = CompressionCodecName.valueOf(table.fileFormat().codec().toUpperCase(Locale.ROOT));
    long rowGroupSize = Long.parseLong(writeProperties.getOrDefault(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES,
        String.valueOf(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES_DEFAULT)));
    int pageSize = Integer.parseInt(writeProperties.getOrDefault(TableProperties.PARQUET_PAGE_SIZE_BYTES,
        String.valueOf(TableProperties.PARQUET_PAGE_SIZE_BYTES_DEFAULT)));
    return file -> {
      Output output = new Output(file);
      ParquetWriter<Record> writer = new Builder(output,
          new HiveParquetWriteSupport(table.stagedSchema(), table.partitionColumns(), table.fileFormat(), footer))
          .withConf(conf)
          .withWriteMode(ParquetFileWriter.Mode.CREATE)
          .withCompressionCodec(codec)
          .withRowGroupSize(rowGroupSize)
          .withPageSize(pageSize)
          .build();
      return new HiveParquetAppender(writer, output);
    };
  }

  @Override
  public void add(Record record) {
    try {
      writer.write(record);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException("Cannot write to " + output.getPath(), e);
    }
    records++;
  }

  @Override
  public Metrics metrics() {
    return new Metrics(records, null, null, null, null);
  }

  @Override
  public long length() {
    return closed ? output.length : writer.getDataSize();
  }

  @Override
  public List<Long> splitOffsets() {
    return closed ? writer.getFooter().getBlocks().stream().map(BlockMetaData::getStartingPos).sorted().toList()
        : null;
  }

  @Override
  public void close() throws IOException {
    if (!closed) {
      writer.close();
      closed = true;
    }
  }

  /** A Parquet writer of records through the Hive write support (package-private for tests). */
  static final class Builder extends ParquetWriter.Builder<Record, Builder> {
    private final HiveParquetWriteSupport support;

    Builder(org.apache.parquet.io.OutputFile file, HiveParquetWriteSupport support) {
      super(file);
      this.support = support;
    }

    @Override
    protected Builder self() {
      return this;
    }

    @Override
    protected WriteSupport<Record> getWriteSupport(Configuration conf) {
      return support;
    }
  }

  /** An Iceberg output file as parquet-hadoop writes to it; remembers the file's length at close. */
  private static final class Output implements org.apache.parquet.io.OutputFile {
    private final OutputFile file;
    private long length;

    Output(OutputFile file) {
      this.file = file;
    }

    @Override
    public org.apache.parquet.io.PositionOutputStream create(long blockSizeHint) {
      return wrap(file.create());
    }

    @Override
    public org.apache.parquet.io.PositionOutputStream createOrOverwrite(long blockSizeHint) {
      return wrap(file.createOrOverwrite());
    }

    private org.apache.parquet.io.PositionOutputStream wrap(PositionOutputStream stream) {
      return new DelegatingPositionOutputStream(stream) {
        @Override
        public long getPos() throws IOException {
          return stream.getPos();
        }

        @Override
        public void close() throws IOException {
          length = stream.getPos();
          super.close();
        }
      };
    }

    @Override
    public boolean supportsBlockSize() {
      return false;
    }

    @Override
    public long defaultBlockSize() {
      return 0;
    }

    @Override
    public String getPath() {
      return file.location();
    }
  }
}
