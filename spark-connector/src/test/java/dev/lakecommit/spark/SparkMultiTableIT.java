package dev.lakecommit.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.explode;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sequence;
import static org.apache.spark.sql.functions.udf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.iceberg.CutAudit;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Structured Streaming into several Iceberg tables, one cut per micro-batch, on a JDBC catalog (SQLite: all tables
 * in one transaction) and a Hadoop catalog (table by table, then the cut record): a routed DataFrame of transfers
 * (a debit row and a credit row per transfer) and several DataFrames (orders and their lines). A micro-batch whose
 * second DataFrame fails after the first staged commits nothing anywhere and leaves no staged file; the query
 * restarted on its checkpoint location, and a query of the same pinned job on a new one, end with every row once,
 * and every cut read back balances.
 */
class SparkMultiTableIT {
  private static final TableIdentifier DEBITS = TableIdentifier.of("bank", "debits");
  private static final TableIdentifier CREDITS = TableIdentifier.of("bank", "credits");
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  private static final TableIdentifier LINES = TableIdentifier.of("shop", "lines");
  private static final int ROWS_PER_FILE = 100;

  /** The micro-batch whose orders fail in every task attempt; -1: none. */
  private static final AtomicLong FAIL_BATCH = new AtomicLong(-1);

  @TempDir
  static Path dir;

  static SparkSession spark;

  @BeforeAll
  static void start() {
    // Spark reads the Hadoop catalog's tables as the sink writes them (catalog "lake")
    spark = SparkTestSupport.session("SparkMultiTableIT", dir.resolve("ice"), Map.of(
        "spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.lake.type", "hadoop",
        "spark.sql.catalog.lake.warehouse", dir.resolve("hadoop").resolve("warehouse").toUri().toString(),
        "spark.sql.catalog.lake.cache-enabled", "false"));
  }

  @AfterAll
  static void stop() {
    if (spark != null) {
      spark.stop();
    }
  }

  static Map<String, String> catalog(String kind) {
    Path root = dir.resolve(kind);
    try {
      Files.createDirectories(root);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return switch (kind) {
      case "jdbc" -> Map.of("type", "jdbc", "uri", "jdbc:sqlite:" + root.resolve("catalog.db"),
          "warehouse", root.resolve("warehouse").toUri().toString(), "jdbc.schema-version", "V1");
      case "hadoop" -> Map.of("type", "hadoop", "warehouse", root.resolve("warehouse").toUri().toString());
      default -> throw new IllegalArgumentException(kind);
    };
  }

  static Catalog openCatalog(String kind) {
    return CatalogUtil.buildIcebergCatalog("lakecommit", catalog(kind), new org.apache.hadoop.conf.Configuration());
  }

  /** Each transfer as two rows: its debit (negative) and its credit, told apart by {@code side}. */
  static Dataset<Row> transfers(Dataset<Row> batch) {
    Column amount = col("id").mod(97).plus(1);
    return batch.select(lit("debits").as("side"), col("id"), amount.multiply(-1).as("amount"))
        .union(batch.select(lit("credits").as("side"), col("id"), amount.as("amount")));
  }

  @ParameterizedTest
  @ValueSource(strings = {"jdbc", "hadoop"})
  void aRoutedStreamCommitsEveryMicroBatchAsOneCut(String kind) throws Exception {
    int files = 5;
    Path input = dir.resolve(kind + "-transfers");
    StreamingTestSupport.writeInput(input, files, ROWS_PER_FILE);
    SparkTables tables = SparkTables.builder().catalogProperties(catalog(kind))
        .routeByColumn("side", "bank.${side}").build();
    MicroBatchWriter writer = LakecommitSpark.foreachBatch().icebergTables(tables);

    StreamingQuery query = StreamingTestSupport.stream(spark, input).writeStream()
        .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, id) -> writer.call(transfers(batch), id))
        .option("checkpointLocation", dir.resolve(kind + "-transfers-checkpoint").toString())
        .start();
    query.processAllAvailable();
    query.stop();

