package dev.lakecommit.flink;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.iceberg.MaintenanceOptions;
import dev.lakecommit.staging.WriterManifest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessageTypeInfo;
import org.apache.flink.streaming.api.connector.sink2.SupportsPostCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreWriteTopology;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.function.SerializableSupplier;

/**
 * A Flink sink (Sink V2) that writes {@link RowData} to an Iceberg or a Hive table exactly once: one table commit
 * per Flink checkpoint, keyed by (job id, checkpoint id), through Lakecommit's committers.
 *
 * <pre>{@code
 * DataStream<RowData> rows = ...;
 * rows.sinkTo(LakecommitFlinkSink.forRowData(rowType)
 *     .iceberg(() -> IcebergSinkConfig.builder()
 *         .catalogProperties(Map.of("type", "hadoop", "warehouse", "/data/warehouse"))
 *         .table("db.events")
 *         .build())
 *     .jobName("events-ingest")            // job id "db.events-events-ingest", or .jobId("...")
 *     .build());
 * }</pre>
 *
 * <p>Several tables ({@link Builder#icebergTables}): each row goes to the Iceberg table a column or a function
 * names, created on its first row, and each checkpoint commits every table it touched as one cut (one database
 * transaction on a JDBC catalog; elsewhere table by table, then a cut record). Runs, epochs, restores and fencing
 * below hold for the job's tables together, its state kept under {@code <warehouse>/_lakecommit/jobs/<job id>}.
 *
 * <p>Topology: N writers stage Parquet files and send, at each checkpoint barrier, a manifest of them; ONE
 * aggregation operator (parallelism 1, uid {@code <uid prefix>-aggregator}) combines all manifests of the
 * checkpoint into one commit that carries the checkpoint id; Flink's committer operator commits it once the
 * checkpoint is complete. Needs checkpointing (aligned barriers) for streaming jobs; bounded jobs commit
 * everything at their final checkpoint (or at the end of input without checkpointing).
 *
 * <p>The job id is stable across restarts and savepoints (Flink's job id is not), so a replayed or re-delivered
 * commit is recognised by the table and skipped. Two different jobs writing one table need different job ids.
 *
 * <p>Runs and epochs (DESIGN.md rules 10 and 11). Every submission of the job — a fresh start or a restore from a
 * savepoint or retained checkpoint — is one run, and claims a new run epoch for the job id in the table when Flink
 * translates the sink into the job's topology ({@link #addPreCommitTopology}, on the client, right before the job
 * graph is built and submitted). The claim is a field of this sink, so it travels inside the serialized job graph
 * to every writer and committer subtask: every writer knows it before it stages its first file, without a
 * round trip to the table or to the other subtasks, and a Flink failover or a JobManager recovery inside the run
 * (which deserialize the same job graph) keeps it, while every new submission translates the sink again and
 * claims a new one. Task-side claims could not be once per run: a subtask cannot tell a failover of its own run
 * from a new run, and a restarted copy of a fenced job would claim again and fence the newer one. Writers name
 * their files with the epoch and Flink's attempt number, so no run ever stages a name that another run staged
 * (or committed), and a writer's teardown deletes only its own run's files. The committer commits only while the
 * table holds the run's epoch: once another run of the job was submitted, this one commits nothing more and fails
 * with the {@link dev.lakecommit.core.FencedException}'s message. Translating the sink without running it (for
 * example {@code env.getExecutionPlan()}) also claims an epoch and so fences a running copy of the job; so does an
 * application-mode JobManager that runs {@code main()} again when it recovers a job (the recovered job then fails
 * as fenced).
 *
 * <p>Restores (DESIGN.md rule 13). The claim also reads the table's identity, which every combined commit and the
 * aggregation operator's state record: a restore against another table (dropped and created again under the name)
 * fails and commits nothing to it, and a restored commit that the table does not hold and whose staged files are
 * gone is never committed (see {@link LakecommitCommitter}). There is deliberately no option to drop such commits
 * and go on: the sources' positions in the same state are past their rows; Flink's own means (a restore without
 * state, or new sink uids with {@code --allowNonRestoredState}) make that choice explicit. At start the aggregation
 * operator deletes the orphans of older, fenced runs (see {@link CommitAggregator}).
 *
 * <p>Changelog rows ({@link org.apache.flink.types.RowKind}): into an Iceberg table in mode UPSERT, INSERT and
 * UPDATE_AFTER replace the row of their key, UPDATE_BEFORE is skipped and DELETE deletes the key, and rows reach the
 * writers by key ({@link #addPreWriteTopology}); every other target only adds rows, and a row that is not an INSERT
 * fails the job naming its kind (see {@link LakecommitWriter}).
 *
 * <p>Maintenance ({@link Builder#maintenance}, Iceberg tables, off by default): a post-commit stage after Flink's
 * committer runs a maintenance round after every N commits, on a thread of its own and under the table's
 * maintenance lease, never holding up a commit and never failing the job (see {@link PostCommitMaintenance}).
 *
 * <p>Checkpoint ids: Lakecommit checkpoint id = offset + Flink checkpoint id, where the offset is the job's
 * watermark in the table when the lineage of Flink checkpoints began (a fresh start, a new checkpoint location);
 * the aggregation operator keeps every id above the previous commit's, and a restore whose state is behind what the
 * table holds for the job is refused. So no run ever commits at or below the table's watermark, and the epoch in
 * the names keeps a refused or fenced run's files apart from the committed ones.
 */
