package dev.lakecommit.flink;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
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
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types.LongType;
import org.apache.iceberg.types.Types.NestedField;
import org.apache.iceberg.types.Types.StringType;

/** The test jobs: keyed rows from a sequence, skewed over partitions, optionally rate-limited or failing. */
final class TestJobs {
  static final Schema SCHEMA = new Schema(
      NestedField.required(1, "id", LongType.get()),
      NestedField.optional(2, "part", StringType.get()),
      NestedField.optional(3, "payload", StringType.get()));
  static final RowType ROW_TYPE = RowType.of(
      new LogicalType[] {new BigIntType(false), new VarCharType(VarCharType.MAX_LENGTH),
          new VarCharType(VarCharType.MAX_LENGTH)},
      new String[] {"id", "part", "payload"});

  /** When each map subtask saw its last row, per test run (the JVM runs the whole MiniCluster). */
  static final Map<String, Map<Integer, Long>> FINISHED = new ConcurrentHashMap<>();

  private TestJobs() {}

  /** Skewed partitions: 70 % of rows in {@code hot}, the rest spread over five others. */
  static String partitionOf(long id) {
    return Math.floorMod(id, 10) < 7 ? "hot" : "p" + Math.floorMod(id / 10, 5);
  }

  static StreamExecutionEnvironment environment(int parallelism, int restartAttempts) {
    return environment(parallelism, restartAttempts, null);
  }

  /** Checkpoints every 500 ms; restarts as given; restores from {@code savepoint} if not null. */
  static StreamExecutionEnvironment environment(int parallelism, int restartAttempts, String savepoint) {
    return environment(parallelism, restartAttempts, savepoint, new Configuration());
  }

