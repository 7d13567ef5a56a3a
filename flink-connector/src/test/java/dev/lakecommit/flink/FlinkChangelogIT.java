package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.iceberg.CommitMode;
import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A job whose result is a changelog: {@code SELECT word, SUM(v), COUNT(*) FROM events GROUP BY word} over a stream
 * of inserts and retractions, with the rows Flink SQL's group aggregate emits: INSERT, UPDATE_BEFORE, UPDATE_AFTER
 * and DELETE (a group whose last row is retracted is deleted, and inserted again by its next row) — run by Flink
 * SQL's planner itself, and by a keyed function that emits the same rows (its failure is injected in the aggregate). Into an Iceberg table in
 * mode UPSERT keyed by {@code word} the table ends with one row per group at its final value; into an append-only
 * table the job fails naming the row kind.
 */
class FlinkChangelogIT {
  @RegisterExtension
  static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
      new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
          .build());

  /** Words (groups) and rounds: event i is word i % WORDS in round i / WORDS. */
  static final int WORDS = 40;
  static final int ROUNDS = 6;

  static final Schema SCHEMA = new Schema(
      org.apache.iceberg.types.Types.NestedField.required(1, "word", org.apache.iceberg.types.Types.StringType.get()),
      org.apache.iceberg.types.Types.NestedField.optional(2, "total", org.apache.iceberg.types.Types.LongType.get()),
      org.apache.iceberg.types.Types.NestedField.optional(3, "cnt", org.apache.iceberg.types.Types.LongType.get()));

  static final RowType ROW_TYPE = RowType.of(
      new LogicalType[] {new VarCharType(false, VarCharType.MAX_LENGTH), new BigIntType(), new BigIntType()},
      new String[] {"word", "total", "cnt"});

  @TempDir
  static Path dir;

  /** Failures injected by {@link GroupAggregate} (the MiniCluster runs in this JVM). */
  static final java.util.concurrent.atomic.AtomicInteger INJECTED = new java.util.concurrent.atomic.AtomicInteger();

  /**
   * Event {@code i}: in odd rounds the even words retract the value they inserted in the round before (their group
   * empties: a DELETE in the result), every other event inserts value {@code i} (an INSERT of a new or emptied
   * group, else an UPDATE_BEFORE / UPDATE_AFTER pair).
   */
  static Row event(long i) {
    int word = (int) (i % WORDS);
    long round = i / WORDS;
    if (word % 2 == 0 && round % 2 == 1) {
      return Row.ofKind(RowKind.DELETE, "w" + word, i - WORDS);
    }
    return Row.ofKind(RowKind.INSERT, "w" + word, i);
  }

  /** The aggregate after all events: word to (total, count), groups with no row left absent. */
  static Map<String, List<Long>> expected() {
    Map<String, Long> totals = new HashMap<>();
    Map<String, Long> counts = new HashMap<>();
    for (long i = 0; i < (long) WORDS * ROUNDS; i++) {
      Row event = event(i);
      String word = (String) event.getField(0);
      long sign = event.getKind() == RowKind.DELETE ? -1 : 1;
      totals.merge(word, sign * (Long) event.getField(1), Long::sum);
      counts.merge(word, sign, Long::sum);
    }
    Map<String, List<Long>> expected = new HashMap<>();
    counts.forEach((word, count) -> {
      if (count > 0) {
        expected.put(word, List.of(totals.get(word), count));
      }
    });
    return expected;
  }

  /**
   * The aggregate's changelog as Flink rows of {@link #ROW_TYPE}, each with its row kind. The events come from one
   * source reader at {@code eventsPerSecond}, so a group's retraction follows its insert and the job spans several
   * checkpoints.
   */
  static DataStream<RowData> changelog(StreamExecutionEnvironment env, double eventsPerSecond) {
    return changelog(env, eventsPerSecond, -1);
  }

  /** As above; the aggregate fails once, at event {@code failAt} (if {@code >= 0}), counted in {@link #INJECTED}. */
  static DataStream<RowData> changelog(StreamExecutionEnvironment env, double eventsPerSecond, long failAt) {
    return env.fromSource(new DataGeneratorSource<>(i -> i, (long) WORDS * ROUNDS,
            RateLimiterStrategy.perSecond(eventsPerSecond), Types.LONG), WatermarkStrategy.noWatermarks(), "events")
        .uid("events").setParallelism(1)
        .keyBy(i -> (String) event(i).getField(0))
        .process(new GroupAggregate(failAt)).uid("group-by-word")
        .returns(InternalTypeInfo.of(ROW_TYPE));
  }

  /**
   * The query's changelog from Flink SQL itself: the events become a table of inserts and retractions ({@code
   * fromChangelogStream}), the planner runs {@code SELECT word, SUM(v) AS total, COUNT(*) AS cnt FROM events GROUP
   * BY word}, and its changelog ({@code toChangelogStream}: rows with their row kinds) goes to the sink as {@code
   * RowData} of {@link #ROW_TYPE}. With {@code failAt >= 0} the events' source side fails once at that event.
   */
  static DataStream<RowData> sqlChangelog(StreamExecutionEnvironment env, double eventsPerSecond, long failAt) {
    StreamTableEnvironment tables = StreamTableEnvironment.create(env);
    DataStream<Row> events = env.fromSource(new DataGeneratorSource<>(i -> i, (long) WORDS * ROUNDS,
            RateLimiterStrategy.perSecond(eventsPerSecond), Types.LONG), WatermarkStrategy.noWatermarks(), "events")
        .uid("events").setParallelism(1)
        .map(i -> {
          if (i == failAt && INJECTED.compareAndSet(0, 1)) {
            throw new IllegalStateException("Injected failure at event " + i);
          }
          return event(i);
        }).uid("event-rows").setParallelism(1)
        .returns(Types.ROW_NAMED(new String[] {"word", "v"}, Types.STRING, Types.LONG));
    tables.createTemporaryView("events", tables.fromChangelogStream(events,
        org.apache.flink.table.api.Schema.newBuilder()
            .column("word", DataTypes.STRING())
            .column("v", DataTypes.BIGINT())
            .build(),
        ChangelogMode.all()));
    Table counts = tables.sqlQuery("SELECT word, SUM(v) AS total, COUNT(*) AS cnt FROM events GROUP BY word");
    return tables.toChangelogStream(counts)
        .map(row -> (RowData) GenericRowData.ofKind(row.getKind(),
            StringData.fromString((String) row.getField("word")), row.getField("total"), row.getField("cnt")))
        .returns(InternalTypeInfo.of(ROW_TYPE));
  }

  /**
   * {@code SELECT word, SUM(v) AS total, COUNT(*) AS cnt FROM events GROUP BY word} over a stream of inserts and
   * retractions, emitting what Flink SQL's group aggregate emits: +I for a new group, -U/+U for a changed one, -D
   * for a group whose last row was retracted ({@link #sqlChangelog} has the planner run the query itself).
   */
  static final class GroupAggregate extends KeyedProcessFunction<String, Long, RowData> {
    private final long failAt;
    private transient ValueState<long[]> state;

    GroupAggregate(long failAt) {
      this.failAt = failAt;
    }

    @Override
    public void open(OpenContext context) {
      state = getRuntimeContext().getState(new ValueStateDescriptor<>("total-and-count", long[].class));
    }

    @Override
    public void processElement(Long i, Context context, Collector<RowData> out) throws Exception {
      if (i == failAt && INJECTED.compareAndSet(0, 1)) {
        throw new IllegalStateException("Injected failure at event " + i);
      }
      Row event = event(i);
      String word = (String) event.getField(0);
      long sign = event.getKind() == RowKind.DELETE ? -1 : 1;
      long[] old = state.value();
      long[] now = old == null ? new long[] {0, 0} : old.clone();
      now[0] += sign * (Long) event.getField(1);
      now[1] += sign;
      if (old == null) {
        out.collect(row(RowKind.INSERT, word, now));
      } else if (now[1] == 0) {
        out.collect(row(RowKind.DELETE, word, old));
      } else {
        out.collect(row(RowKind.UPDATE_BEFORE, word, old));
        out.collect(row(RowKind.UPDATE_AFTER, word, now));
      }
      if (now[1] == 0) {
        state.clear();
      } else {
        state.update(now);
      }
    }

    private static RowData row(RowKind kind, String word, long[] totalAndCount) {
      return GenericRowData.ofKind(kind, StringData.fromString(word), totalAndCount[0], totalAndCount[1]);
    }
  }

  static IcebergSinkConfig config(String warehouse, String table, CommitMode mode) {
    IcebergSinkConfig.Builder builder = IcebergSinkConfig.builder()
        .catalogProperties(Map.of("type", "hadoop", "warehouse", warehouse))
        .table(table)
        .createTable(SCHEMA, List.of())
        .tableProperties(Map.of("format-version", "2"))
        .mode(mode);
    if (mode == CommitMode.UPSERT) {
      builder.upsertKey(List.of("word"));
    }
    return builder.build();
  }

  @Test
  void aGroupByChangelogUpsertsToOneRowPerKeyAtItsFinalValue() throws Exception {
    upsertChangelog("upsert", env -> changelog(env, 60, -1), 0);
  }

  /** The changelog of Flink SQL's own group aggregate (the planner runs the query), into the upsert table. */
  @Test
  void aFlinkSqlGroupByChangelogUpsertsToOneRowPerKeyAtItsFinalValue() throws Exception {
    upsertChangelog("sql", env -> sqlChangelog(env, 60, -1), 0);
  }

  /**
   * The SQL job fails after several commits; Flink restores the SQL aggregate's state and replays the changelog
   * after the last checkpoint, and the table ends as without the failure.
   */
  @Test
  void aFailoverOfTheFlinkSqlJobEndsWithTheSameFinalValues() throws Exception {
    INJECTED.set(0);
    upsertChangelog("sql-failover", env -> sqlChangelog(env, 60, (long) WORDS * ROUNDS * 2 / 3), 2);
    assertThat(INJECTED.get()).as("the injected failure happened").isEqualTo(1);
  }

  /**
   * The aggregate fails after several checkpoint commits with deletes; Flink restores the aggregate's state and
   * the source position from the last checkpoint and replays the events after it (its changelog again), and the
   * sink's restored commits are recognised, not applied twice: the same final table.
   */
  @Test
  void aFailoverInTheMiddleOfTheChangelogEndsWithTheSameFinalValues() throws Exception {
    INJECTED.set(0);
    upsertChangelog("failover", env -> changelog(env, 60, (long) WORDS * ROUNDS * 2 / 3), 2);
    assertThat(INJECTED.get()).as("the injected failure happened").isEqualTo(1);
  }

  private void upsertChangelog(String name, Function<StreamExecutionEnvironment, DataStream<RowData>> job,
      int restarts) throws Exception {
    String warehouse = dir.resolve(name).toString();
    String table = "db.counts";
    StreamExecutionEnvironment env = TestJobs.environment(2, restarts);
    job.apply(env)
        .sinkTo(LakecommitFlinkSink.forRowData(ROW_TYPE)
            .iceberg(() -> config(warehouse, table, CommitMode.UPSERT))
            .jobName("counts")
            .build())
        // Two writers: the sink routes every change of a key to the writer that owns it.
        .uid("lakecommit-sink").setParallelism(2);
    env.execute("changelog-" + name);

    org.apache.iceberg.Table written = IcebergFlinkSinkIT.load(warehouse, table);
    Map<String, List<List<Long>>> rows = new HashMap<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(written).build()) {
      for (Record record : records) {
        rows.computeIfAbsent((String) record.getField("word"), w -> new java.util.ArrayList<>())
            .add(List.of((Long) record.getField("total"), (Long) record.getField("cnt")));
      }
    }
    Map<String, List<Long>> expected = expected();
    assertThat(expected).as("some groups end deleted").hasSizeBetween(1, WORDS - 1);
    assertThat(rows).as("one row per key").allSatisfy((word, values) -> assertThat(values).hasSize(1));
    Map<String, List<Long>> finalValues = new HashMap<>();
    rows.forEach((word, values) -> finalValues.put(word, values.get(0)));
    assertThat(finalValues).isEqualTo(expected);

    long commits = 0;
    long equalityDeletes = 0;
    int mostWriters = 0;
    for (Snapshot snapshot : written.snapshots()) {
      if (snapshot.summary().containsKey(CommitId.CHECKPOINT_ID_KEY)) {
        commits++;
        mostWriters = Math.max(mostWriters, Integer.parseInt(snapshot.summary().get("lakecommit.writers")));
        equalityDeletes += Long.parseLong(
            snapshot.summary().getOrDefault(SnapshotSummary.ADDED_EQ_DELETES_PROP, "0"));
      }
    }
    System.out.println("FlinkChangelogIT " + name + ": " + commits + " checkpoint commits, " + equalityDeletes
        + " equality deletes, " + finalValues.size() + " of " + WORDS + " groups left");
    assertThat(commits).as("the changelog spans several checkpoint commits").isGreaterThanOrEqualTo(2);
    assertThat(equalityDeletes).as("rows of earlier checkpoints replaced or deleted by key").isPositive();
    assertThat(mostWriters).as("both writers staged rows of their keys into one commit").isEqualTo(2);
  }

  @Test
  void aChangelogIntoAnAppendTableFailsTheJobNamingTheRowKind() {
    String warehouse = dir.resolve("append").toString();
    StreamExecutionEnvironment env = TestJobs.environment(2, 0);
    changelog(env, 1_000)
        .sinkTo(LakecommitFlinkSink.forRowData(ROW_TYPE)
            .iceberg(() -> config(warehouse, "db.counts", CommitMode.APPEND))
            .jobName("counts")
            .build())
        .uid("lakecommit-sink");

    assertThatThrownBy(() -> env.execute("changelog-append"))
        .rootCause().isInstanceOf(IllegalArgumentException.class)
        .hasMessageMatching("(?s).*has row kind (UPDATE_BEFORE \\(-U\\)|DELETE \\(-D\\)), but Iceberg table"
            + " db.counts in mode APPEND only adds rows.*")
        .hasMessageContaining("mode UPSERT");
  }

  /** The Debezium test's rows: a source table's columns, its key {@code id}. */
  static final RowType CUSTOMER = RowType.of(
      new LogicalType[] {new BigIntType(false), new VarCharType(VarCharType.MAX_LENGTH),
          new org.apache.flink.table.types.logical.IntType()},
      new String[] {"id", "name", "qty"});

  /** Debezium change events of a source table (bare envelopes, full {@code before}) and the table they leave. */
  record DebeziumStream(List<String> events, Map<Long, String> model) {
    static DebeziumStream generate(long seed, int count) {
      java.util.Random random = new java.util.Random(seed);
      Map<Long, Map<String, Object>> rows = new java.util.TreeMap<>();
      List<String> events = new java.util.ArrayList<>();
      com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
      try {
        for (int i = 0; i < count; i++) {
          long id = i < 30 ? i : random.nextInt(50);
          Map<String, Object> old = rows.get(id);
          Map<String, Object> event = new java.util.LinkedHashMap<>();
          if (old != null && random.nextInt(10) < 3) {
            event.put("before", old);
            event.put("after", null);
            event.put("op", "d");
            rows.remove(id);
          } else {
            Map<String, Object> after = new java.util.LinkedHashMap<>();
            after.put("id", id);
            after.put("name", "name-" + id + "-" + i);
            after.put("qty", random.nextInt(4) == 0 ? null : random.nextInt(1000));
            event.put("before", old);
            event.put("after", after);
            event.put("op", i < 30 ? "r" : old == null ? "c" : "u");
            rows.put(id, after);
          }
          event.put("source", Map.of("connector", "postgresql", "table", "customers"));
          event.put("ts_ms", 1_700_000_000_000L + i);
          events.add(json.writeValueAsString(event));
        }
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        throw new IllegalStateException(e);
      }
      Map<Long, String> model = new java.util.TreeMap<>();
      rows.forEach((id, row) -> model.put(id, row.get("name") + "|" + row.get("qty")));
      return new DebeziumStream(List.copyOf(events), model);
    }
  }

  /**
   * Debezium change events read with Flink's own {@code debezium-json} format (snapshot reads, creates, updates
   * with their before rows, deletes) become a changelog of +I, -U/+U and -D rows, and the sink in mode UPSERT keyed
   * by the source table's key leaves the table equal to the source table, over several checkpoint commits.
   */
  @Test
  void debeziumEventsReadWithFlinksFormatLeaveTheTableEqualToTheSourceTable() throws Exception {
    DebeziumStream stream = DebeziumStream.generate(7, 400);
    List<String> events = stream.events();
    String warehouse = dir.resolve("debezium").toString();
    StreamExecutionEnvironment env = TestJobs.environment(2, 0);
    env.fromSource(new DataGeneratorSource<>(i -> events.get((int) (long) i), events.size(),
            RateLimiterStrategy.perSecond(150), Types.STRING), WatermarkStrategy.noWatermarks(), "debezium-events")
        .setParallelism(1)
        .flatMap(new DebeziumRows()).setParallelism(1)
        .returns(InternalTypeInfo.of(CUSTOMER))
        .sinkTo(LakecommitFlinkSink.forRowData(CUSTOMER)
            .iceberg(() -> IcebergSinkConfig.builder()
                .catalogProperties(Map.of("type", "hadoop", "warehouse", warehouse))
                .table("db.customers")
                .createTable(new Schema(
                    org.apache.iceberg.types.Types.NestedField.required(1, "id",
                        org.apache.iceberg.types.Types.LongType.get()),
                    org.apache.iceberg.types.Types.NestedField.optional(2, "name",
                        org.apache.iceberg.types.Types.StringType.get()),
                    org.apache.iceberg.types.Types.NestedField.optional(3, "qty",
                        org.apache.iceberg.types.Types.IntegerType.get())), List.of())
                .tableProperties(Map.of("format-version", "2"))
                .mode(CommitMode.UPSERT)
                .upsertKey(List.of("id"))
                .build())
            .jobName("customers")
            .build())
        .uid("lakecommit-sink").setParallelism(2);
    env.execute("debezium");

    org.apache.iceberg.Table written = IcebergFlinkSinkIT.load(warehouse, "db.customers");
    Map<Long, String> rows = new java.util.TreeMap<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(written).build()) {
      for (Record record : records) {
        assertThat(rows.put((Long) record.getField("id"), record.getField("name") + "|" + record.getField("qty")))
            .as("one row per key").isNull();
      }
    }
    assertThat(rows).isEqualTo(stream.model());
    long commits = 0;
    for (Snapshot snapshot : written.snapshots()) {
      commits += snapshot.summary().containsKey(CommitId.CHECKPOINT_ID_KEY) ? 1 : 0;
    }
    assertThat(commits).as("the events span several checkpoint commits").isGreaterThanOrEqualTo(2);
  }

  /** Flink's {@code debezium-json} deserializer: one event to its changelog rows. */
  static final class DebeziumRows extends org.apache.flink.api.common.functions.RichFlatMapFunction<String, RowData> {
    private transient org.apache.flink.formats.json.debezium.DebeziumJsonDeserializationSchema format;

    @Override
    public void open(OpenContext context) throws Exception {
      format = new org.apache.flink.formats.json.debezium.DebeziumJsonDeserializationSchema(
          org.apache.flink.table.types.utils.TypeConversions.fromLogicalToDataType(CUSTOMER), List.of(),
          InternalTypeInfo.of(CUSTOMER), false, false, org.apache.flink.formats.common.TimestampFormat.ISO_8601);
      format.open(null);
    }

    @Override
    public void flatMap(String event, Collector<RowData> out) throws Exception {
      format.deserialize(event.getBytes(java.nio.charset.StandardCharsets.UTF_8), out);
    }
  }
}
