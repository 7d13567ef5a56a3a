package dev.lakecommit.flink;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.hive.HiveSinkConfig;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingManifestSerializer;
import java.io.IOException;
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
import org.apache.flink.streaming.api.connector.sink2.SupportsPreCommitTopology;
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
 * <p>Topology: N writers stage Parquet files and send, at each checkpoint barrier, a manifest of them; ONE
 * aggregation operator (parallelism 1, uid {@code <uid prefix>-aggregator}) combines all manifests of the
 * checkpoint into one commit that carries the checkpoint id; Flink's committer operator commits it once the
 * checkpoint is complete. Needs checkpointing (aligned barriers) for streaming jobs; bounded jobs commit
 * everything at their final checkpoint (or at the end of input without checkpointing).
 *
 * <p>The job id is stable across restarts and savepoints (Flink's job id is not), so a replayed or re-delivered
 * commit is recognised by the table and skipped. Two different jobs writing one table need different job ids.
 */
public final class LakecommitFlinkSink
    implements org.apache.flink.api.connector.sink2.Sink<RowData>,
        SupportsWriterState<RowData, WriterState>,
        SupportsCommitter<CheckpointCommittable>,
        SupportsPreCommitTopology<StagingManifest, CheckpointCommittable> {
  private static final long serialVersionUID = 1L;

  private final Target target;
  private final RowType rowType;
  private final String jobId;
  private final String uidPrefix;
  private final int commitAttempts;
  private final Duration initialBackoff;
  private final Duration maxBackoff;

  private LakecommitFlinkSink(Builder builder, String jobId) {
    this.target = builder.target;
    this.rowType = builder.rowType;
    this.jobId = jobId;
    this.uidPrefix = builder.uidPrefix != null ? builder.uidPrefix : "lakecommit-" + jobId;
    this.commitAttempts = builder.commitAttempts;
    this.initialBackoff = builder.initialBackoff;
    this.maxBackoff = builder.maxBackoff;
  }

  /** A builder of a sink of rows of this type; columns are matched to the table's by name. */
  public static Builder forRowData(RowType rowType) {
    return new Builder(rowType);
  }

  /** The job id commits are recorded under. */
  public JobId jobId() {
    return JobId.of(jobId);
  }

  @Override
  public StatefulSinkWriter<RowData, WriterState> createWriter(WriterInitContext context) throws IOException {
    return LakecommitWriter.open(target, rowType, jobId(), context, List.of());
  }

  @Override
  public StatefulSinkWriter<RowData, WriterState> restoreWriter(WriterInitContext context,
      Collection<WriterState> states) throws IOException {
    return LakecommitWriter.open(target, rowType, jobId(), context, states);
  }

  @Override
  public SimpleVersionedSerializer<WriterState> getWriterStateSerializer() {
    return FlinkSerializers.of(new WriterState.Serializer());
  }

  @Override
  public SimpleVersionedSerializer<StagingManifest> getWriteResultSerializer() {
    return FlinkSerializers.of(new StagingManifestSerializer());
  }

  @Override
  public DataStream<CommittableMessage<CheckpointCommittable>> addPreCommitTopology(
      DataStream<CommittableMessage<StagingManifest>> manifests) {
    return manifests
        .global()
        .transform("Lakecommit aggregator: " + target.table(),
            CommittableMessageTypeInfo.of(this::getCommittableSerializer),
            new CommitAggregator(target, rowType, jobId()))
        .uid(uidPrefix + "-aggregator")
        .setParallelism(1)
        .setMaxParallelism(1)
        .global();
  }

  @Override
  public Committer<CheckpointCommittable> createCommitter(CommitterInitContext context) {
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(commitAttempts).initialBackoff(initialBackoff)
        .maxBackoff(maxBackoff).build();
    return new LakecommitCommitter(target, rowType, retry);
  }

  @Override
  public SimpleVersionedSerializer<CheckpointCommittable> getCommittableSerializer() {
    return FlinkSerializers.of(new CheckpointCommittable.Serializer(target.committableSerializer()));
  }

  /** Builder in the style of Flink's connectors; {@link #build} checks the config against the table. */
  public static final class Builder {
    private final RowType rowType;
    private Target target;
    private String jobId;
    private String jobName;
    private String uidPrefix;
    private int commitAttempts = 8;
    private Duration initialBackoff = Duration.ofMillis(100);
    private Duration maxBackoff = Duration.ofSeconds(10);

    private Builder(RowType rowType) {
      this.rowType = Objects.requireNonNull(rowType, "rowType");
    }

    /**
     * Writes to an Iceberg table. The supplier runs on the client (once, to check) and on every task (to
     * connect), so it must be serializable: a lambda over serializable values.
     */
    public Builder iceberg(SerializableSupplier<IcebergSinkConfig> config) {
      this.target = Target.iceberg(config);
      return this;
    }

    /** Writes to a Hive table through its metastore; the supplier is serializable, as for {@link #iceberg}. */
    public Builder hive(SerializableSupplier<HiveSinkConfig> config) {
      this.target = Target.hive(config);
      return this;
    }

    /** The job id, stable across restarts and savepoints ({@code [A-Za-z0-9._-]}, at most 128 characters). */
    public Builder jobId(String id) {
      this.jobId = JobId.of(id).value();
      return this;
    }

    /** A name of this job; the job id is then {@code <table>-<name>} (characters outside the id's set become -). */
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
     * Builds the sink; opens the target once here (creating or checking the table) so that bad configuration
     * and rows that do not fit the table fail before the job is submitted.
     *
     * @throws IllegalArgumentException naming the option or column at fault
     */
    public LakecommitFlinkSink build() {
      if (target == null) {
        throw new IllegalArgumentException("Missing target: call iceberg(() -> IcebergSinkConfig...) or"
            + " hive(() -> HiveSinkConfig...)");
      }
      String id = jobId != null ? jobId : derivedJobId();
      target.open(rowType);
      return new LakecommitFlinkSink(this, id);
    }

    private String derivedJobId() {
      if (jobName == null) {
        throw new IllegalArgumentException("Missing job id: call jobId(\"...\") or jobName(\"...\"); it must stay"
            + " the same when the job restarts from a savepoint");
      }
      String raw = (target.table() + "-" + jobName).replaceAll("[^A-Za-z0-9._-]", "-");
      String trimmed = raw.replaceFirst("^[^A-Za-z0-9]+", "");
      return JobId.of(trimmed.length() > 128 ? trimmed.substring(0, 128) : trimmed).value();
    }
  }
}
