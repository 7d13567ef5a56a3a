package dev.lakecommit.iceberg;

/** How a checkpoint's files change the table. Each checkpoint is one snapshot whatever the mode. */
public enum CommitMode {
  /** Add the files (a fast append). */
  APPEND,
  /** Replace every partition that the checkpoint writes to (dynamic partition overwrite). */
  OVERWRITE_PARTITIONS,
  /** Delete the rows matching the configured filter, then add the files, in one snapshot. */
  OVERWRITE_BY_FILTER
}
