package dev.lakecommit.spark;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Structured Streaming {@code foreachBatch} function that writes each micro-batch as one commit of a core
 * checkpoint id: of one table, or of several Iceberg tables as one cut ({@link Builder#icebergTables}: the batch's
 * rows routed by a column, or a DataFrame per table through {@link #writeTables}). The job id is the query's id, which
 * Spark keeps in the checkpoint location (checkpoint = batch id + 1), or a pinned one ({@link Builder#jobId}), under
 * which any number of queries may write one after another: their batch ids are mapped so that a replayed batch of a
 * query maps to the checkpoint it had (the table finds it committed and nothing is written) and the batches of a new
 * query map above everything the table holds for the job ({@link BatchIds}, stored in the table with the commits).
 *
 * <p>Each start of the query is a run: at its first micro-batch it claims a new run epoch for the job in the table
 * (fencing any other run of the job), deletes what fenced runs staged above the table's last checkpoint of the job,
 * and fixes the batch id mapping; every commit of the run is fenced at its epoch.
 *
 * <p>Runs on the driver, on the query's thread. One function per query.
 */
public final class MicroBatchWriter implements VoidFunction2<Dataset<Row>, Long> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(MicroBatchWriter.class);

  /** The local property in which Spark gives a micro-batch its query's id (stable across restarts). */
  static final String QUERY_ID_PROPERTY = "sql.streaming.queryId";
  /** The local property in which Spark gives a micro-batch the id of this start of its query. */
  static final String RUN_ID_PROPERTY = "sql.streaming.runId";
  /** Where Spark's streaming execution also puts the run id (the job group of its jobs). */
  private static final String JOB_GROUP_PROPERTY = "spark.jobGroup.id";

  /** Where the rows of one DataFrame go; null for tables that name no route (each DataFrame names its table). */
  private final SinkRecipe target;
  /** The tables of a cut, or null for one table. */
  private final SparkTables tables;
  /** The recipe of each table a DataFrame of {@link #writeTables} went to, kept so its sink is built once. */
  private final HashMap<String, TablesRecipe> partRecipes = new HashMap<>();
  private final String jobId;
  private final transient RetryPolicy retry;
  /** The run this function is writing for; replaced when the query is started again. */
  private transient QueryRun run;

  private MicroBatchWriter(SinkRecipe target, SparkTables tables, String jobId, RetryPolicy retry) {
    this.target = target;
    this.tables = tables;
    this.jobId = jobId;
    this.retry = retry;
  }

  /**
   * Writes one micro-batch, or nothing if the table already holds it (of tables: the rows of the batch, each to the
   * table its column names, as one cut).
   *
   * @throws IllegalStateException if the commit failed (the query stops; restart it to retry the batch), if a newer
   *     run of the same job fenced this one, or if no job id was set and the function is not called by a streaming
   *     query
   * @throws IllegalArgumentException if the function writes tables that name no route for the rows: use {@link
   *     #writeTables}
   */
  @Override
  public void call(Dataset<Row> batch, Long batchId) {
    Objects.requireNonNull(batch, "batch");
    if (target == null) {
      throw new IllegalArgumentException("The tables of " + describe() + " name no route for the rows of one"
          + " DataFrame: give SparkTables.Builder#routeByColumn, or call writeTables(batchId, tables) with a"
          + " DataFrame per table");
    }
    write(List.of(new WriteRun.Part(target, batch)), batchId);
  }

  /**
   * Writes one micro-batch of several DataFrames, each to its own table, as one cut: every table shows the batch
   * or none does; a replayed batch writes nothing. Call it from the query's own {@code foreachBatch} function with
   * the DataFrames made from the batch:
   *
   * <pre>{@code
   * MicroBatchWriter shop = LakecommitSpark.foreachBatch().jobId("shop").icebergTables(tables);
   * stream.writeStream().foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, id) -> shop.writeTables(id,
   *     Map.of("shop.orders", orders(batch), "shop.lines", lines(batch)))).start();
   * }</pre>
   *
   * @param tables the DataFrame of each table, by the table's name ({@code namespace.name})
   * @throws IllegalArgumentException if this function does not write Iceberg tables ({@link
   *     Builder#icebergTables}), no DataFrame is given, or a name is not a plain {@code namespace.name}
   * @throws IllegalStateException as {@link #call}
   */
  public void writeTables(long batchId, Map<String, Dataset<Row>> tables) {
    if (this.tables == null) {
      throw new IllegalArgumentException("writeTables writes the Iceberg tables of a cut: build the function with"
          + " icebergTables(SparkTables), not for " + target.describe());
    }
    if (tables.isEmpty()) {
      throw new IllegalArgumentException("writeTables of micro-batch " + batchId + " was given no DataFrame");
    }
    List<WriteRun.Part> parts = new ArrayList<>();
    new TreeMap<>(tables).forEach((table, data) -> parts.add(new WriteRun.Part(
        partRecipes.computeIfAbsent(table, name -> TablesRecipe.of(this.tables, name)),
        Objects.requireNonNull(data, "the DataFrame of " + table))));
    write(parts, batchId);
  }

  private void write(List<WriteRun.Part> parts, Long batchId) {
    Objects.requireNonNull(batchId, "batchId");
    if (batchId < 0) {
      throw new IllegalArgumentException(String.format("Invalid batch id: %s (must be >= 0)", batchId));
    }
    WriteRun.Part first = parts.get(0);
    Dataset<Row> batch = first.data();
    String queryId = batch.sparkSession().sparkContext().getLocalProperty(QUERY_ID_PROPERTY);
    JobId job = jobId(queryId);
    String runKey = job + "/" + queryId + "/" + runId(batch);
    if (run == null || !run.key().equals(runKey)) {
      if (run != null) {
        run.close();
      }
      run = startRun(runKey, first, job, queryId, batchId);
    }
    OptionalLong checkpoint = run.ids().checkpointOf(batchId);
    if (checkpoint.isEmpty()) {
      LOG.info("Micro-batch {} of query {} was committed to {} as job {} by an earlier run of the query ({});"
          + " skipped", batchId, queryId, describe(), job, run.ids());
      return;
    }
    WriteResult result;
    try (SinkCache.Lease sink = SinkCache.open(first.target(), batch.schema())) {
      result = WriteRun.execute(describe(), parts, sink.opened(), run.target(), checkpoint.getAsLong(),
          retry == null ? RetryPolicy.defaults() : retry, run.commitProperties());
    }
    LOG.info("Micro-batch {} of job {} to {} as checkpoint {}: {} ({} records)", batchId, job, describe(),
        checkpoint.getAsLong(), result.status(), result.records());
  }

  /** What the function writes, for messages. */
  private String describe() {
    return target != null ? target.describe() : "the Iceberg tables of catalog " + tables.catalogName();
  }

  /** Claims the run's epoch, fixes its batch id mapping and deletes what fenced runs staged. */
  private QueryRun startRun(String key, WriteRun.Part first, JobId job, String queryId, long firstBatch) {
    // held while the run lives: its target reads and sweeps through the sink's catalog
    SinkCache.Lease sink = SinkCache.open(first.target(), first.data().schema());
    SinkRecipe.Opened<?, ?> opened = sink.opened();
    TargetRun fence = null;
    try {
      fence = opened.openRun(job, describe());
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot open " + describe() + " for job " + job + ": " + e.getMessage(), e);
    } finally {
      if (fence == null) {
        sink.close();
      }
    }
    try {
      fence.claim("Spark query " + (queryId == null ? "(none)" : queryId) + ", " + RunEpoch.thisProcess());
      OptionalLong committed = fence.lastCommitted();
      BatchIds ids;
      Map<String, String> properties = Map.of();
      String query = queryId == null ? BatchIds.NO_QUERY : queryId;
      if (jobId == null) {
        ids = BatchIds.ofOwnQuery(query);
      } else {
        Optional<Map<String, String>> stored = first.target().committedProperties(opened, job,
            List.of(BatchIds.key(job)));
        if (stored.isPresent()) {
          Optional<BatchIds> previous = Optional.ofNullable(stored.get().get(BatchIds.key(job)))
              .map(value -> BatchIds.parse(job, value));
          ids = BatchIds.forRun(previous, query, firstBatch, committed);
          properties = Map.of(BatchIds.key(job), ids.value());
        } else {
          ids = unmapped(job, query, firstBatch, committed);
        }
      }
      fence.deleteOlderRuns(committed.orElse(0));
      LOG.info("Query {} writes to {} as job {} (run epoch {}), from micro-batch {}: {}", query, describe(), job,
          fence.epoch(), firstBatch, ids);
      return new QueryRun(key, sink, fence, ids, properties);
    } catch (IOException e) {
      SinkRecipe.Opened.close(fence);
      sink.close();
      throw new UncheckedIOException("Cannot start job " + job + " on " + describe() + ": " + e.getMessage(), e);
    } catch (RuntimeException e) {
      SinkRecipe.Opened.close(fence);
      sink.close();
      throw e;
    }
  }

  /**
   * A pinned job on a target that cannot store the batch id mapping with its commits: batch id + 1, which is right
   * only for the query that has always written the job. A table more than a replay ahead of the first batch shows
   * another query wrote the job: its batches would be taken for committed, so the run stops instead.
   */
  private BatchIds unmapped(JobId job, String query, long firstBatch, OptionalLong committed) {
    // Spark replays at most the last batch, and the table may be one batch ahead of Spark's commit log.
    if (committed.isPresent() && committed.getAsLong() > firstBatch + 2) {
      throw new IllegalStateException(String.format("%s holds checkpoint %s of job %s, far above micro-batch %s of"
          + " query %s: another query (an earlier checkpoint location) wrote this job, and %s cannot record which"
          + " query its checkpoints belong to, so these batches would be skipped as committed. Use a new job id for"
          + " this query", describe(), committed.getAsLong(), job, firstBatch, query, describe()));
    }
    return BatchIds.ofOwnQuery(query);
  }

  private JobId jobId(String queryId) {
    if (jobId != null) {
      return JobId.of(jobId);
    }
    if (queryId == null) {
      throw new IllegalStateException("No streaming query id (local property " + QUERY_ID_PROPERTY + "): call"
          + " the function from DataStreamWriter.foreachBatch, or set a job id with jobId(\"...\")");
    }
    return JobId.of("spark-" + queryId);
  }

  private static String runId(Dataset<Row> batch) {
    org.apache.spark.SparkContext context = batch.sparkSession().sparkContext();
    String runId = context.getLocalProperty(RUN_ID_PROPERTY);
    return runId != null ? runId : context.getLocalProperty(JOB_GROUP_PROPERTY);
  }

  /** One start of the query, as this function sees it. */
  private record QueryRun(String key, SinkCache.Lease sink, TargetRun target, BatchIds ids,
      Map<String, String> commitProperties) {

    void close() {
      SinkRecipe.Opened.close(target);
      sink.close();
    }
  }

  /** Chooses the job id and retries, then the target. */
  public static final class Builder {
    private String jobId;
    private RetryPolicy retry;

    Builder() {}

    /**
     * A fixed job id instead of the query's id: use it to keep the commits' identity when the checkpoint location
     * is replaced, or to call the function outside a streaming query. The queries of a pinned job write one after
     * another: a query started on a new checkpoint location continues the job's checkpoint ids above what the table
     * holds, and fences a query of the job still running.
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
      return new MicroBatchWriter(new IcebergRecipe(config), null, jobId, retry);
    }

    /** The function, writing to a Hive table through its metastore. */
    public MicroBatchWriter hive(SerializableSupplier<HiveSinkConfig> config) {
      return new MicroBatchWriter(new HiveRecipe(config), null, jobId, retry);
    }

    /**
     * The function, writing Iceberg tables of one catalog as one cut per micro-batch: the rows of the batch routed by
     * the tables' column ({@link SparkTables.Builder#routeByColumn}), or several DataFrames given to {@link
     * #writeTables}. The catalog is loaded on the first micro-batch.
     */
    public MicroBatchWriter icebergTables(SparkTables tables) {
      Objects.requireNonNull(tables, "tables");
      return new MicroBatchWriter(tables.routed() ? TablesRecipe.routed(tables) : null, tables, jobId, retry);
    }
  }
}
