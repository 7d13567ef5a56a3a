package dev.lakecommit.hive;

/** How each checkpoint changes a Hive table. */
public enum WriteMode {
  /** Add the checkpoint's files to their partitions (new partitions are created). */
  APPEND,

  /**
   * Replace every partition the checkpoint writes to with the checkpoint's files; partitions it does not write to
   * stay as they are. An unpartitioned table is replaced whole. Readers see either the old or the new files of a
   * partition, never both: the new files go to a fresh directory and the partition's location is switched to it
   * before the old files are deleted.
   */
  INSERT_OVERWRITE
}
