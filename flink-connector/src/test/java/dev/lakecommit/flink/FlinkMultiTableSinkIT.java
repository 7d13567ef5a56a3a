package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.iceberg.CutAudit;
import dev.lakecommit.iceberg.MultiTableSink;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
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
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.Collector;
import org.apache.flink.util.ExceptionUtils;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Flink sink of several Iceberg tables ({@link IcebergTables}) in a MiniCluster, on a catalog with atomic cuts
 * (JDBC on SQLite) and one with cut records (Hadoop): a transfer workload whose every transfer is a debit row and a
 * credit row routed by a column to two tables, the debits moving to a table that appears mid-run, under injected
 * failovers of every subtask. Every run ends with each row once, and every checkpoint of the job read as a cut
 * balances (the same transfers in the debit tables as in the credits).
 */
class FlinkMultiTableSinkIT {
  @RegisterExtension
  static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
      new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
          .build());

  static final RowType ROW_TYPE = RowType.of(
      new LogicalType[] {new BigIntType(false), new BigIntType(false), new VarCharType(false, 32),
          new BigIntType(false)},
      new String[] {"id", "transfer", "side", "amount"});
  static final TableIdentifier DEBITS = TableIdentifier.of("bank", "debits");
  static final TableIdentifier CREDITS = TableIdentifier.of("bank", "credits");
  static final TableIdentifier LATE_DEBITS = TableIdentifier.of("bank", "debits_late");
  static final List<TableIdentifier> TABLES = List.of(DEBITS, CREDITS, LATE_DEBITS);

  @TempDir Path dir;

  Map<String, String> catalog(String kind) {
    return switch (kind) {
      case "jdbc" -> Map.of("type", "jdbc", "uri", "jdbc:sqlite:" + dir.resolve("catalog.db"),
          "warehouse", dir.resolve("warehouse").toUri().toString(), "jdbc.schema-version", "V1");
      case "hadoop" -> Map.of("type", "hadoop", "warehouse", dir.resolve("warehouse").toUri().toString());
      default -> throw new IllegalArgumentException(kind);
    };
  }

  /** Transfer {@code t}: a debit row (id 2t) and a credit row (id 2t + 1) of the same amount, from one call. */
  static final class Transfer implements FlatMapFunction<Long, RowData> {
    private final long lateFrom;
    private final String badSideAt;

    /**
     * @param lateFrom from this transfer on, debits go to {@code debits_late}
     * @param badSideAt a side value that names no table, given to the debit of transfer {@code lateFrom} if not null
     */
    Transfer(long lateFrom, String badSideAt) {
      this.lateFrom = lateFrom;
      this.badSideAt = badSideAt;
    }

    @Override
    public void flatMap(Long t, Collector<RowData> out) {
      long amount = 1 + t % 97;
      String debits = t < lateFrom ? "debits" : badSideAt != null && t == lateFrom ? badSideAt : "debits_late";
      out.collect(GenericRowData.of(2 * t, t, StringData.fromString(debits), -amount));
      out.collect(GenericRowData.of(2 * t + 1, t, StringData.fromString("credits"), amount));
    }
  }

  static DataStream<RowData> transfers(StreamExecutionEnvironment env, long from, long count, double perSecond,
      long lateFrom, String badSide) {
    return env.fromSource(new DataGeneratorSource<>(i -> from + i, count, RateLimiterStrategy.perSecond(perSecond),
            Types.LONG), WatermarkStrategy.noWatermarks(), "transfers")
        .uid("transfers").setParallelism(1)
        .flatMap(new Transfer(lateFrom, badSide)).uid("transfer-rows")
        .returns(InternalTypeInfo.of(ROW_TYPE));
  }

  IcebergTables tables(String kind) {
    return IcebergTables.builder()
        .catalogProperties(catalog(kind))
        .routeByColumn("side", "bank.${side}")
        .tableProperties(Map.of("format-version", "2"))
        .maxOpenFiles(4)
        .build();
  }

  LakecommitFlinkSink sink(String kind) {
    return LakecommitFlinkSink.forRowData(ROW_TYPE).icebergTables(tables(kind)).jobId("bank-" + kind).build();
  }

  Catalog openCatalog(String kind) {
    return org.apache.iceberg.CatalogUtil.buildIcebergCatalog("lakecommit", catalog(kind),
        new org.apache.hadoop.conf.Configuration());
  }

  /**
   * Two runs of the job one after the other (the second a fresh start with the same job id, continuing above the
   * first's last cut), each subtask failing once at a random row in each: every row lands once and every cut
   * balances, including the table that first appears in the second half of the first run.
   */
  @ParameterizedTest
  @ValueSource(strings = {"jdbc", "hadoop"})
  void everyCutOfTransfersBalancesThroughFailovers(String kind) throws Exception {
    long count = TestScale.pick(300, 3_000);
    long seed = TestScale.seed();
    int thrownBefore = TestJobs.Chaos.THROWN.get();
    for (int run = 0; run < 2; run++) {
      StreamExecutionEnvironment env = TestJobs.environment(2, 4);
      transfers(env, run * count, count, 150, count / 2, null)
          .map(new TestJobs.Chaos(seed + run, 1, (int) count / 2)).uid("chaos").returns(InternalTypeInfo.of(ROW_TYPE))
          .sinkTo(sink(kind)).uid("bank-sink");
      env.execute("transfers " + kind + " run " + run);
    }
    assertThat(TestJobs.Chaos.THROWN.get() - thrownBefore).as("injected failovers (seed %s)", seed).isPositive();

    Catalog catalog = openCatalog(kind);
    List<Long> ids = new ArrayList<>();
    for (TableIdentifier table : TABLES) {
      CutAudit.rows(catalog.loadTable(table), null).forEach(row -> ids.add((Long) row.getField("id")));
    }
    assertThat(ids).as("every row once (seed %s)", seed).hasSize((int) (4 * count)).doesNotHaveDuplicates();
    assertThat(ids).allMatch(id -> id >= 0 && id < 4 * count);

    assertEveryCutBalances(catalog);
    assertThat(lastCut(kind, JobId.of("bank-" + kind))).as("the job's last cut")
        .isEqualTo(new CutAudit(catalog, TABLES).checkpoints().last());
  }

  /**
   * A restore from a savepoint older than the job's last cut (the job went on committing after it) is refused before
   * anything of it lands: every table keeps exactly the rows it had, and every cut still balances.
   */
  @Test
  void aRestoreFromAnOlderSavepointIsRefused() throws Exception {
    JobId job = JobId.of("bank-jdbc");
    long endless = 1L << 40;
    StreamExecutionEnvironment envA = TestJobs.environment(2, 0);
    transfers(envA, 0, endless, 200, 100, null).sinkTo(sink("jdbc")).uid("bank-sink");
    JobClient copyA = envA.executeAsync("older savepoint: copy A");
    String savepoint;
    try {
      awaitCut("jdbc", job, 2);
      savepoint = copyA.triggerSavepoint(dir.resolve("savepoints").toUri().toString(), SavepointFormatType.CANONICAL)
          .get(2, TimeUnit.MINUTES);
      awaitCut("jdbc", job, lastCut("jdbc", job) + 3);
    } finally {
      copyA.cancel().get(1, TimeUnit.MINUTES);
    }
    FlinkRunFencingIT.awaitTerminal(copyA, Duration.ofMinutes(1));
    Map<TableIdentifier, List<Record>> before = new CutAudit(openCatalog("jdbc"), TABLES).at(Long.MAX_VALUE);

    StreamExecutionEnvironment envB = TestJobs.environment(2, 0, savepoint);
    transfers(envB, 0, endless, 200, 100, null).sinkTo(sink("jdbc")).uid("bank-sink");
    assertThatThrownBy(() -> envB.execute("older savepoint: copy B"))
        .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e)).contains("already holds checkpoint")
            .contains("newer than the restored Flink state"));

    Catalog catalog = openCatalog("jdbc");
    Map<TableIdentifier, List<Record>> after = new CutAudit(catalog, TABLES).at(Long.MAX_VALUE);
    for (TableIdentifier table : TABLES) {
      assertThat(transfers(after.getOrDefault(table, List.of()))).as("rows of %s", table)
          .isEqualTo(transfers(before.getOrDefault(table, List.of())));
    }
    assertEveryCutBalances(catalog);
  }

  /**
   * Runs of one job that follow and overlap: copy A stops with a savepoint, copy B restores it and goes on, copy C is
   * submitted beside B with the same job id. B commits nothing after C's claim and fails as fenced; the transfers of
   * A and B land as one unbroken sequence from 0 (the source runs in one subtask, so every cut is a prefix of it),
   * C's all land, and every cut balances.
   */
  @ParameterizedTest
  @ValueSource(strings = {"jdbc", "hadoop"})
  void aSavepointRestoreContinuesAndASecondCopyFencesIt(String kind) throws Exception {
    JobId job = JobId.of("bank-" + kind);
    long endless = 1L << 40;
    StreamExecutionEnvironment envA = TestJobs.environment(2, 0);
    transfers(envA, 0, endless, 200, 100, null).sinkTo(sink(kind)).uid("bank-sink");
    JobClient copyA = envA.executeAsync("copy A " + kind);
    awaitCut(kind, job, 2);
    String savepoint = copyA.stopWithSavepoint(false, dir.resolve("savepoints").toUri().toString(),
        SavepointFormatType.CANONICAL).get(2, TimeUnit.MINUTES);
    long afterA = lastCut(kind, job);

    StreamExecutionEnvironment envB = TestJobs.environment(2, 0, savepoint);
    transfers(envB, 0, endless, 200, 100, null).sinkTo(sink(kind)).uid("bank-sink");
    JobClient copyB = envB.executeAsync("copy B " + kind);
    long cFrom = 1_000_000;
    try {
      awaitCut(kind, job, afterA + 2);
      StreamExecutionEnvironment envC = TestJobs.environment(2, 0);
      transfers(envC, cFrom, 300, 1_000, cFrom, null).sinkTo(sink(kind)).uid("bank-sink");
      JobClient copyC = envC.executeAsync("copy C " + kind);
      copyC.getJobExecutionResult().get(3, TimeUnit.MINUTES);
      assertThat(FlinkRunFencingIT.awaitTerminal(copyB, Duration.ofMinutes(2))).as("copy B after copy C's claim")
          .isEqualTo(JobStatus.FAILED);
      assertThatThrownBy(() -> copyB.getJobExecutionResult().get(1, TimeUnit.MINUTES))
          .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e)).contains("is fenced"));
    } finally {
      if (!copyB.getJobStatus().get(1, TimeUnit.MINUTES).isGloballyTerminalState()) {
        copyB.cancel().get(1, TimeUnit.MINUTES);
      }
    }

    Catalog catalog = openCatalog(kind);
    Map<TableIdentifier, List<Record>> now = new CutAudit(catalog, TABLES).at(Long.MAX_VALUE);
    List<Long> debits = new ArrayList<>(transfers(now.getOrDefault(DEBITS, List.of())));
    debits.addAll(transfers(now.getOrDefault(LATE_DEBITS, List.of())));
    debits.sort(null);
    assertThat(debits).as("debits").isEqualTo(transfers(now.get(CREDITS))).doesNotHaveDuplicates();
    List<Long> ab = debits.stream().filter(t -> t < cFrom).toList();
    assertThat(ab).as("copies A and B: one unbroken sequence past A's savepoint")
        .hasSizeGreaterThan((int) debits.stream().filter(t -> t < 100).count())
        .isEqualTo(java.util.stream.LongStream.range(0, ab.size()).boxed().toList());
    assertThat(debits.stream().filter(t -> t >= cFrom).toList()).as("copy C")
        .isEqualTo(java.util.stream.LongStream.range(cFrom, cFrom + 300).boxed().toList());
    assertEveryCutBalances(catalog);
  }

  private void awaitCut(String kind, JobId job, long min) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (lastCut(kind, job) < min) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("No cut " + min + " of job " + job + " after 2 minutes");
      }
      Thread.sleep(100);   // polling interval of a bounded wait for a condition, not synchronisation
    }
  }

  private long lastCut(String kind, JobId job) throws Exception {
    try (MultiTableSink<?> tables = MultiTableSink.forRecords(catalog(kind)).router(r -> DEBITS).build()) {
      return tables.lastCut(job).map(cut -> cut.checkpointId()).orElse(0L);
    }
  }

  /** Every checkpoint of the job read as a cut: the debits balance the credits, transfer by transfer. */
  private static void assertEveryCutBalances(Catalog catalog) {
    CutAudit audit = new CutAudit(catalog, TABLES);
    assertThat(audit.checkpoints()).as("cuts").hasSizeGreaterThan(2);
    for (long checkpoint : audit.checkpoints()) {
      Map<Long, Long> debits = new TreeMap<>();
      Map<Long, Long> credits = new TreeMap<>();
      audit.at(checkpoint).forEach((table, rows) -> {
        for (Record row : rows) {
          (table.equals(CREDITS) ? credits : debits).merge((Long) row.getField("transfer"),
              (table.equals(CREDITS) ? 1 : -1) * (Long) row.getField("amount"), Long::sum);
        }
      });
      assertThat(debits).as("debits at cut %s", checkpoint).isEqualTo(credits);
    }
  }

  /**
   * A row whose column names no table fails the job, naming the row; nothing of its checkpoint is committed (an
   * earlier checkpoint may have committed whole transfers before it).
   */
  @Test
  void aRowRoutedToNoTableFailsTheJobNamingIt() throws Exception {
    StreamExecutionEnvironment env = TestJobs.environment(1, 0);
    transfers(env, 0, 20, 1_000, 10, "debits/../x").sinkTo(sink("jdbc")).uid("bank-sink");
    assertThatThrownBy(() -> env.execute("bad route"))
        .rootCause().hasMessageContaining("routes to 'bank.debits/../x'").hasMessageContaining("side = ");
    Map<TableIdentifier, List<Record>> now = new CutAudit(openCatalog("jdbc"), TABLES).at(Long.MAX_VALUE);
    List<Long> debits = transfers(now.getOrDefault(DEBITS, List.of()));
    assertThat(debits).as("debits committed").isEqualTo(transfers(now.getOrDefault(CREDITS, List.of())))
        .allMatch(t -> t < 10);
  }

  private static List<Long> transfers(List<Record> rows) {
    return rows.stream().map(row -> (Long) row.getField("transfer")).sorted().toList();
  }

  /**
   * Tables named by a function of the row, created with the schema a function gives (here: the row type's columns
   * without the side, partitioned by the transfer's bucket): every row lands once in its table, with that schema.
   */
  @Test
  void aRouteFunctionAndSchemasOfTheirOwn() throws Exception {
    org.apache.iceberg.Schema ledger = new org.apache.iceberg.Schema(
        org.apache.iceberg.types.Types.NestedField.required(1, "id", org.apache.iceberg.types.Types.LongType.get()),
        org.apache.iceberg.types.Types.NestedField.required(2, "transfer",
            org.apache.iceberg.types.Types.LongType.get()),
        org.apache.iceberg.types.Types.NestedField.required(3, "amount",
            org.apache.iceberg.types.Types.LongType.get()));
    IcebergTables tables = IcebergTables.builder()
        .catalogProperties(catalog("jdbc"))
        .route(row -> "ledger." + (row.getLong(3) < 0 ? "out" : "in"))
        .schemas(table -> ledger)
        .partitionBy("bucket(4, transfer)")
        .build();
    StreamExecutionEnvironment env = TestJobs.environment(2, 0);
    transfers(env, 0, 100, 1_000, 100, null)
        .sinkTo(LakecommitFlinkSink.forRowData(ROW_TYPE).icebergTables(tables).jobId("ledger").build())
        .uid("ledger-sink");
    env.execute("ledger");

    Catalog catalog = openCatalog("jdbc");
    for (String side : List.of("out", "in")) {
      org.apache.iceberg.Table table = catalog.loadTable(TableIdentifier.of("ledger", side));
      assertThat(table.schema().columns()).extracting(org.apache.iceberg.types.Types.NestedField::name)
          .containsExactly("id", "transfer", "amount");
      assertThat(table.spec().fields()).hasSize(1);
      assertThat(transfers(CutAudit.rows(table, null))).as("transfers in ledger.%s", side)
          .isEqualTo(java.util.stream.LongStream.range(0, 100).boxed().toList());
    }
  }

  /** The sink is checked when it is built: a route column the rows lack is refused, naming it. */
  @Test
  void aRouteColumnTheRowsLackIsRefusedAtBuild() {
    IcebergTables tables = IcebergTables.builder().catalogProperties(catalog("hadoop"))
        .routeByColumn("kind", "bank.${kind}").build();
    assertThatThrownBy(() -> LakecommitFlinkSink.forRowData(ROW_TYPE).icebergTables(tables).jobId("x").build())
        .hasMessageContaining("no column 'kind'").hasMessageContaining("[id, transfer, side, amount]");
  }
}
