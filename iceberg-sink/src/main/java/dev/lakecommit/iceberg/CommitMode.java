package dev.lakecommit.iceberg;

/** How a checkpoint's files change the table. Each checkpoint is one snapshot whatever the mode. */
public enum CommitMode {
  /** Add the files (a fast append). */
  APPEND,
  /** Replace every partition that the checkpoint writes to (dynamic partition overwrite). */
  OVERWRITE_PARTITIONS,
  /** Delete the rows matching the configured filter, then add the files, in one snapshot. */
  OVERWRITE_BY_FILTER,
  /**
   * Insert or replace rows by a key (the configured key columns, or the table's identifier fields): writers stage
   * equality deletes of each key they write plus the new rows, and each checkpoint is one row delta. Needs a
   * format-version 2 table and records routed by key ({@link IcebergSink#keyRouter()}).
   */
  UPSERT
}
