package dev.lakecommit.hive;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.InputConverter;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingManifestSerializer;
import dev.lakecommit.staging.StagingWriter;
import dev.lakecommit.staging.StagingWriterConfig;
import dev.lakecommit.staging.StagingWriterState;
import dev.lakecommit.staging.StagingWriterStateSerializer;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.FileIO;
import org.apache.thrift.TException;

/**
 * Writes to a Hive table through its metastore, exactly once per checkpoint. Writers stage Parquet files under
 * the table's hidden {@code .lakecommit-staging/<job-id>/ckpt-<id>/} directory; the one aggregated committer moves
 * all files of a checkpoint into their partition directories, adds the new partitions whole in one
 * {@code add_partitions} call (per batch), updates statistics, and records the checkpoint last, in the table
 * parameter {@code lakecommit.committed.<job-id>}. Replays, retries and racing committers change nothing twice.
 *
 * <p>Across runs ({@link #openTarget()}): every run claims a new epoch of its job in the table, which fences the
 * committers of older runs; every commit writes its intent before its first move, and a run's claim finishes (or,
 * where a staged file is lost, undoes) what an earlier run's commit left half done, before the run reads the
 * watermark or stages anything.
 *
 * <p>Building the sink connects to the metastore and creates or checks the table: a table that is not Parquet,
 * or whose columns differ from the staged schema, is refused here, before any data is written.
 *
 * <p>Storage is any Hadoop file system of the table's location: local paths, HDFS, or S3 through S3A
 * ({@code s3a://}, configured by {@code fs.s3a.*} in {@link HiveSinkConfig.Builder#hadoopProperty}; staged names
 * are unique, so {@code fs.s3a.create.performance=true} safely saves a probe per staged file). The metastore must
 * reach the same storage (it checks partition directories). Hive Metastore 2.3 to 4.x: the sink's table changes
 * are compare-and-swaps ({@code expected_parameter_key}) where the metastore enforces them, and made under its
 * table lock where it does not ({@link TableFencing}, asked once per sink).
 *
 * @param <IN> records written
 */
