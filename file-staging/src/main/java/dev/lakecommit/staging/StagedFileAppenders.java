package dev.lakecommit.staging;

import java.io.IOException;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.FileAppender;
import org.apache.iceberg.io.OutputFile;

/**
 * Opens the Parquet appender of one staged data file, for sinks whose readers expect another layout than
 * Iceberg's Parquet writer gives (see {@link StagingWriterConfig.Builder#appenders}).
 */
@FunctionalInterface
public interface StagedFileAppenders {
  /**
   * Called by a writer when it opens a new staged file. The appender receives records of the writer's whole
   * schema; what it writes of them is its own choice. Its {@code metrics()} must at least count the records.
   *
   * @throws IOException if the file cannot be created; the writer fails as for any staging I/O error
   */
  FileAppender<Record> open(OutputFile file) throws IOException;
}
