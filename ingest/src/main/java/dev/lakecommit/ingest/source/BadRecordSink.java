package dev.lakecommit.ingest.source;

import java.io.IOException;

/**
 * Where a {@link FileSource} hands input it cannot turn into a record, instead of failing. The source skips a
 * record only after handing it here; it never skips silently.
 */
public interface BadRecordSink extends AutoCloseable {

  /**
   * Records one rejected input. Called by the reader's thread, in input order; a record replayed after a restore
   * (it came after the restored position) is rejected again, so a sink may see it once per attempt.
   *
   * @param file the input file's location
   * @param lineOrRecord the 1-based line (JSON, CSV) or record number (Parquet, Avro); 0 for the whole file
   * @param reason why, naming the field where there is one
   * @param rawText the input as text (the line or CSV record; empty for binary formats and whole files)
   * @throws IOException if it cannot be recorded; the reader fails with it rather than skip unrecorded input
   */
  void reject(String file, long lineOrRecord, String reason, String rawText) throws IOException;

  /** How many rejections this sink has recorded. */
  long count();

  /** Flushes and releases what it holds. */
  @Override
  void close() throws IOException;
}
