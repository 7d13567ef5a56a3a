package dev.lakecommit.bench;

import dev.lakecommit.flink.LakecommitFlinkSink;
import dev.lakecommit.iceberg.HadoopConfs;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.iceberg.DistributionMode;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.CatalogLoader;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.types.Types;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One bounded Flink job end to end in a MiniCluster: Lakecommit's Flink sink ({@link LakecommitFlinkSink})
 * against Iceberg's own {@code org.apache.iceberg.flink.sink.IcebergSink} (iceberg-flink-2.1 1.11.0).
 *
 * <p>Both variants run the same job on the same MiniCluster (started once per trial, one task manager with
 * {@code parallelism} slots): {@code fromSequence(1, rows)} → {@link GenericRowData} ({@code id} bigint,
 * {@code name} string, {@code made_at_ms} bigint: the wall-clock time the row was made) → the sink, at
 * {@code parallelism} (2 and 4), checkpointing every {@code checkpointMillis} (plus the final checkpoint at the end of
 * input), no restarts. Each operation ({@code SingleShotTime}) writes
 * into a fresh, empty format-v2 table ({@link #partitioning}: unpartitioned or {@code bucket(8, id)}) in a Hadoop
 * catalog on local disk ({@link
 * FastLocalFileSystem} for both sinks), created before the measurement. Measured: building the job graph,
 * submitting it, running it to the end (every row written, every checkpoint committed). Score: ms per job;
 * rows/s is {@code rows} ÷ score.
 *
 * <p>After every job (outside the measurement) the table is read back with Iceberg's generic reader and its ids
 * are compared with the source: losses and duplicates are counted and printed, not thrown, so that a lossy run
 * is visible in the output; the trial's totals are printed at its end. Also printed per job: committed
 * snapshots, the delay from submitting the job to its first commit (the snapshot's timestamp), and the commit
 * latency of every snapshot, from the {@code made_at_ms} bounds of the data files it added: commit time minus
 * the newest row's time (how long the last row before the checkpoint waited to become visible) and minus the
 * oldest row's time (the age of the oldest row at its commit).
 *
 * <p>Run it (from the repository root, classpath launcher as in benchmarks/README.md):
 *
 * <pre>
 * java -Xms2g -Xmx2g -cp "$CP" org.openjdk.jmh.Main FlinkSinkBenchmark -f 0 -wi 2 -i 5 -rf json -rff flink.json
 * </pre>
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 2)
@Measurement(iterations = 5)
@State(Scope.Benchmark)
public class FlinkSinkBenchmark {
  static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "name", Types.StringType.get()),
      Types.NestedField.optional(FlinkRunCheck.MADE_AT_FIELD_ID, "made_at_ms", Types.LongType.get()));
  static final RowType ROW_TYPE = RowType.of(
      new LogicalType[] {new BigIntType(false), new VarCharType(VarCharType.MAX_LENGTH), new BigIntType()},
      new String[] {"id", "name", "made_at_ms"});

  @Param({"1000000"})
  public long rows;

  @Param({"2", "4"})
  public int parallelism;

  /**
   * The table's partitioning: {@code none}, or {@code bucket}: {@code bucket(8, id)}, so that every writer (each
   * gets a range of ids) writes 8 files per checkpoint. Neither sink shuffles rows by partition (Iceberg's
   * distribution mode {@code none}, Lakecommit's writers fan out).
   */
  @Param({"none", "bucket"})
  public String partitioning;

  @Param({"1000"})
  public long checkpointMillis;

  private MiniCluster cluster;
  private Path root;
  private Map<String, String> catalogProperties;
  private Catalog catalog;
  private int tableNumber;
  private final List<FlinkRunCheck.Outcome> outcomes = new ArrayList<>();

  /** This iteration's table and the wall-clock time its job was submitted. */
  private TableIdentifier identifier;
  private long submittedMillis;
  private String variant;

  @Setup(Level.Trial)
  public void setUpTrial() throws Exception {
    root = Files.createTempDirectory("lakecommit-bench-flink-");
    catalogProperties = Map.of(
        "type", "hadoop",
        "warehouse", root.resolve("warehouse").toString(),
        "fs.file.impl", FastLocalFileSystem.class.getName(),
        "fs.file.impl.disable.cache", "true");
    catalog = CommitChecks.catalog(catalogProperties);
    cluster = BenchFlink.startCluster(parallelism);
  }

  @Setup(Level.Iteration)
  public void setUpIteration() {
    identifier = TableIdentifier.of("db", "t" + tableNumber++);
    PartitionSpec spec = switch (partitioning) {
      case "none" -> PartitionSpec.unpartitioned();
      case "bucket" -> PartitionSpec.builderFor(SCHEMA).bucket("id", 8).build();
      default -> throw new IllegalArgumentException("Unknown partitioning " + partitioning + ": none or bucket");
    };
    catalog.createTable(identifier, SCHEMA, spec, Map.of(TableProperties.FORMAT_VERSION, "2"));
    variant = null;
  }

  @TearDown(Level.Iteration)
  public void tearDownIteration() {
    if (variant != null) {
      Table table = catalog.loadTable(identifier);
      FlinkRunCheck.Outcome outcome = FlinkRunCheck.check(variant, table, rows, submittedMillis);
      outcomes.add(outcome);
      System.out.println(outcome);
    }
    catalog.dropTable(identifier, true);
  }

  @TearDown(Level.Trial)
  public void tearDownTrial() throws Exception {
    try {
      System.out.println(FlinkRunCheck.summary(outcomes));
      if (cluster != null) {
        cluster.close();
      }
    } finally {
      BenchFiles.deleteRecursively(root);
    }
  }

  /** Lakecommit's Flink sink: writers stage Parquet, one aggregated commit per checkpoint. */
  @Benchmark
  public void lakecommit() throws Exception {
    StreamExecutionEnvironment env = environment();
    Map<String, String> properties = catalogProperties;
    String table = identifier.toString();
    source(env).sinkTo(LakecommitFlinkSink.forRowData(ROW_TYPE)
            .iceberg(() -> IcebergSinkConfig.builder()
                .catalogName("bench")
                .catalogProperties(properties)
                .table(table)
                .build())
            .jobName("bench-" + table)
            .build())
        .uid("lakecommit-sink");
    run(env, "lakecommit");
  }

  /** Iceberg's own Flink sink (Sink V2, IcebergSink), appending to the same kind of table. */
  @Benchmark
  public void iceberg() throws Exception {
    StreamExecutionEnvironment env = environment();
    CatalogLoader loader = CatalogLoader.hadoop("bench", HadoopConfs.from(catalogProperties), catalogProperties);
    org.apache.iceberg.flink.sink.IcebergSink.forRowData(source(env))
        .tableLoader(TableLoader.fromCatalog(loader, identifier))
        .writeParallelism(parallelism)
        .distributionMode(DistributionMode.NONE)
        .uidSuffix("iceberg-sink")
        .append();
    run(env, "iceberg");
  }

  private StreamExecutionEnvironment environment() {
    return BenchFlink.environment(parallelism, checkpointMillis);
  }

  private DataStream<RowData> source(StreamExecutionEnvironment env) {
    return env.fromSequence(1, rows).uid("sequence")
        .map(new ToRow()).uid("to-row")
        .returns(InternalTypeInfo.of(ROW_TYPE));
  }

  private void run(StreamExecutionEnvironment env, String name) throws Exception {
    variant = name;
    submittedMillis = System.currentTimeMillis();
    cluster.executeJobBlocking(env.getStreamGraph().getJobGraph());
  }

  /**
   * id → (id, "user-id", the wall-clock time the row was made): a static class, so that the job captures nothing
   * of the benchmark state. The time is what the commit latency is measured from.
   */
  static final class ToRow implements MapFunction<Long, RowData> {
    @Override
    public RowData map(Long id) {
      return GenericRowData.of(id, StringData.fromString("user-" + id), System.currentTimeMillis());
    }
  }
}
