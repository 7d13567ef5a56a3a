package dev.lakecommit.spark;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.util.Objects;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Structured Streaming {@code foreachBatch} function that writes each micro-batch as one commit keyed by
 * {@code (job id, batch id + 1)}. The job id is the query's id, which Spark keeps in the checkpoint location, so a
 * query restarted on the same checkpoint location keeps its job id; a micro-batch that Spark replays after a
 * crash or a stop finds its commit in the table and writes nothing.
 *
 * <p>Runs on the driver, on the query's thread. One function per query.
 */
public final class MicroBatchWriter implements VoidFunction2<Dataset<Row>, Long> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(MicroBatchWriter.class);

  /** The local property in which Spark gives a micro-batch its query's id (stable across restarts). */
  static final String QUERY_ID_PROPERTY = "sql.streaming.queryId";

  private final Target target;
  private final String jobId;
  private final transient RetryPolicy retry;
  /** The last batch this function committed in this JVM; leftovers are swept when a batch does not follow it. */
  private transient long lastBatch = Long.MIN_VALUE;
  private transient String lastJob;

  private MicroBatchWriter(Target target, String jobId, RetryPolicy retry) {
    this.target = target;
    this.jobId = jobId;
    this.retry = retry;
  }

  /**
   * Writes one micro-batch, or nothing if the table already holds it.
   *
   * @throws IllegalStateException if the commit failed (the query stops; restart it to retry the batch), or if
   *     no job id was set and the function is not called by a streaming query
   */
  @Override
  public void call(Dataset<Row> batch, Long batchId) {
    Objects.requireNonNull(batchId, "batchId");
    if (batchId < 0) {
      throw new IllegalArgumentException(String.format("Invalid batch id: %s (must be >= 0)", batchId));
    }
    JobId job = jobId(batch);
    boolean follows = job.value().equals(lastJob) && batchId == lastBatch + 1;
    WriteResult result = WriteRun.execute(target, batch, job, batchId + 1,
        retry == null ? RetryPolicy.defaults() : retry, !follows);
    LOG.info("Micro-batch {} of job {} to {}: {} ({} records)", batchId, job, target.describe(),
        result.status(), result.records());
    lastJob = job.value();
    lastBatch = batchId;
  }

  private JobId jobId(Dataset<Row> batch) {
    if (jobId != null) {
      return JobId.of(jobId);
    }
    String queryId = batch.sparkSession().sparkContext().getLocalProperty(QUERY_ID_PROPERTY);
    if (queryId == null) {
      throw new IllegalStateException("No streaming query id (local property " + QUERY_ID_PROPERTY + "): call"
          + " the function from DataStreamWriter.foreachBatch, or set a job id with jobId(\"...\")");
    }
    return JobId.of("spark-" + queryId);
  }

  /** Chooses the job id and retries, then the target. */
  public static final class Builder {
    private String jobId;
    private RetryPolicy retry;

    Builder() {}

    /**
     * A fixed job id instead of the query's id: use it to keep the commits' identity when the checkpoint location
     * is replaced, or to call the function outside a streaming query.
     *
     * @throws IllegalArgumentException if the id is not a valid job id
     */
    public Builder jobId(String id) {
      this.jobId = JobId.of(id).value();
      return this;
    }

    /** How each commit is retried on conflicts and unknown outcomes (default {@link RetryPolicy#defaults()}). */
    public Builder retryPolicy(RetryPolicy policy) {
      this.retry = Objects.requireNonNull(policy, "retryPolicy");
      return this;
    }

    /** The function, writing to an Iceberg table (the supplier runs now, and where the batches are written). */
    public MicroBatchWriter iceberg(SerializableSupplier<IcebergSinkConfig> config) {
      return new MicroBatchWriter(new IcebergTarget(config), jobId, retry);
    }

    /** The function, writing to a Hive table through its metastore. */
    public MicroBatchWriter hive(SerializableSupplier<HiveSinkConfig> config) {
      return new MicroBatchWriter(new HiveTarget(config), jobId, retry);
    }
  }
}