public final class LakecommitFlinkSink
    implements org.apache.flink.api.connector.sink2.Sink<RowData>,
        SupportsWriterState<RowData, WriterState>,
        SupportsCommitter<CheckpointCommittable>,
        SupportsPreWriteTopology<RowData>,
        SupportsPreCommitTopology<WriterManifest, CheckpointCommittable>,
        SupportsPostCommitTopology<CheckpointCommittable> {
  private static final long serialVersionUID = 1L;
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(LakecommitFlinkSink.class);

  private final SinkRecipe target;
  private final RowType rowType;
  private final String jobId;
  private final String uidPrefix;
  private final int commitAttempts;
  private final Duration initialBackoff;
  private final Duration maxBackoff;
  /** A maintenance round after every this many commits; 0: no maintenance stage. */
  private final int maintenanceEvery;
  private final MaintenanceOptions maintenanceOptions;
  /** The run epoch claimed when Flink last translated this sink; 0 before that, or for targets without epochs. */
  private long epoch;
  /** The identity of the table the epoch was claimed in (read right after the claim); empty before, or unknown. */
  private String tableIdentity = "";

  private LakecommitFlinkSink(Builder builder, String jobId) {
    this.target = builder.target;
    this.rowType = builder.rowType;
    this.jobId = jobId;
    this.uidPrefix = builder.uidPrefix != null ? builder.uidPrefix : "lakecommit-" + jobId;
    this.commitAttempts = builder.commitAttempts;
    this.initialBackoff = builder.initialBackoff;
    this.maxBackoff = builder.maxBackoff;
    this.maintenanceEvery = builder.maintenanceEvery;
    this.maintenanceOptions = builder.maintenanceOptions;
  }

  /** A builder of a sink of rows of this type; columns are matched to the table's by name. */
  public static Builder forRowData(RowType rowType) {
    return new Builder(rowType);
  }

  /** The job id commits are recorded under. */
  public JobId jobId() {
    return JobId.of(jobId);
  }

  /**
   * Opening the KafkaSource of this sink's job safely: {@link KafkaStartingOffsets#guarding}. Reads the table.
   *
   * @return the last checkpoint of this job the table holds (its watermark), 0 if none
   * @throws IOException if the table cannot be read
   */
  long lastCommittedInTable() throws IOException {
    SinkRecipe.CoreSink core = target.open(rowType);
    try (var sink = core.sink(); TargetRun run = core.openRun(jobId())) {
      return run.lastCommitted().orElse(0);
    }
  }

  /** The table, as the target names it (for messages). */
  String table() {
    return target.table();
  }

  /** The run epoch this sink's run claimed in the table (0 before Flink translated the sink). */
  long epoch() {
    return epoch;
  }

  /** The identity of the table this sink's run claimed its epoch in (empty before Flink translated the sink). */
  String tableIdentity() {
    return tableIdentity;
  }

  /**
   * Claims a new run epoch for the job in the table, fencing every earlier run of it; called once per translation
   * of the sink, on the client (see the class comment).
   *
   * @throws UncheckedIOException if the claim cannot be written: the job is not submitted
   */
  long claimRunEpoch() {
    SinkRecipe.CoreSink core = target.open(rowType);
    try (var sink = core.sink(); TargetRun run = core.openRun(jobId())) {
      epoch = run.claim("Flink job submitted from " + RunEpoch.thisProcess()).epoch();
      tableIdentity = run.identity();
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot claim a run epoch for job " + jobId + " in table " + target.table()
          + ": the job is not submitted (" + e.getMessage() + ")", e);
    }
    return epoch;
  }

  @Override
  public StatefulSinkWriter<RowData, WriterState> createWriter(WriterInitContext context) throws IOException {
    return LakecommitWriter.open(target, rowType, jobId(), epoch, context, List.of());
  }

  @Override
  public StatefulSinkWriter<RowData, WriterState> restoreWriter(WriterInitContext context,
      Collection<WriterState> states) throws IOException {
    return LakecommitWriter.open(target, rowType, jobId(), epoch, context, states);
  }

  @Override
  public SimpleVersionedSerializer<WriterState> getWriterStateSerializer() {
    return FlinkSerializers.of(new WriterState.Serializer());
  }

  @Override
  public SimpleVersionedSerializer<WriterManifest> getWriteResultSerializer() {
    return FlinkSerializers.of(target.writeResultSerializer());
  }

  /**
   * In mode UPSERT, sends every row to the writer subtask that owns its key ({@link KeyPartitioner}), so that all
   * changes of a key reach one writer in their order; rows go on unchanged otherwise.
   */
  @Override
  public DataStream<RowData> addPreWriteTopology(DataStream<RowData> rows) {
    if (!target.upserts()) {
      return rows;
    }
    return rows.partitionCustom(new KeyPartitioner(target, rowType), new WholeRow());
  }

  /** The partitioner reads the key columns from the whole row. */
  private static final class WholeRow implements org.apache.flink.api.java.functions.KeySelector<RowData, RowData> {
    private static final long serialVersionUID = 1L;

    @Override
    public RowData getKey(RowData row) {
      return row;
    }
  }

  /**
   * Adds the aggregation operator; first claims this run's epoch (Flink calls this once per translation of the
   * sink, on the client, before it serializes the job graph with this sink in it).
   */
  @Override
  public DataStream<CommittableMessage<CheckpointCommittable>> addPreCommitTopology(
      DataStream<CommittableMessage<WriterManifest>> manifests) {
    long claimed = claimRunEpoch();
    LOG.info("Job {} on {} ({}) claimed run epoch {} for this submission", jobId, target.table(), tableIdentity,
        claimed);
    return manifests
        .global()
        .transform("Lakecommit aggregator: " + target.table(),
            CommittableMessageTypeInfo.of(this::getCommittableSerializer),
            new CommitAggregator(target, rowType, jobId(), epoch, tableIdentity))
        .uid(uidPrefix + "-aggregator")
        .setParallelism(1)
        .setMaxParallelism(1)
        .global();
  }

  /**
   * Adds the maintenance stage after Flink's committer if {@link Builder#maintenance} asked for it (see {@link
   * PostCommitMaintenance}); nothing otherwise.
   */
  @Override
  public void addPostCommitTopology(DataStream<CommittableMessage<CheckpointCommittable>> committed) {
    if (maintenanceEvery == 0) {
      return;
    }
    committed
        .global()
        .transform("Lakecommit maintenance: " + target.table(), org.apache.flink.api.common.typeinfo.Types.VOID,
            new PostCommitMaintenance(target, rowType, jobId(), maintenanceEvery, maintenanceOptions))
        .uid(uidPrefix + "-maintenance")
        .setParallelism(1)
        .setMaxParallelism(1);
  }

  @Override
  public Committer<CheckpointCommittable> createCommitter(CommitterInitContext context) {
    CommitMetrics metrics = CommitMetrics.register(context.metricGroup());
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(commitAttempts).initialBackoff(initialBackoff)
        .maxBackoff(maxBackoff).listener((what, failedAttempt, backoff, cause) -> metrics.retried()).build();
    return new LakecommitCommitter(target, rowType, retry, jobId(), epoch, context.getRestoredCheckpointId(),
        metrics);
  }

  @Override
  public SimpleVersionedSerializer<CheckpointCommittable> getCommittableSerializer() {
    return FlinkSerializers.of(new CheckpointCommittable.Serializer(target.committableSerializer()));
  }

  /** Builder in the style of Flink's connectors; {@link #build} checks the config against the table. */
  public static final class Builder {
    private final RowType rowType;
    private SinkRecipe target;
    private String jobId;
    private String jobName;
    private String uidPrefix;
    private int commitAttempts = 8;
    private Duration initialBackoff = Duration.ofMillis(100);
    private Duration maxBackoff = Duration.ofSeconds(10);
    private int maintenanceEvery;
    private MaintenanceOptions maintenanceOptions;

    private Builder(RowType rowType) {
      this.rowType = Objects.requireNonNull(rowType, "rowType");
    }

    /**
     * Writes to an Iceberg table. The supplier runs on the client (once, to check) and on every task (to
     * connect), so it must be serializable: a lambda over serializable values.
     */
    public Builder iceberg(SerializableSupplier<IcebergSinkConfig> config) {
      this.target = SinkRecipe.iceberg(config);
      return this;
    }

    /**
     * Writes a table per row to Iceberg tables of one catalog, all tables of a checkpoint as one cut: JDBC catalogs
     * (and REST catalogs that commit several tables atomically) swap every table's metadata in one transaction;
     * other catalogs commit table by table, then publish a cut record ({@link
     * dev.lakecommit.iceberg.MultiTableSink}). Tables are created on their first row. Rows only add (INSERT).
     */
    public Builder icebergTables(IcebergTables tables) {
      this.target = SinkRecipe.icebergTables(tables);
      return this;
    }

    /** Writes to a Hive table through its metastore; the supplier is serializable, as for {@link #iceberg}. */
    public Builder hive(SerializableSupplier<HiveSinkConfig> config) {
      this.target = SinkRecipe.hive(config);
      return this;
    }

    /** The job id, stable across restarts and savepoints ({@code [A-Za-z0-9._-]}, at most 128 characters). */
    public Builder jobId(String id) {
      this.jobId = JobId.of(id).value();
      return this;
    }

    /**
     * A name of this job; the job id is then {@code <table>-<name>}, or {@code <catalog name>-<name>} for {@link
     * #icebergTables} (characters outside the id's set become -).
     */
    public Builder jobName(String name) {
      if (name == null || name.isBlank()) {
        throw new IllegalArgumentException("Invalid job name: '" + name + "' (must not be blank)");
      }
      this.jobName = name;
      return this;
    }

    /** Prefix of the uids of the sink's own operators (default {@code lakecommit-<job id>}). */
    public Builder uidPrefix(String prefix) {
      this.uidPrefix = Objects.requireNonNull(prefix, "uidPrefix");
      return this;
    }

    /** Commit attempts per checkpoint and their backoff, before the commit is left pending (default 8, 100 ms-10 s). */
    public Builder commitRetry(int attempts, Duration initial, Duration max) {
      RetryPolicy.builder().maxAttempts(attempts).initialBackoff(initial).maxBackoff(max).build();
      this.commitAttempts = attempts;
      this.initialBackoff = initial;
      this.maxBackoff = max;
      return this;
    }

    /**
     * Adds a post-commit maintenance stage (Iceberg tables): after every {@code everyCommits} checkpoint commits of
     * this job, one round of what {@code options} asks for (manifest rewrite, compaction, optionally expiry and
     * orphan removal) runs on a thread of its own under the table's maintenance lease, so that one round at a time
     * runs per table across jobs. Checkpoint commits never wait for it; a failed round is logged and retried at
     * the next. Off by default.
     *
     * @throws IllegalArgumentException if {@code everyCommits < 1}
     */
    public Builder maintenance(int everyCommits, MaintenanceOptions options) {
      if (everyCommits < 1) {
        throw new IllegalArgumentException(String.format("Invalid maintenance interval: every %s commits (must be "
            + ">= 1)", everyCommits));
      }
      this.maintenanceEvery = everyCommits;
      this.maintenanceOptions = Objects.requireNonNull(options, "maintenance options");
      return this;
    }

    /**
     * Builds the sink; opens the target once here (creating or checking the table) so that bad configuration
     * and rows that do not fit the table fail before the job is submitted.
     *
     * @throws IllegalArgumentException naming the option or column at fault
     */
    public LakecommitFlinkSink build() {
      if (target == null) {
        throw new IllegalArgumentException("Missing target: call iceberg(() -> IcebergSinkConfig...),"
            + " icebergTables(IcebergTables...) or hive(() -> HiveSinkConfig...)");
      }
      if (maintenanceEvery > 0 && !target.iceberg()) {
        throw new IllegalArgumentException("maintenance(...) is for one Iceberg table; " + target.describe()
            + " is not one");
      }
      String id = jobId != null ? jobId : derivedJobId();
      try (var sink = target.open(rowType).sink()) {
        return new LakecommitFlinkSink(this, id);
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot close the catalog of " + target.table() + " after checking the table",
            e);
      }
    }

    private String derivedJobId() {
      if (jobName == null) {
        throw new IllegalArgumentException("Missing job id: call jobId(\"...\") or jobName(\"...\"); it must stay"
            + " the same when the job restarts from a savepoint");
      }
      String raw = (target.jobIdBase() + "-" + jobName).replaceAll("[^A-Za-z0-9._-]", "-");
      String trimmed = raw.replaceFirst("^[^A-Za-z0-9]+", "");
      return JobId.of(trimmed.length() > 128 ? trimmed.substring(0, 128) : trimmed).value();
    }
  }
}
