package dev.lakecommit.ingest.source;

import java.io.Closeable;
import java.io.IOException;
import org.apache.iceberg.data.Record;

/** The records of one input file, from a position in it; used by one {@link FileSource} reader. */
interface FileRecords extends Closeable {

  /**
   * The next record, or null at the end of the file.
   *
   * @throws BadRecordException for input that does not fit, after consuming it: the next call goes on after it,
   *     unless {@link BadRecordException#endsFile()}, when nothing more can be read from this file
   */
  Record next() throws IOException;

  /** Lines: the byte offset where the next unread line starts; records: the records consumed. */
  long offset();

  /** Lines or records consumed: the 1-based number of the last one. */
  long count();

  /** Lines: the checksum of the bytes before {@link #offset()} (see {@code TextRecords#checksum()}); records: 0. */
  default long checksum() {
    return 0;
  }
}
