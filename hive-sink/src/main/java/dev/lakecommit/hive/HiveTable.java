package dev.lakecommit.hive;

import java.util.List;
import java.util.Objects;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;

/**
 * What the sink knows of its table once it is checked: where it is, its partition keys, and the schema and
 * identity partition spec writers stage files with.
 *
 * @param database the database
 * @param name the table
 * @param baseLocation the table's own location (for an overwritten unpartitioned table, not its current data
 *     directory): staging and overwrite directories go under it
 * @param partitionColumns the partition keys, lower case, in order
 * @param stagedSchema the schema of staged files: the table's columns and its partition columns
 * @param spec identity partitions on {@code partitionColumns}, bound to {@code stagedSchema}
 * @param fileFormat how data files are written (codec, timestamps), from the table's parameters
 */
record HiveTable(
    String database, String name, Path baseLocation, List<String> partitionColumns, Schema stagedSchema,
    PartitionSpec spec, HiveFileFormat fileFormat) {

  HiveTable {
    Objects.requireNonNull(database, "database");
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(baseLocation, "baseLocation");
    partitionColumns = List.copyOf(partitionColumns);
    Objects.requireNonNull(stagedSchema, "stagedSchema");
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(fileFormat, "fileFormat");
  }

  boolean isPartitioned() {
    return !partitionColumns.isEmpty();
  }

  /** Where writers stage files: {@code <base location>/.lakecommit-staging}. */
  Path stagingRoot() {
    return new Path(baseLocation, HivePaths.STAGING_DIR);
  }

  @Override
  public String toString() {
    return database + "." + name;
  }
}
