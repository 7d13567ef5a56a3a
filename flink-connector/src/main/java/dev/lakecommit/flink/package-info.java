/**
 * Lakecommit inside Flink (Sink V2, Flink 2.1): {@link dev.lakecommit.flink.LakecommitFlinkSink} writes
 * {@code RowData} to an Iceberg or a Hive table, one idempotent table commit per Flink checkpoint.
 *
 * <p>Topology: writers ({@code CommittingSinkWriter}) stage Parquet files and emit their staging manifests right
 * before each checkpoint barrier; one aggregation operator (parallelism 1) combines every writer's manifests of
 * the checkpoint into one commit that carries its Lakecommit checkpoint id; Flink's committer operator hands it to
 * the target's aggregated committer once the checkpoint is complete. The commit protocol itself (idempotency
 * check inside every attempt, watermarks, settling unknown outcomes) lives in the iceberg-sink and hive-sink
 * modules; this package only maps Flink's lifecycle onto it.
 *
 * <p>Every submission of a job claims a run epoch for its job id in the table, on the client, when Flink translates
 * the sink; writers name files with it and Flink's attempt number, and the committer commits only while the table
 * holds it (DESIGN.md rules 10 and 11). What this package asks of the table itself goes through the sink's
 * {@link dev.lakecommit.core.CommitTarget}.
 */
package dev.lakecommit.flink;
