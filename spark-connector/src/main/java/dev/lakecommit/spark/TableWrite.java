package dev.lakecommit.spark;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A batch write of one DataFrame as one commit: every partition's task stages Parquet files and returns its
 * staging manifest; the driver commits the manifests of the successful task attempts in one Iceberg snapshot (or
 * one Hive partition batch) keyed by {@code (write id, checkpoint 1)}.
 *
 * <p>Running the same write id again finds that commit in the table and runs nothing. A write id names one logical
 * write (a day's load, a backfill run): give a new one for new data. Each {@link #save()} that has to write is a run
 * of the write id: it claims a new run epoch in the table first, so of two saves of one write id at the same time
 * the later one fences the earlier, which commits nothing and fails saying so (or finds the write committed).
 */
public final class TableWrite {
  private static final Logger LOG = LoggerFactory.getLogger(TableWrite.class);

  /** The checkpoint id of a batch write: one commit per write id. */
  public static final long CHECKPOINT_ID = 1;

  private final Dataset<Row> data;
  private SinkRecipe target;
  private String writeId;
  private RetryPolicy retry = RetryPolicy.defaults();

  TableWrite(Dataset<Row> data) {
    this.data = data;
  }

  /**
   * Writes to an Iceberg table. The supplier runs on the driver now (to check the table name) and again on the
   * driver and each executor when the write runs; the table is created there if the config says so.
   */
  public TableWrite iceberg(SerializableSupplier<IcebergSinkConfig> config) {
    this.target = new IcebergRecipe(config);
    return this;
  }

  /** Writes to a Hive table through its metastore; see {@link #iceberg} for when the supplier runs. */
  public TableWrite hive(SerializableSupplier<HiveSinkConfig> config) {
    this.target = new HiveRecipe(config);
    return this;
  }

  /**
   * The id of this write, the job id of its commit: {@code [A-Za-z0-9][A-Za-z0-9._-]*}, at most 128 characters.
   *
   * @throws IllegalArgumentException if the id is not valid; the message says what is allowed
   */
  public TableWrite writeId(String id) {
    this.writeId = JobId.of(id).value();
    return this;
  }

  /** How the commit is retried on conflicts and unknown outcomes (default {@link RetryPolicy#defaults()}). */
  public TableWrite retryPolicy(RetryPolicy policy) {
    this.retry = Objects.requireNonNull(policy, "retryPolicy");
    return this;
  }

  /**
   * Runs the write: one Spark job, then one commit on the driver. Blocks until the commit is done.
   *
   * @return what the write did: committed, found already committed (no Spark job ran), or had no rows
   * @throws IllegalArgumentException if no target or write id was set, or the DataFrame's columns do not fit the
   *     table (the message names the column)
   * @throws IllegalStateException if the commit failed; the message says whether the staged files were kept (an
   *     unknown outcome keeps them: run the same write again to settle it). Also if a later save of the same write
   *     id fenced this one: the message says fenced; this save committed nothing and deleted only its own files
   * @throws org.apache.spark.SparkException if a task failed more than {@code spark.task.maxFailures} times; the
   *     files staged by this run are deleted
   */
  public WriteResult save() {
    if (target == null) {
      throw new IllegalArgumentException("Missing target: call iceberg(...) or hive(...) before save()");
    }
    if (writeId == null) {
      throw new IllegalArgumentException("Missing write id: call writeId(\"...\") before save(); the same id makes"
          + " a rerun of the write commit nothing");
    }
    JobId job = JobId.of(writeId);
    SinkCache.Lease sink = SinkCache.open(target, data.schema());
    SinkRecipe.Opened<?, ?> opened = sink.opened();
    TargetRun run = null;
    try {
      run = opened.openRun(job, target.describe());
      OptionalLong committed = run.lastCommitted();
      if (committed.isPresent() && committed.getAsLong() >= CHECKPOINT_ID) {
        // A rerun of a finished write: no run, no epoch claim.
        LOG.info("Write {} to {} is already committed; nothing written", writeId, target.describe());
        return new WriteResult(writeId, CHECKPOINT_ID, WriteResult.Status.ALREADY_COMMITTED, 0, 0);
      }
      run.claim("Spark write " + writeId + ", " + RunEpoch.thisProcess());
      // Read after the claim: whatever an older run committed before it is seen, nothing after it can land.
      run.deleteOlderRuns(run.lastCommitted().orElse(0));
      return WriteRun.execute(target, opened, data, run, CHECKPOINT_ID, retry, Map.of());
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot run write " + writeId + " on " + target.describe() + ": "
          + e.getMessage(), e);
    } finally {
      if (run != null) {
        SinkRecipe.Opened.close(run);
      }
      sink.close();
    }
  }
}
