package dev.lakecommit.ingest.cli;

/** What kind of table the tool writes, reads back and cleans up ({@code --target}). */
public enum TableKind {
  /** An Iceberg table in any Iceberg catalog (the default): one snapshot per checkpoint. */
  ICEBERG,
  /** A Hive table (Parquet) in a Hive Metastore: one partition batch per checkpoint, through hive-sink. */
  HIVE
}
