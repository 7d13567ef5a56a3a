/**
 * Lakecommit inside Spark 4.1: {@link dev.lakecommit.spark.LakecommitSpark#write} writes a DataFrame as one
 * idempotent commit keyed by a write id, and {@link dev.lakecommit.spark.LakecommitSpark#foreachBatch} writes each
 * Structured Streaming micro-batch as one commit keyed by (query id, batch id + 1).
 *
 * <p>How a write runs: a Spark DataSource V2 batch write ({@link dev.lakecommit.spark.LakecommitSource}). Each
 * task attempt stages Parquet files with a core {@code SinkWriter} (file names carry Spark's unique task attempt
 * id), and on success returns its staging manifest, serialized with the sink's versioned serializer; Spark's
 * commit coordinator lets one attempt per partition succeed. The driver combines the manifests of those attempts
 * into one commit of the sink's aggregated committer (one Iceberg snapshot, one Hive partition batch), which checks
 * the table for the same (job, checkpoint) inside every attempt. Before a write the driver looks the commit up in
 * the table: a write that is already committed runs no Spark job at all. Files of failed attempts are deleted by
 * the attempt itself, by the driver when the write fails before its commit, by a sweep of the checkpoint's prefix
 * after the commit, and, after a crash, by the next run of the same write id or query.
 *
 * <p>The adapter holds no commit logic of its own: identity, retries and idempotency are commit-core's and the
 * sinks'.
 */
package dev.lakecommit.spark;
