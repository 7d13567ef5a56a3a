package dev.lakecommit.flink;

import java.io.Closeable;

/**
 * What the process-level scenario ({@link FlinkKafkaProcessIT#run}) polls of the table its job writes while the job
 * runs, through a catalog or metastore client of the test's own: an Iceberg table ({@link LakeTableView}) or a
 * Hive table ({@link HiveTableView}).
 */
interface CommittedTable extends Closeable {
  /**
   * Rows the table holds so far; 0 before the table exists.
   *
   * @throws RuntimeException if the catalog or metastore does not answer (callers polling through an outage treat
   *     it as "not there yet")
   */
  long committedRows();

  /** The last checkpoint of {@code jobId} the table holds (Lakecommit's watermark); 0 if none. */
  long watermark(String jobId);
}
