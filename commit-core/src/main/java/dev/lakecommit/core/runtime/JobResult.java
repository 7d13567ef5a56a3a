package dev.lakecommit.core.runtime;

/**
 * What one run of a job did.
 *
 * @param attempt the attempt number of this run
 * @param restoredCheckpointId the checkpoint it resumed from, 0 for a fresh start
 * @param lastCheckpointId the last durable checkpoint when it ended
 * @param checkpoints checkpoints this run made durable
 * @param commits commits this run applied
 * @param skippedCommits commits this run found already applied
 * @param recordsRead records this run read from the source
 * @param recordCount records read by the job over all its runs
 * @param commitRetries commit attempts of this run that failed and were retried or given up
 * @param commitRetryNanos time this run spent on commits after their first failed attempt (backoff included)
 */
public record JobResult(
    int attempt,
    long restoredCheckpointId,
    long lastCheckpointId,
    int checkpoints,
    int commits,
    int skippedCommits,
    long recordsRead,
    long recordCount,
    int commitRetries,
    long commitRetryNanos) {}
