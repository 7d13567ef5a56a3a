package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.CrashHarness;
import dev.lakecommit.core.runtime.RestoreBehindPolicy;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.CrashingSink;
import dev.lakecommit.core.testing.RangeSource;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.function.ToIntBiFunction;
import java.util.stream.Stream;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The multi-table sink writing two tables by key and one by appending, under the standalone runtime: a change
 * stream of upserts and deletes over both keyed tables and appends to the third, each table equal to the stream's
 * model at every cut (each checkpoint's tables read together) and at the end — without crashes on a catalog with
 * atomic cuts (JDBC on SQLite) and one with cut records (Hadoop), and at every crash point of the protocol.
 * Without the idempotency check a replayed cut writes its rows twice (in the appended table: a replayed row delta
 * deletes its own first copies by key). A delete for the appended table, and records
 * not routed by key, stop the job naming the table.
 */
class MultiTableUpsertTest {
  static final org.apache.iceberg.Schema SCHEMA = new org.apache.iceberg.Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.required(2, "tbl", Types.StringType.get()),
      Types.NestedField.optional(3, "value", Types.StringType.get()));
  static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  static final TableIdentifier LINES = TableIdentifier.of("shop", "lines");
  static final TableIdentifier EVENTS = TableIdentifier.of("shop", "events");
  static final List<TableIdentifier> TABLES = List.of(ORDERS, LINES, EVENTS);
  static final int RECORDS = 240;
  static final int CHECKPOINT_EVERY = 40;
  /** Keys of each keyed table: few enough that most keys are written several times, in several checkpoints. */
  static final int KEYS = 23;

  @TempDir Path dir;
  private final List<AutoCloseable> closeables = new ArrayList<>();
  private CatalogFixture fixture;
  /** The sink of the current life, whose router routes it. */
  private MultiTableSink<Record> current;

  static Stream<String> catalogs() {
    return Stream.of("jdbc-sqlite", "hadoop");
  }

  /** Each crash point once, on the catalogs in turn (every point on both with {@code -Plong}). */
  static Stream<Arguments> crashPoints() {
    return CutFixtures.crashPoints(catalogs().toList(), 1, 170, 4);
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable closeable : closeables) {
      closeable.close();
    }
  }

  private CatalogFixture fixture(String catalog) {
    if (fixture == null) {
      fixture = CatalogFixture.named(catalog, dir, closeables);
    }
    return fixture;
  }

  private MultiTableSink<Record> sink(String catalog, boolean idempotencyCheck) {
    MultiTableSink<Record> sink = MultiTableSink.forRecords(fixture(catalog).properties(), SCHEMA)
        .catalogName(fixture(catalog).name())
        .router(record -> TableIdentifier.of("shop", (String) record.getField("tbl")))
        // one keyed table partitioned by its key, the others not: fewer delete files for every cut's read to apply
        .partitionBy(table -> table.equals(ORDERS) ? List.of("bucket(2, id)") : List.of())
        .upsertKey(table -> table.equals(EVENTS) ? List.of() : List.of("id"))
        .maxRowsPerFile(15)
        .build()
        .idempotencyCheck(idempotencyCheck);
    closeables.add(sink);
    current = sink;
    return sink;
  }

  /** One change of the stream: an upsert of (key, value) into a table, or a delete of the key. */
  record Change(TableIdentifier table, long key, String value, boolean delete) {}

  /** Change i: round robin over the tables; in the keyed ones one in eleven a delete, the others upserts. */
  static Change change(long i) {
    TableIdentifier table = TABLES.get((int) (i % 3));
    if (table.equals(EVENTS)) {
      return new Change(table, i, "e" + i, false);
    }
    return new Change(table, (i * 7) % KEYS, "v" + i, i % 11 == 5);
  }

  /** The tables as the first {@code changes} changes leave them: each table's rows by key. */
  static Map<TableIdentifier, Map<Long, String>> model(long changes) {
    Map<TableIdentifier, Map<Long, String>> tables = new HashMap<>();
    TABLES.forEach(table -> tables.put(table, new HashMap<>()));
    for (long i = 0; i < changes; i++) {
      Change change = change(i);
      if (change.delete()) {
        tables.get(change.table()).remove(change.key());
      } else {
        tables.get(change.table()).put(change.key(), change.value());
      }
    }
    return tables;
  }

  static CheckpointedSource<Record> changes(long count, java.util.function.LongFunction<Change> changeOf) {
    RangeSource positions = new RangeSource(count);
    return position -> {
      CheckpointedSource.SourceReader<Long> reader = positions.open(position);
      GenericRecord template = GenericRecord.create(SCHEMA);
      return new CheckpointedSource.SourceReader<>() {
        @Override
        public Record next() throws IOException {
          Long i = reader.next();
          if (i == null) {
            return null;
          }
          Change change = changeOf.apply(i);
          Record row = template.copy(Map.of("id", change.key(), "tbl", change.table().name(), "value",
              change.delete() ? "deleted" : change.value()));
          return change.delete() ? new DeletedRecord(row) : row;
        }

        @Override
        public byte[] position() {
          return reader.position();
        }

        @Override
        public void close() {}
      };
    };
  }

  private CrashHarness.Outcome run(String catalog, CrashSchedule schedule, boolean idempotencyCheck,
      boolean routedByKey, CheckpointedSource<Record> source) throws IOException {
    Supplier<ToIntBiFunction<Record, Integer>> router = routedByKey ? () -> current.keyRouter() : null;
    return CrashHarness.run(dir.resolve("checkpoints"),
        new CrashHarness.Config(RECORDS, 3, CHECKPOINT_EVERY, 15, false, false, RestoreBehindPolicy.FAIL),
        schedule, crashes -> new CrashingSink<>(sink(catalog, idempotencyCheck), crashes), router, source,
        List::of);
  }

  private CrashHarness.Outcome run(String catalog, CrashSchedule schedule, boolean idempotencyCheck)
      throws IOException {
    return run(catalog, schedule, idempotencyCheck, true, changes(RECORDS, MultiTableUpsertTest::change));
  }

  /** Rows by key, each key's values in the order read: more than one value means the key is there twice. */
  private static Map<Long, List<String>> byKey(List<Record> rows) {
    Map<Long, List<String>> keys = new HashMap<>();
    rows.forEach(row -> keys.computeIfAbsent((Long) row.getField("id"), k -> new ArrayList<>())
        .add((String) row.getField("value")));
    return keys;
  }

  private static Map<Long, List<String>> asLists(Map<Long, String> rows) {
    Map<Long, List<String>> lists = new HashMap<>();
    rows.forEach((key, value) -> lists.put(key, List.of(value)));
    return lists;
  }

  /**
   * Every table equals the model at the end, and at every cut the keyed tables equal the model after the cut's
   * checkpoint (the appended table's cuts are the multi-table sink's own suite's).
   */
  private void assertEveryCutAndTheEndEqualTheModel() {
    Catalog reader = fixture.newCatalog();
    Map<TableIdentifier, Map<Long, String>> end = model(RECORDS);
    assertThat(byKey(CutAudit.rows(reader.loadTable(EVENTS), null))).as("%s at the end", EVENTS)
        .isEqualTo(asLists(end.get(EVENTS)));
    CutAudit audit = new CutAudit(reader, List.of(ORDERS, LINES));
    assertThat(audit.checkpoints()).hasSize(RECORDS / CHECKPOINT_EVERY);
    for (long checkpoint : audit.checkpoints()) {
      Map<TableIdentifier, Map<Long, String>> expected = model(checkpoint * CHECKPOINT_EVERY);
      Map<TableIdentifier, List<Record>> cut = audit.at(checkpoint);
      for (TableIdentifier table : List.of(ORDERS, LINES)) {
        assertThat(byKey(cut.getOrDefault(table, List.of()))).as("%s at cut %s", table, checkpoint)
            .isEqualTo(asLists(expected.get(table)));
      }
    }
  }

  private static List<FileContent> deleteContents(Table table) throws IOException {
    List<FileContent> contents = new ArrayList<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(task -> task.deletes().forEach(delete -> contents.add(delete.content())));
    }
    return contents;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void upsertsAndDeletesByKeyLeaveEveryCutEqualToTheStreamAtItsCheckpoint(String catalog) throws IOException {
    CrashHarness.Outcome outcome = run(catalog, CrashSchedule.none(), true);

    assertThat(outcome.failure()).isNull();
    assertEveryCutAndTheEndEqualTheModel();
    Catalog reader = fixture.newCatalog();
    Table orders = reader.loadTable(ORDERS);
    assertThat(orders.schema().identifierFieldNames()).containsExactly("id");
    assertThat(deleteContents(orders)).as("keys replaced and deleted by delete files").isNotEmpty()
        .contains(FileContent.EQUALITY_DELETES);
    assertThat(deleteContents(reader.loadTable(EVENTS))).as("the appended table has no deletes").isEmpty();
    assertThat(reader.loadTable(EVENTS).schema().identifierFieldNames()).isEmpty();
  }

  @ParameterizedTest(name = "{0}: crash at {1} #{2}")
  @MethodSource("crashPoints")
  void everyCrashPointEndsWithEveryCutEqualToTheStream(String catalog, String point, int occurrence)
      throws IOException {
    CrashHarness.Outcome outcome = run(catalog, CrashSchedule.at(point, occurrence), true);

    assertThat(outcome.crashes()).as("the crash happened").isEqualTo(1);
    assertThat(outcome.failure()).isNull();
    assertEveryCutAndTheEndEqualTheModel();
  }

  @Test
  void withoutTheIdempotencyCheckAReplayedCutLeavesKeysTwice() throws IOException {
    CrashHarness.Outcome outcome = run("jdbc-sqlite", CrashSchedule.at(CrashSchedule.COMMIT_APPLIED, 4), false);

    assertThat(outcome.crashes()).isEqualTo(1);
    Catalog reader = fixture.newCatalog();
    assertThat(byKey(CutAudit.rows(reader.loadTable(EVENTS), null)).values()).as("an event twice")
        .anyMatch(values -> values.size() > 1);
  }

  @Test
  void aDeleteForATableWrittenWithoutKeyStopsTheJobNamingTheTable() throws IOException {
    CrashHarness.Outcome outcome = run("jdbc-sqlite", CrashSchedule.none(), true, true, changes(RECORDS,
        i -> i == 100 ? new Change(EVENTS, 1, null, true) : change(i)));

    assertThat(outcome.failure()).isNotNull();
    assertThat(outcome.failure()).rootCause().hasMessageContaining("table shop.events, which the sink appends to")
        .hasMessageContaining("upsertKey");
    Catalog reader = fixture.newCatalog();
    assertThat(new CutAudit(reader, TABLES).checkpoints()).as("the checkpoints before it").hasSize(2);
  }

  @Test
  void recordsNotRoutedByKeyStopTheJobNamingTheRouter() throws IOException {
    CrashHarness.Outcome outcome = run("hadoop", CrashSchedule.none(), true, false,
        changes(RECORDS, MultiTableUpsertTest::change));

    assertThat(outcome.failure()).isNotNull();
    assertThat(outcome.failure()).rootCause().hasMessageContaining("belongs to writer")
        .hasMessageContaining("MultiTableSink.keyRouter()");
  }
}
