/**
 * Parquet staging for Lakecommit sinks: writers that stage records as Parquet files (Iceberg's writer, so files
 * carry field ids and column metrics), fanned out by an Iceberg partition spec and rolled by size and rows, and
 * report per checkpoint a {@link dev.lakecommit.staging.StagingManifest} of {@link
 * dev.lakecommit.staging.StagedFile}s that an Iceberg or Hive committer turns into one table commit.
 *
 * <ul>
 *   <li>{@link dev.lakecommit.staging.StagingWriter} and its {@link dev.lakecommit.staging.StagingWriterConfig};
 *       inputs through an {@link dev.lakecommit.staging.InputConverter} (Iceberg records, Avro records);
 *   <li>{@link dev.lakecommit.staging.StagingLayout}: deterministic names under a per-job, per-checkpoint prefix;
 *   <li>{@link dev.lakecommit.staging.StagingCleaner}: deletes the staged leftovers of checkpoints that never
 *       completed, for the sinks' {@link dev.lakecommit.core.CommitTarget}s;
 *   <li>{@link dev.lakecommit.staging.FileIOs} and {@link dev.lakecommit.staging.FileIOBlobStore}: storage through
 *       Iceberg {@code FileIO} (local and Hadoop paths, {@code s3://} with S3FileIO, {@code s3a://}).
 * </ul>
 */
package dev.lakecommit.staging;