  /** As above, with further settings (for example where checkpoints go and whether they are retained). */
  static StreamExecutionEnvironment environment(int parallelism, int restartAttempts, String savepoint,
      Configuration settings) {
    Configuration conf = new Configuration(settings);
    if (savepoint != null) {
      conf.set(org.apache.flink.configuration.StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
    }
    if (restartAttempts > 0) {
      conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
      conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, restartAttempts);
      conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(200));
    } else {
      conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
    }
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
    env.setParallelism(parallelism);
    env.enableCheckpointing(500);
    return env;
  }

  /**
   * Rows with ids {@code [from, from + count)}. With {@code rowsPerSecond > 0}, the source reader of the i-th
   * range is limited to {@code rowsPerSecond / (i + 1)}, so writers finish at clearly different times.
   */
  static DataStream<RowData> boundedRows(StreamExecutionEnvironment env, String run, long from, long count,
      double rowsPerSecond, int parallelism) {
    return env.fromSequence(from, from + count - 1).uid("sequence")
        .map(new ToRow(run, from, count, rowsPerSecond, parallelism)).uid("to-row")
        .returns(InternalTypeInfo.of(ROW_TYPE));
  }

  /**
   * Rows with ids {@code [0, count)} at about {@code rowsPerSecond} in all, then a never-ending trickle of
   * heartbeats that are dropped: the job never ends on its own. The rate is limited inside the source readers, so
   * checkpoint barriers are not held up behind buffered rows.
   */
  static DataStream<RowData> unboundedRows(StreamExecutionEnvironment env, long count, double rowsPerSecond,
      int parallelism) {
    return unboundedRows(env, "unbounded", count, rowsPerSecond, parallelism);
  }

  /** As above; {@link #FINISHED} records the rows' subtasks under {@code run}. */
  static DataStream<RowData> unboundedRows(StreamExecutionEnvironment env, String run, long count,
      double rowsPerSecond, int parallelism) {
    DataStream<Long> ids = env.fromSource(
            new DataGeneratorSource<>(i -> i, count, RateLimiterStrategy.perSecond(rowsPerSecond), Types.LONG),
            WatermarkStrategy.noWatermarks(), "rows")
        .uid("sequence");
    DataStream<Long> heartbeats = env.fromSource(
            new DataGeneratorSource<>(i -> -1L, Long.MAX_VALUE, RateLimiterStrategy.perSecond(1), Types.LONG),
            WatermarkStrategy.noWatermarks(), "heartbeats")
        .uid("heartbeats").setParallelism(1);
    return ids.union(heartbeats)
        .filter(id -> id >= 0).uid("drop-heartbeats")
        .map(new ToRow(run, 0, count, 0, parallelism)).uid("to-row")
        .returns(InternalTypeInfo.of(ROW_TYPE));
  }

  /** Turns ids into rows, limiting the rate per range and recording when each subtask saw its last row. */
  static final class ToRow extends RichMapFunction<Long, RowData> {
    private final String run;
    private final long from;
    private final long count;
    private final double rowsPerSecond;
    private final int ranges;
    private transient long started;
    private transient long emitted;

    ToRow(String run, long from, long count, double rowsPerSecond, int ranges) {
      this.run = run;
      this.from = from;
      this.count = count;
      this.rowsPerSecond = rowsPerSecond;
      this.ranges = ranges;
    }

    @Override
    public void open(OpenContext context) {
      started = System.nanoTime();
      emitted = 0;
    }

    @Override
    public RowData map(Long id) throws InterruptedException {
      if (rowsPerSecond > 0) {
        int range = (int) Math.min(ranges - 1, (id - from) * ranges / count);
        double rate = rowsPerSecond / (range + 1);
        long due = started + (long) (emitted * 1e9 / rate);
        long wait = due - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));   // rate limiting, not synchronisation
        }
      }
      emitted++;
      FINISHED.computeIfAbsent(run, k -> new ConcurrentHashMap<>())
          .put(getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(), System.nanoTime());
      return GenericRowData.of(id, StringData.fromString(partitionOf(id)), StringData.fromString("row-" + id));
    }
  }

  /**
   * Throws at a random row on each subtask's first {@code failures} attempts: seeded, and the seed is in the
   * message.
   */
  static final class Chaos extends RichMapFunction<RowData, RowData> {
    /** Failures thrown so far in this JVM. */
    static final java.util.concurrent.atomic.AtomicInteger THROWN = new java.util.concurrent.atomic.AtomicInteger();
    private final long seed;
    private final int failures;
    private final int maxRowsBeforeFailure;
    private transient long failAt;
    private transient long seen;

    Chaos(long seed, int failures, int maxRowsBeforeFailure) {
      this.seed = seed;
      this.failures = failures;
      this.maxRowsBeforeFailure = maxRowsBeforeFailure;
    }

    @Override
    public void open(OpenContext context) {
      int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
      int attempt = getRuntimeContext().getTaskInfo().getAttemptNumber();
      Random random = new Random(seed * 31 + subtask * 1_000_003L + attempt);
      failAt = attempt < failures ? 1 + random.nextInt(maxRowsBeforeFailure) : -1;
      seen = 0;
    }

    @Override
    public RowData map(RowData row) {
      if (++seen == failAt) {
        THROWN.incrementAndGet();
        throw new IllegalStateException("Injected failure after " + seen + " rows (seed " + seed + ", subtask "
            + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() + ", attempt "
            + getRuntimeContext().getTaskInfo().getAttemptNumber() + ")");
      }
      return row;
    }
  }

  /** Duplicates and losses of a table's ids against the expected ids. */
  record Audit(long rows, long duplicates, long losses, List<Long> sampleDuplicates, List<Long> sampleLosses) {
    static Audit of(Iterable<Record> records, Set<Long> expected) {
      Map<Long, Integer> seen = new HashMap<>();
      long rows = 0;
      for (Record record : records) {
        rows++;
        seen.merge((Long) record.getField("id"), 1, Integer::sum);
      }
      List<Long> dups = new ArrayList<>();
      long duplicates = 0;
      for (Map.Entry<Long, Integer> e : seen.entrySet()) {
        if (e.getValue() > 1) {
          duplicates += e.getValue() - 1;
          if (dups.size() < 10) {
            dups.add(e.getKey());
          }
        }
      }
      List<Long> lost = new ArrayList<>();
      long losses = 0;
      for (long id : expected) {
        if (!seen.containsKey(id)) {
          losses++;
          if (lost.size() < 10) {
            lost.add(id);
          }
        }
      }
      Set<Long> extra = new HashSet<>(seen.keySet());
      extra.removeAll(expected);
      if (!extra.isEmpty()) {
        throw new AssertionError("Table holds ids that were never written: " + extra.stream().limit(10).toList());
      }
      return new Audit(rows, duplicates, losses, dups, lost);
    }
  }

  /**
   * Every data or delete file that some snapshot of the table references but that does not exist: a reader of
   * that snapshot would fail. Empty for a sound table.
   */
  static List<String> missingFiles(org.apache.iceberg.Table table) throws java.io.IOException {
    org.apache.iceberg.io.FileIO io = table.io();
    Set<String> checked = new HashSet<>();
    List<String> missing = new ArrayList<>();
    for (org.apache.iceberg.Snapshot snapshot : table.snapshots()) {
      for (org.apache.iceberg.ManifestFile manifest : snapshot.allManifests(io)) {
        if (!checked.add(manifest.path())) {
          continue;
        }
        List<String> paths = new ArrayList<>();
        if (manifest.content() == org.apache.iceberg.ManifestContent.DATA) {
          try (var files = org.apache.iceberg.ManifestFiles.read(manifest, io, table.specs())) {
            files.forEach(file -> paths.add(file.location()));
          }
        } else {
          try (var files = org.apache.iceberg.ManifestFiles.readDeleteManifest(manifest, io, table.specs())) {
            files.forEach(file -> paths.add(file.location()));
          }
        }
        for (String path : paths) {
          if (!io.newInputFile(path).exists()) {
            missing.add(path + " (snapshot " + snapshot.snapshotId() + ")");
          }
        }
      }
    }
    return missing;
  }

  /** Committer metrics registered nowhere, for committers made outside Flink. */
  /** Claims a run epoch for the job in the target's table, as the client does when Flink translates the sink. */
  static long claimEpoch(SinkRecipe target, dev.lakecommit.core.JobId job, String run) throws java.io.IOException {
    SinkRecipe.CoreSink core = target.open(ROW_TYPE);
    try (var sink = core.sink(); dev.lakecommit.core.TargetRun claiming = core.openRun(job)) {
      return claiming.claim(run).epoch();
    }
  }

  /** The identity of the target's table, read now. */
  static String identity(SinkRecipe target) throws java.io.IOException {
    SinkRecipe.CoreSink core = target.open(ROW_TYPE);
    try (var sink = core.sink(); dev.lakecommit.core.TargetRun reading = core.openRun(
        dev.lakecommit.core.JobId.of("identity"))) {
      return reading.readIdentity();
    }
  }

  static CommitMetrics noMetrics() {
    return CommitMetrics.register(new org.apache.flink.metrics.groups.UnregisteredMetricsGroup());
  }

  static Set<Long> range(long from, long count) {
    Set<Long> ids = new HashSet<>();
    for (long i = from; i < from + count; i++) {
      ids.add(i);
    }
    return ids;
  }
}
