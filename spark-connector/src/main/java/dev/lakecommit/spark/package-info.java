/**
 * Lakecommit inside Spark 4.1: {@link dev.lakecommit.spark.LakecommitSpark#write} writes a DataFrame as one
 * idempotent commit keyed by a write id, and {@link dev.lakecommit.spark.LakecommitSpark#foreachBatch} writes each
 * Structured Streaming micro-batch as one commit keyed by (job id, checkpoint id).
 *
 * <p>How Spark's ids map onto the core's (DESIGN.md rules 10-11): a batch write is checkpoint 1 of its write id. A
 * micro-batch of a query whose job id is its own ({@code spark-<query id>}) is checkpoint batch id + 1. Under a
 * pinned job id, queries write one after another, and {@link dev.lakecommit.spark.BatchIds} maps each query's batch
 * ids onto the job's checkpoints: a restarted query (same checkpoint location, same query id) keeps its mapping, so a
 * replayed batch maps to the checkpoint it had and is skipped; a new query (a new checkpoint location) starts just
 * above what the table holds for the job, so none of its batches is taken for committed. The table stores the
 * mapping with the commits. Every {@code save()} and every start of a query is a run that claims a new epoch in the
 * table before it stages anything; its staged names carry the epoch, its commits are refused once a newer run of the
 * same job claimed (a second save of one write id, a second query on one job id fences the first), and it deletes
 * only what it or fenced older runs staged above the table's last checkpoint of the job.
 *
 * <p>How a write runs: a Spark DataSource V2 batch write ({@link dev.lakecommit.spark.LakecommitSource}). Each task
 * attempt stages Parquet files with a core {@code SinkWriter} (file names carry the run's epoch and Spark's unique
 * task attempt id), and on success returns its staging manifest, serialized with the sink's versioned serializer;
 * Spark's commit coordinator lets one attempt per partition succeed. The driver combines the manifests of those
 * attempts into one commit of the sink's aggregated committer (one Iceberg snapshot, one Hive partition batch; for
 * several tables one cut, after a Spark job per DataFrame, their tasks numbered one after another), which checks the
 * table for the same (job, checkpoint) and the run's epoch inside every attempt. Before a write the driver looks the
 * commit up in the table: a write that is already committed runs no Spark job at all. Files of failed attempts are
 * deleted by the attempt itself, by the driver when the write fails before its commit (its own epoch's only), and,
 * after a crash, by the next run of the same write id or query.
 *
 * <p>The adapter holds no commit logic of its own: identity, retries, idempotency and fencing are commit-core's and
 * the sinks'. A sink without a {@code CommitTarget} of its own (Hive, for now) runs unfenced.
 */
package dev.lakecommit.spark;
