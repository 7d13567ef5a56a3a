package dev.lakecommit.spark;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.util.Objects;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * A batch write of one DataFrame as one commit: every partition's task stages Parquet files and returns its
 * staging manifest; the driver commits the manifests of the successful task attempts in one Iceberg snapshot (or
 * one Hive partition batch) keyed by {@code (write id, checkpoint 1)}.
 *
 * <p>Running the same write id again finds that commit in the table and runs nothing. A write id names one logical
 * write (a day's load, a backfill run): give a new one for new data. Two runs of the same write id must not run at
 * the same time (the second would delete the first one's staged files before it commits).
 */
public final class TableWrite {
  /** The checkpoint id of a batch write: one commit per write id. */
  public static final long CHECKPOINT_ID = 1;

  private final Dataset<Row> data;
  private Target target;
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
    this.target = new IcebergTarget(config);
    return this;
  }

  /** Writes to a Hive table through its metastore; see {@link #iceberg} for when the supplier runs. */
  public TableWrite hive(SerializableSupplier<HiveSinkConfig> config) {
    this.target = new HiveTarget(config);
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
   *     unknown outcome keeps them: run the same write again to settle it)
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
    return WriteRun.execute(target, data, JobId.of(writeId), CHECKPOINT_ID, retry, true);
  }
}