    CutAudit audit = new CutAudit(openCatalog(kind), List.of(DEBITS, CREDITS));
    assertThat(audit.checkpoints()).as("one cut per micro-batch").hasSize(files);
    for (long checkpoint : audit.checkpoints()) {
      Map<TableIdentifier, List<Record>> cut = audit.at(checkpoint);
      assertThat(sum(cut.get(DEBITS), "amount") + sum(cut.get(CREDITS), "amount"))
          .as("the cut of checkpoint %s balances", checkpoint).isZero();
      assertThat(ids(cut.get(DEBITS))).as("transfers in the cut of checkpoint %s", checkpoint)
          .hasSize((int) checkpoint * ROWS_PER_FILE).containsExactlyInAnyOrderElementsOf(ids(cut.get(CREDITS)));
    }
    Map<TableIdentifier, List<Record>> last = audit.at(Long.MAX_VALUE);
    assertThat(ids(last.get(DEBITS))).containsExactlyInAnyOrderElementsOf(
        SparkTestSupport.range(0, (long) files * ROWS_PER_FILE));
    if (kind.equals("hadoop")) {
      // as a Spark user reads a cut: each table VERSION AS OF its snapshot of the cut
      Catalog catalog = openCatalog(kind);
      for (long checkpoint : audit.checkpoints()) {
        long debits = snapshotAt(catalog.loadTable(DEBITS), checkpoint);
        long credits = snapshotAt(catalog.loadTable(CREDITS), checkpoint);
        Row sums = spark.sql("SELECT (SELECT sum(amount) FROM lake.bank.debits VERSION AS OF " + debits + ")"
            + " + (SELECT sum(amount) FROM lake.bank.credits VERSION AS OF " + credits + "),"
            + " (SELECT count(*) FROM lake.bank.credits VERSION AS OF " + credits + ")").first();
        assertThat(sums.getLong(0)).as("Spark's sum of the cut of checkpoint %s", checkpoint).isZero();
        assertThat(sums.getLong(1)).as("Spark's count of the cut of checkpoint %s", checkpoint)
            .isEqualTo(checkpoint * ROWS_PER_FILE);
      }
    }
  }

  /** The table's newest snapshot of a checkpoint at or below {@code checkpoint}. */
  private static long snapshotAt(Table table, long checkpoint) {
    long best = -1;
    long snapshotId = -1;
    for (org.apache.iceberg.Snapshot snapshot : table.snapshots()) {
      String id = snapshot.summary().get(dev.lakecommit.core.CommitId.CHECKPOINT_ID_KEY);
      if (id != null && Long.parseLong(id) <= checkpoint && Long.parseLong(id) > best) {
        best = Long.parseLong(id);
        snapshotId = snapshot.snapshotId();
      }
    }
    assertThat(snapshotId).as("a snapshot of %s at or below checkpoint %s", table.name(), checkpoint).isNotNegative();
    return snapshotId;
  }

  /**
   * Orders and their lines, two DataFrames of each micro-batch in one cut. Batch 2's orders fail in every task attempt
   * after its lines were staged: the query stops, no table shows batch 2, and its staged lines are gone. The query
   * restarted on its checkpoint location writes batch 2 and the rest once; a query of the same pinned job on a new
   * checkpoint location continues above it. Every cut holds each order with all its lines.
   */
  @ParameterizedTest
  @ValueSource(strings = {"jdbc", "hadoop"})
  void severalDataFramesOfAMicroBatchAreOneCutThroughFailureRestartAndANewCheckpointLocation(String kind)
      throws Exception {
    Path input = dir.resolve(kind + "-orders");
    Path checkpoint = dir.resolve(kind + "-orders-checkpoint");
    StreamingTestSupport.writeInput(input, 0, 4, ROWS_PER_FILE);
    SparkTables tables = SparkTables.builder().catalogProperties(catalog(kind)).build();
    FAIL_BATCH.set(2);
    StreamingQuery first = startOrders(input, checkpoint, tables);
    assertThatThrownBy(first::processAllAvailable).hasStackTraceContaining("injected failure at order");
    first.stop();
    CutAudit failed = new CutAudit(openCatalog(kind), List.of(ORDERS, LINES));
    assertThat(failed.checkpoints()).as("cuts before the failed micro-batch").containsExactly(1L, 2L);
    assertThat(stagedButNotCommitted(kind, LINES)).as("staged lines of the failed micro-batch").isEmpty();

    FAIL_BATCH.set(-1);
    StreamingQuery restarted = startOrders(input, checkpoint, tables);
    restarted.processAllAvailable();
    restarted.stop();
    assertThat(restarted.id()).isEqualTo(first.id());

    // The same job from a new checkpoint location: its batch ids start at 0 again, its checkpoints above the last cut.
    Path moreInput = dir.resolve(kind + "-orders-2");
    StreamingTestSupport.writeInput(moreInput, 4, 2, ROWS_PER_FILE);
    StreamingQuery moved = startOrders(moreInput, dir.resolve(kind + "-orders-checkpoint-2"), tables);
    moved.processAllAvailable();
    moved.stop();

    CutAudit audit = new CutAudit(openCatalog(kind), List.of(ORDERS, LINES));
    assertThat(audit.checkpoints()).as("one cut per micro-batch of both queries").containsExactly(1L, 2L, 3L, 4L,
        5L, 6L);
    for (long cut : audit.checkpoints()) {
      Map<TableIdentifier, List<Record>> rows = audit.at(cut);
      Map<Long, Long> lineCounts = rows.get(LINES).stream()
          .collect(Collectors.groupingBy(line -> (Long) line.getField("order_id"), Collectors.counting()));
      Map<Long, Long> expected = new HashMap<>();
      rows.get(ORDERS).forEach(order -> expected.put((Long) order.getField("order_id"),
          ((Integer) order.getField("line_count")).longValue()));
      assertThat(expected).as("orders in the cut of checkpoint %s", cut).hasSize((int) cut * ROWS_PER_FILE);
      assertThat(lineCounts).as("each order with all its lines in the cut of checkpoint %s", cut)
          .isEqualTo(expected);
    }
    assertThat(stagedButNotCommitted(kind, ORDERS)).isEmpty();
    assertThat(stagedButNotCommitted(kind, LINES)).isEmpty();
  }

  /** Orders and their lines of each micro-batch, as one cut; the orders of {@link #FAIL_BATCH} fail. */
  private StreamingQuery startOrders(Path input, Path checkpoint, SparkTables tables) throws Exception {
    MicroBatchWriter writer = LakecommitSpark.foreachBatch().jobId("shop").icebergTables(tables);
    UserDefinedFunction fail = udf((Long id) -> {
      throw new IllegalStateException("injected failure at order " + id);
    }, DataTypes.LongType);
    return StreamingTestSupport.stream(spark, input).writeStream()
        .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, id) -> {
          Column orderId = id == FAIL_BATCH.get() ? fail.apply(col("id")) : col("id");
          // written in the order of their names: the lines are staged before the orders
          writer.writeTables(id, Map.of(
              "shop.orders", batch.select(orderId.as("order_id"), col("name").as("customer"),
                  col("id").mod(3).plus(1).cast("int").as("line_count")),
              "shop.lines", batch.select(col("id").as("order_id"),
                  explode(sequence(lit(1L), col("id").mod(3).plus(1))).as("line_no"))));
        })
        .option("checkpointLocation", checkpoint.toString())
        .start();
  }

  /** A row routed to a table name that is not plain fails its micro-batch, naming the row; nothing is committed. */
  @Test
  void aRowRoutedToAnInvalidTableFailsItsMicroBatchNamingTheRow() throws Exception {
    SparkTables tables = SparkTables.builder().catalogProperties(catalog("jdbc"))
        .routeByColumn("side", "odd.${side}").build();
    MicroBatchWriter writer = LakecommitSpark.foreachBatch().jobId("odd-job").icebergTables(tables);
    Dataset<Row> rows = spark.range(0, 50, 1, 2).select(
        org.apache.spark.sql.functions.when(col("id").equalTo(17), lit("good/../x")).otherwise(lit("good"))
            .as("side"), col("id"));

    assertThatThrownBy(() -> writer.call(rows, 0L)).hasStackTraceContaining("side=good/../x, id=17")
        .hasStackTraceContaining("odd.good/../x");
    Catalog catalog = openCatalog("jdbc");
    assertThat(catalog.tableExists(TableIdentifier.of("odd", "good"))
        ? new CutAudit(catalog, List.of(TableIdentifier.of("odd", "good"))).checkpoints() : Set.of())
        .as("cuts of the failed batch").isEmpty();
    assertThat(stagedButNotCommitted("jdbc", TableIdentifier.of("odd", "good"))).isEmpty();
  }

  /**
   * Two runs of one pinned job: the newer run's first micro-batch claims a newer epoch in every table of the job, and
   * the older run commits nothing from then on; a replayed batch commits nothing either.
   */
  @Test
  void aSecondRunOfThePinnedJobFencesTheFirstAndAReplayCommitsNothing() throws Exception {
    SparkTables tables = SparkTables.builder().catalogProperties(catalog("hadoop"))
        .routeByColumn("side", "fence.${side}").build();
    MicroBatchWriter older = LakecommitSpark.foreachBatch().jobId("fence-job").icebergTables(tables);
    MicroBatchWriter newer = LakecommitSpark.foreachBatch().jobId("fence-job").icebergTables(tables);
    Dataset<Row> batch0 = transfers(SparkTestSupport.rows(spark, 0, 100, 2));
    Dataset<Row> batch1 = transfers(SparkTestSupport.rows(spark, 100, 100, 2));

    older.call(batch0, 0L);
    newer.call(batch0, 0L); // a replay: the cut holds it
    newer.call(batch1, 1L);
    assertThatThrownBy(() -> older.call(transfers(SparkTestSupport.rows(spark, 1_000, 100, 2)), 2L))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("fenced");

    List<TableIdentifier> fenceTables = List.of(TableIdentifier.of("fence", "debits"),
        TableIdentifier.of("fence", "credits"));
    CutAudit audit = new CutAudit(openCatalog("hadoop"), fenceTables);
    assertThat(audit.checkpoints()).containsExactly(1L, 2L);
    Map<TableIdentifier, List<Record>> last = audit.at(Long.MAX_VALUE);
    assertThat(ids(last.get(fenceTables.get(0)))).containsExactlyInAnyOrderElementsOf(SparkTestSupport.range(0, 200));
    for (TableIdentifier table : fenceTables) {
      assertThat(stagedButNotCommitted("hadoop", table)).as("staged files of the fenced run in %s", table).isEmpty();
    }
  }

  @Test
  void aWriterOfTablesWithoutARouteTakesADataFramePerTable() {
    SparkTables tables = SparkTables.builder().catalogProperties(catalog("jdbc")).build();
    MicroBatchWriter writer = LakecommitSpark.foreachBatch().jobId("no-route").icebergTables(tables);
    Dataset<Row> rows = SparkTestSupport.rows(spark, 0, 10, 1);
    assertThatThrownBy(() -> writer.call(rows, 0L)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("routeByColumn").hasMessageContaining("writeTables");
    assertThatThrownBy(() -> writer.writeTables(0L, Map.of("a/b", rows))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Invalid table name 'a/b'");
    MicroBatchWriter oneTable = LakecommitSpark.foreachBatch().jobId("one")
        .iceberg(StreamingTestSupport.config(catalog("hadoop"), "db.one"));
    assertThatThrownBy(() -> oneTable.writeTables(0L, Map.of("db.one", rows)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("icebergTables");
  }

  /** Parquet files under the table's location that none of its snapshots holds. */
  private static Set<String> stagedButNotCommitted(String kind, TableIdentifier identifier) throws IOException {
    Catalog catalog = openCatalog(kind);
    if (!catalog.tableExists(identifier)) {
      return Set.of();
    }
    Table table = catalog.loadTable(identifier);
    Set<String> committed = new HashSet<>();
    for (org.apache.iceberg.Snapshot snapshot : table.snapshots()) {
      try (CloseableIterable<FileScanTask> tasks = table.newScan().useSnapshot(snapshot.snapshotId()).planFiles()) {
        for (FileScanTask task : tasks) {
          DataFile file = task.file();
          committed.add(Path.of(java.net.URI.create(file.location())).toString());
        }
      }
    }
    Path location = Path.of(java.net.URI.create(table.location()));
    try (Stream<Path> files = Files.walk(location)) {
      return files.filter(file -> file.toString().endsWith(".parquet")).map(Path::toString)
          .filter(file -> !committed.contains(file)).collect(Collectors.toSet());
    }
  }

  private static long sum(List<Record> rows, String column) {
    return rows.stream().mapToLong(row -> ((Number) row.getField(column)).longValue()).sum();
  }

  private static List<Long> ids(List<Record> rows) {
    List<Long> ids = new ArrayList<>();
    rows.forEach(row -> ids.add((Long) row.getField("id")));
    return ids;
  }
}