public final class HiveSink<IN>
    implements Sink<IN, StagingManifest, StagingWriterState>,
        SupportsAggregatedCommitter<StagingManifest, HiveCommittable>,
        SupportsTarget {

  private final HiveSinkConfig config;
  private final HiveTable table;
  private final TableFencing.Probed fencing;
  private final StagingLayout layout;
  private final Function<Schema, InputConverter<IN>> converters;
  private boolean idempotencyCheck = true;
  private boolean commitIntents = true;
  private CommitHook hook = CommitHook.NONE;
  private UnaryOperator<FileSystem> fileSystems = UnaryOperator.identity();

  private HiveSink(HiveSinkConfig config, HiveTable table, Function<Schema, InputConverter<IN>> converters) {
    this.config = config;
    this.table = table;
    this.fencing = new TableFencing.Probed(table.database(), table.name(),
        () -> config.hiveConf().get(HiveConf.ConfVars.METASTOREURIS.varname));
    // On S3 a staged file is an upload completed at commit (PendingUploads): no bytes are copied then.
    this.layout = PendingUploads.applies(table.baseLocation(), config.mode, config.hadoopConf())
        ? StagingLayout.under(PendingUploads.stagingRoot(table.baseLocation()).toString())
            .withBaseElement(PendingUploads.BASE)
        : StagingLayout.under(table.stagingRoot().toString());
    this.converters = converters;
  }

  /**
   * A sink of Iceberg generic records, matched to the staged schema ({@link #schema()}) by column name: a column
   * the record lacks is null.
   */
  public static HiveSink<Record> forRecords(HiveSinkConfig config) {
    return forInput(config, RecordsByName::new);
  }

  /**
   * A sink of any input, converted to records of the staged schema by a converter made from that schema (one per
   * writer, so a converter may keep state).
   */
  public static <IN> HiveSink<IN> forInput(HiveSinkConfig config,
      Function<Schema, InputConverter<IN>> converterForSchema) {
    Objects.requireNonNull(config, "config");
    HiveTable table;
    try {
      IMetaStoreClient client = config.clientFactory.open(config.hiveConf());
      try {
        table = TableSetup.prepare(client, config);
      } finally {
        client.close();
      }
    } catch (TException e) {
      throw new IllegalStateException("Cannot prepare table " + config.table() + " in the metastore: "
          + e.getMessage(), e);
    }
    return new HiveSink<>(config, table, Objects.requireNonNull(converterForSchema, "converterForSchema"));
  }

  /** What the sink knows of its table (tests). */
  HiveTable table() {
    return table;
  }

  /** The schema records are staged with: the table's columns and its partition columns. */
  public Schema schema() {
    return table.stagedSchema();
  }

  /** The table's partition columns, in order. */
  public List<String> partitionColumns() {
    return table.partitionColumns();
  }

  public StagingLayout layout() {
    return layout;
  }

  /**
   * Test-only: fence runs with {@code fencing} whatever the metastore's probe found ({@link TableFencing}), to show
   * what trusting a compare-and-swap the metastore ignores does.
   */
  HiveSink<IN> fencing(TableFencing fencing) {
    this.fencing.force(fencing);
    return this;
  }

  /** The fencing the sink's first table change found (tests); empty before it. */
  java.util.Optional<TableFencing> fencing() {
    return fencing.found();
  }

  /** Test-only: commit without the idempotency checks, to show that the crash and race suites catch it. */
  HiveSink<IN> idempotencyCheck(boolean enabled) {
    this.idempotencyCheck = enabled;
    return this;
  }

  /**
   * Test-only: commit without writing intents (a later run then cannot finish a commit that failed after its first
   * move), to show that the rerun tests catch it.
   */
  HiveSink<IN> commitIntents(boolean enabled) {
    this.commitIntents = enabled;
    return this;
  }

  /** Test-only: told at each step of every commit attempt. */
  HiveSink<IN> commitHook(CommitHook commitHook) {
    this.hook = Objects.requireNonNull(commitHook, "hook");
    return this;
  }

  /** Test-only: wraps the file system the committer moves files with. */
  HiveSink<IN> fileSystems(UnaryOperator<FileSystem> wrapper) {
    this.fileSystems = Objects.requireNonNull(wrapper, "wrapper");
    return this;
  }

  @Override
  public SinkWriter<IN, StagingManifest, StagingWriterState> createWriter(WriterContext context) {
    return StagingWriter.create(writerConfig(), converters.apply(table.stagedSchema()), context);
  }

  @Override
  public SinkWriter<IN, StagingManifest, StagingWriterState> restoreWriter(
      WriterContext context, List<StagingWriterState> states) {
    // Writers close every file at each checkpoint: a restored writer starts with nothing open.
    return createWriter(context);
  }

  private StagingWriterConfig writerConfig() {
    StagingWriterConfig.Builder builder = StagingWriterConfig.builder()
        .schema(table.stagedSchema())
        .spec(table.spec())
        .io(fileIO())
        .layout(layout)
        .maxRowsPerFile(config.maxRowsPerFile)
        .maxOpenFiles(config.maxOpenFiles)
        .maxBufferedBytes(config.maxBufferedBytes)
        .clusterPastOpenFiles(config.clusterPastOpenFiles)
        .codec(table.fileFormat().codec());
    if (PendingUploads.applies(table.baseLocation(), config.mode, config.hadoopConf())) {
      // The upload's destination is the staged path after __base: it must be Hive's directory of the partition.
      String defaultName = config.hiveConf().getVar(HiveConf.ConfVars.DEFAULTPARTITIONNAME);
      builder.partitionPaths(tuple -> HivePaths.partitionName(table.partitionColumns(),
          PartitionValues.of(tuple, table.spec(), defaultName), defaultName));
    }
    if (config.targetFileSizeBytes > 0) {
      builder.targetFileSizeBytes(config.targetFileSizeBytes);
    }
    // Files as Hive writes them: no partition columns, INT96 timestamps (see HiveFileFormat).
    StagingWriterConfig iceberg = builder.build();
    return builder.appenders(HiveParquetAppender.factory(table, iceberg.writeProperties(), config.hadoopConf()))
        .build();
  }

  private FileIO fileIO() {
    HadoopFileIO io = new HadoopFileIO(config.hadoopConf());
    io.initialize(Map.of());
    return io;
  }

  @Override
  public SimpleVersionedSerializer<StagingManifest> commitInfoSerializer() {
    return new StagingManifestSerializer();
  }

  @Override
  public SimpleVersionedSerializer<StagingWriterState> writerStateSerializer() {
    return new StagingWriterStateSerializer();
  }

  @Override
  public SinkAggregatedCommitter<StagingManifest, HiveCommittable> createAggregatedCommitter() throws IOException {
    CommitContext context = openContext();
    probeFencing(context);
    return new HiveAggregatedCommitter(context, layout, intents(context.storage()));
  }

  /** The table's {@link HiveTarget}, with a metastore client of its own. */
  @Override
  public CommitTarget openTarget() throws IOException {
    CommitContext context = openContext();
    return new HiveTarget(context, intents(context.storage()), fileIO(), layout);
  }

  /**
   * Maintenance of the table (merging small files), with the sink's metastore and storage settings; each call
   * opens and closes its own metastore client.
   */
  public HiveMaintenance maintenance() {
    return new HiveMaintenance(config, table);
  }

  /** Asks the metastore how to fence (once per sink), before a committer's first attempt reads the table. */
  private void probeFencing(CommitContext context) throws IOException {
    try {
      fencing.of(context.client());
    } catch (TException | RuntimeException e) {
      try {
        context.client().close();
      } finally {
        context.storage().close();
      }
      if (e instanceof RuntimeException refused) {
        throw refused;
      }
      throw new IOException("Cannot ask the metastore of table " + table + " how to fence runs: " + e.getMessage(), e);
    }
  }

  /** A new metastore client and table storage, and the settings every commit attempt shares. */
  private CommitContext openContext() throws IOException {
    HiveConf conf = config.hiveConf();
    FileSystem fs = fileSystems.apply(table.baseLocation().getFileSystem(conf));
    TableStorage storage = new TableStorage(fs, config.moveThreads, idempotencyCheck);
    IMetaStoreClient client;
    try {
      client = config.clientFactory.open(conf);
    } catch (TException e) {
      storage.close();
      throw new IOException("Cannot connect to the metastore of table " + table + ": " + e.getMessage(), e);
    }
    String defaultPartition = conf.getVar(HiveConf.ConfVars.DEFAULTPARTITIONNAME);
    return new CommitContext(client, table, config.mode, storage, hook, idempotencyCheck, config.successFiles,
        config.partitionBatchSize, defaultPartition, new AtomicInteger(),
        commitIntents ? intents(storage) : null, fencing);
  }

  private CommitIntents intents(TableStorage storage) {
    return new CommitIntents(storage.fs(), table.stagingRoot());
  }

  @Override
  public SimpleVersionedSerializer<HiveCommittable> aggregatedCommitSerializer() {
    return new HiveCommittable.Serializer();
  }

}
