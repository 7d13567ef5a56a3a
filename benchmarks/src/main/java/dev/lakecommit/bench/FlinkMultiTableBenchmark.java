package dev.lakecommit.bench;

import dev.lakecommit.flink.IcebergTables;
import dev.lakecommit.flink.LakecommitFlinkSink;
import dev.lakecommit.iceberg.HadoopConfs;
import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.util.Collector;
import org.apache.iceberg.DistributionMode;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.flink.CatalogLoader;
import org.apache.iceberg.flink.sink.dynamic.DynamicIcebergSink;
import org.apache.iceberg.flink.sink.dynamic.DynamicRecord;
import org.apache.iceberg.flink.sink.dynamic.DynamicRecordGenerator;
import org.apache.iceberg.io.CloseableIterable;
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
 * One bounded Flink job writing many tables, end to end in a MiniCluster: Lakecommit's Flink sink of several tables
 * ({@link IcebergTables}: one cut per checkpoint) against Iceberg's own {@code DynamicIcebergSink} (iceberg-flink-2.1
 * 1.11.0: a commit per table per checkpoint).
 *
 * <p>Both variants run the same job on the same MiniCluster (one per trial, one task manager with {@code
 * parallelism} slots): {@code fromSequence(0, rows - 1)} → {@link GenericRowData} ({@code id} bigint, {@code tbl}
 * int = id mod {@code tables}, {@code name} string) → the sink, at {@code parallelism}, checkpointing every {@code
 * checkpointMillis} plus the final checkpoint, no restarts; row {@code id} goes to table {@code t<tbl>}. Each
 * operation ({@code SingleShotTime}) writes into {@code tables} fresh, empty, unpartitioned format-v2 tables of a
 * namespace of its own, created before the measurement in the {@link #catalog}: {@code jdbc} (SQLite, where
 * Lakecommit's cut is one transaction) or {@code hadoop} (where it commits table by table and records the cut), on
 * local disk ({@link FastLocalFileSystem}). Measured: building the job graph, submitting it, running it to the end.
 * Score: ms per job; rows/s is {@code rows} ÷ score. Each writer of either sink keeps a file open per table (the
 * Lakecommit sink's open-file bound is set above {@code tables}).
 *
 * <p>After every job (outside the measurement) every table is read back and the ids compared with the source:
 * losses and duplicates are counted and printed, not thrown.
 *
 * <pre>
 * java -Xms2g -Xmx2g -jar benchmarks/target/benchmarks.jar FlinkMultiTableBenchmark -f 0 -wi 1 -i 3 -rf json
 * </pre>
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 1)
@Measurement(iterations = 3)
@State(Scope.Benchmark)
public class FlinkMultiTableBenchmark {
  static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.required(2, "tbl", Types.IntegerType.get()),
      Types.NestedField.optional(3, "name", Types.StringType.get()));
  static final RowType ROW_TYPE = RowType.of(
      new LogicalType[] {new BigIntType(false), new IntType(false), new VarCharType(VarCharType.MAX_LENGTH)},
      new String[] {"id", "tbl", "name"});

  @Param({"1000000"})
  public long rows;

  @Param({"100"})
  public int tables;

  @Param({"2"})
  public int parallelism;

  @Param({"1000"})
  public long checkpointMillis;

  @Param({"jdbc", "hadoop"})
  public String catalog;

  private MiniCluster cluster;
  private Path root;
  private Map<String, String> catalogProperties;
  private Catalog lake;
  private int iteration;
  private String namespace;
  private String variant;
  private final List<String> outcomes = new ArrayList<>();

  @Setup(Level.Trial)
  public void setUpTrial() throws Exception {
    root = Files.createTempDirectory("lakecommit-bench-flink-tables-");
    String warehouse = root.resolve("warehouse").toUri().toString();
    catalogProperties = switch (catalog) {
      case "jdbc" -> Map.of("type", "jdbc", "uri", "jdbc:sqlite:" + root.resolve("catalog.db"),
          "warehouse", warehouse, "jdbc.schema-version", "V1",
          "fs.file.impl", FastLocalFileSystem.class.getName(), "fs.file.impl.disable.cache", "true");
      case "hadoop" -> Map.of("type", "hadoop", "warehouse", warehouse,
          "fs.file.impl", FastLocalFileSystem.class.getName(), "fs.file.impl.disable.cache", "true");
      default -> throw new IllegalArgumentException("Unknown catalog " + catalog + ": jdbc or hadoop");
    };
    lake = CommitChecks.catalog(catalogProperties);
    cluster = BenchFlink.startCluster(parallelism);
  }

  @Setup(Level.Iteration)
  public void setUpIteration() {
    namespace = "i" + iteration++;
    if (lake instanceof SupportsNamespaces namespaces) {
      namespaces.createNamespace(Namespace.of(namespace));
    }
    for (int t = 0; t < tables; t++) {
      lake.createTable(TableIdentifier.of(namespace, "t" + t), SCHEMA, PartitionSpec.unpartitioned(),
          Map.of(TableProperties.FORMAT_VERSION, "2"));
    }
    variant = null;
  }

  @TearDown(Level.Iteration)
  public void tearDownIteration() {
    if (variant != null) {
      String outcome = check();
      outcomes.add(outcome);
      System.out.println(outcome);
    }
    for (int t = 0; t < tables; t++) {
      lake.dropTable(TableIdentifier.of(namespace, "t" + t), true);
    }
  }

  @TearDown(Level.Trial)
  public void tearDownTrial() throws Exception {
    try {
      outcomes.forEach(System.out::println);
      if (cluster != null) {
        cluster.close();
      }
      if (lake instanceof java.io.Closeable closeable) {
        closeable.close();
      }
    } finally {
      BenchFiles.deleteRecursively(root);
    }
  }

  /** Lakecommit's Flink sink of several tables: one cut per checkpoint over every table. */
  @Benchmark
  public void lakecommit() throws Exception {
    StreamExecutionEnvironment env = environment();
    source(env).sinkTo(LakecommitFlinkSink.forRowData(ROW_TYPE)
            .icebergTables(IcebergTables.builder()
                .catalogName("bench")
                .catalogProperties(catalogProperties)
                .routeByColumn("tbl", namespace + ".t${tbl}")
                .maxOpenFiles(tables + 8)
                .build())
            .jobId("bench-" + namespace)
            .build())
        .uid("lakecommit-sink");
    run(env, "lakecommit");
  }

  /** Iceberg's DynamicIcebergSink: each row names its table; a commit per table per checkpoint. */
  @Benchmark
  public void iceberg() throws Exception {
    StreamExecutionEnvironment env = environment();
    CatalogLoader loader = switch (catalog) {
      case "jdbc" -> CatalogLoader.custom("bench", catalogProperties, HadoopConfs.from(catalogProperties),
          "org.apache.iceberg.jdbc.JdbcCatalog");
      default -> CatalogLoader.hadoop("bench", HadoopConfs.from(catalogProperties), catalogProperties);
    };
    DynamicIcebergSink.forInput(source(env))
        .generator(new ToTable(namespace, parallelism))
        .catalogLoader(loader)
        .writeParallelism(parallelism)
        .uidPrefix("iceberg-dynamic")
        .append();
    run(env, "iceberg");
  }

  private StreamExecutionEnvironment environment() {
    return BenchFlink.environment(parallelism, checkpointMillis);
  }

  private DataStream<RowData> source(StreamExecutionEnvironment env) {
    return env.fromSequence(0, rows - 1).uid("sequence")
        .map(new ToRow(tables)).uid("to-row")
        .returns(InternalTypeInfo.of(ROW_TYPE));
  }

  private void run(StreamExecutionEnvironment env, String name) throws Exception {
    variant = name;
    cluster.executeJobBlocking(env.getStreamGraph().getJobGraph());
  }

  /** Reads every table back: rows, losses and duplicates over all tables. */
  private String check() {
    Set<Long> seen = new HashSet<>();
    long read = 0;
    long duplicates = 0;
    for (int t = 0; t < tables; t++) {
      try (CloseableIterable<Record> records =
          IcebergGenerics.read(lake.loadTable(TableIdentifier.of(namespace, "t" + t))).build()) {
        for (Record record : records) {
          read++;
          if (!seen.add((Long) record.getField("id"))) {
            duplicates++;
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    long losses = rows - seen.size();
    return String.format("[flink-tables-check] %s %s %s tables: expected %d rows, read back %d, losses %d,"
        + " duplicates %d%s", variant, catalog, tables, rows, read, losses, duplicates,
        losses == 0 && duplicates == 0 ? "" : "  NOT EXACTLY ONCE");
  }

  /** id → (id, id mod tables, "user-id"). */
  static final class ToRow implements MapFunction<Long, RowData> {
    private final int tables;

    ToRow(int tables) {
      this.tables = tables;
    }

    @Override
    public RowData map(Long id) {
      return GenericRowData.of(id, (int) (id % tables), StringData.fromString("user-" + id));
    }
  }

  /** The row to table {@code t<tbl>} of the namespace, unpartitioned, without a shuffle (as Lakecommit's). */
  static final class ToTable implements DynamicRecordGenerator<RowData> {
    private final String namespace;
    private final int parallelism;

    ToTable(String namespace, int parallelism) {
      this.namespace = namespace;
      this.parallelism = parallelism;
    }

    @Override
    public void generate(RowData row, Collector<DynamicRecord> out) {
      out.collect(new DynamicRecord(TableIdentifier.of(namespace, "t" + row.getInt(1)), "main", SCHEMA, row,
          PartitionSpec.unpartitioned(), DistributionMode.NONE, parallelism));
    }
  }
}
