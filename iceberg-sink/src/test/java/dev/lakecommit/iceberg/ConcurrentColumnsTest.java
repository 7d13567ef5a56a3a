package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.runtime.CrashHarness;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.CrashingSink;
import dev.lakecommit.core.testing.SimulatedCrash;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Two jobs that each add a different new column to one table from the same table version: each numbers its column
 * with the next free field id, so the one committing second wrote its files with the id the first one's column
 * took. Its commit rewrites those files with the ids its column gets, so both jobs' rows land, each column with its
 * values, exactly once, whatever the order, on a replay after a restart, and after a crash at any step.
 */
class ConcurrentColumnsTest {
  private static final Schema WITH_X = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "payload", Types.StringType.get()),
      Types.NestedField.optional(3, "x", Types.StringType.get()));
  private static final Schema WITH_Y = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "payload", Types.StringType.get()),
      Types.NestedField.optional(3, "y", Types.LongType.get()));
  private static final Schema WITH_Z = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "payload", Types.StringType.get()),
      Types.NestedField.optional(3, "z", Types.StringType.get()));
  private static final JobId JOB_A = JobId.of("job-a");
  private static final JobId JOB_B = JobId.of("job-b");
  private static final JobId JOB_C = JobId.of("job-c");

  @TempDir Path dir;
  private CatalogFixture fixture;
  private Catalog catalog;

  @BeforeEach
  void catalog() {
    fixture = CatalogFixture.sqlite(dir);
    catalog = fixture.newCatalog();
    ((SupportsNamespaces) catalog).createNamespace(Namespace.of("db"));
  }

  private void createTable(boolean partitioned) {
    PartitionSpec spec = partitioned
        ? PartitionSpec.builderFor(TestTables.SCHEMA).bucket("id", 4).build() : PartitionSpec.unpartitioned();
    catalog.createTable(TestTables.IDENT, TestTables.SCHEMA, spec, Map.of("format-version", "2"));
  }

  private IcebergSink<Record> sink(Schema staged) {
    return IcebergSink.forRecords(IcebergSinkConfig.builder().catalogName(fixture.name())
        .catalogProperties(fixture.properties()).table("db.events").createTable(staged, List.of())
        .addNewColumns(true).build());
  }

  private static IcebergAggregatedCommitter committer(IcebergSink<Record> sink) {
    return (IcebergAggregatedCommitter) sink.createAggregatedCommitter();
  }

  /** Rows {@code from .. to-1} of the sink's write schema; the new column {@code column} holds a value per key. */
  private static StagingManifest stage(IcebergSink<Record> sink, JobId job, long checkpoint, long from, long to,
      String column) throws IOException {
    Schema schema = sink.writeSchema();
    SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(job, 0, 1, 0, checkpoint - 1));
    try (writer) {
      for (long id = from; id < to; id++) {
        GenericRecord row = GenericRecord.create(schema);
        row.setField("id", id);
        row.setField("payload", "row-" + id);
        boolean isLong = schema.findField(column).type().equals(Types.LongType.get());
        row.setField(column, isLong ? Long.valueOf(id * 7) : value(column, id));
        writer.write(row);
      }
      return writer.prepareCommit(checkpoint).orElseThrow();
    }
  }

  private static Object value(String column, long id) {
    return column.equals("y") ? Long.valueOf(id * 7) : column + "-" + id;
  }

  private Table table() {
    return catalog.loadTable(TestTables.IDENT);
  }

  /**
   * Reads the table back and checks it: every key of {@code expected} once and no other, each new column holding
   * its value in the rows of the job that wrote it and null in the others.
   */
  private void assertRows(Map<String, long[]> expected) throws IOException {
    Map<Long, Record> rows = new HashMap<>();
    List<Long> duplicates = new ArrayList<>();
    try (CloseableIterable<Record> read = IcebergGenerics.read(table()).build()) {
      for (Record row : read) {
        if (rows.put((Long) row.getField("id"), row.copy()) != null) {
          duplicates.add((Long) row.getField("id"));
        }
      }
    }
    assertThat(duplicates).as("duplicate keys").isEmpty();
    long total = 0;
    List<String> wrong = new ArrayList<>();
    Set<String> columns = expected.keySet();
    for (Map.Entry<String, long[]> job : expected.entrySet()) {
      for (long id = job.getValue()[0]; id < job.getValue()[1]; id++) {
        Record row = rows.get(id);
        if (row == null) {
          wrong.add("key " + id + " lost");
          continue;
        }
        total++;
        for (String column : columns) {
          Object want = column.equals(job.getKey()) ? value(column, id) : null;
          if (!java.util.Objects.equals(row.getField(column), want)) {
            wrong.add("key " + id + " has " + column + "=" + row.getField(column) + ", not " + want);
          }
        }
      }
    }
    assertThat(wrong).as("rows without their values").isEmpty();
    assertThat(rows).as("no rows but the expected ones").hasSize((int) total);
  }

  private Set<String> referencedFiles() {
    Set<String> files = new HashSet<>();
    for (Snapshot snapshot : table().snapshots()) {
      for (DataFile file : snapshot.addedDataFiles(table().io())) {
        files.add(file.location());
      }
    }
    return files;
  }

  private boolean exists(String path) {
    return table().io().newInputFile(path).exists();
  }

  private static List<String> paths(StagingManifest manifest) {
    return manifest.files().stream().map(StagedFile::path).toList();
  }

  @ParameterizedTest(name = "{0} commits first, partitioned: {1}")
  @CsvSource({"A, false", "B, false", "A, true", "B, true"})
  void twoJobsAddingDifferentColumnsBothLandWhicheverCommitsFirst(String first, boolean partitioned)
      throws IOException {
    createTable(partitioned);
    IcebergSink<Record> sinkA = sink(WITH_X);
    IcebergSink<Record> sinkB = sink(WITH_Y);
    assertThat(sinkB.writeSchema().findField("y").fieldId()).as("both jobs number their new column alike")
        .isEqualTo(sinkA.writeSchema().findField("x").fieldId());
    StagingManifest a = stage(sinkA, JOB_A, 1, 0, 300, "x");
    StagingManifest b = stage(sinkB, JOB_B, 1, 300, 600, "y");
    IcebergAggregatedCommitter committerA = committer(sinkA);
    IcebergAggregatedCommitter committerB = committer(sinkB);
    boolean aFirst = first.equals("A");
    StagingManifest second = aFirst ? b : a;

    CommitOutcome firstOutcome = aFirst ? committerA.commit(committerA.combine(new CommitId(JOB_A, 1), List.of(a)))
        : committerB.commit(committerB.combine(new CommitId(JOB_B, 1), List.of(b)));
    CommitOutcome secondOutcome = aFirst ? committerB.commit(committerB.combine(new CommitId(JOB_B, 1), List.of(b)))
        : committerA.commit(committerA.combine(new CommitId(JOB_A, 1), List.of(a)));

    assertThat(firstOutcome).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(secondOutcome).isInstanceOf(CommitOutcome.Committed.class);
    Table table = table();
    assertThat(table.schema().findField("x").fieldId()).isNotEqualTo(table.schema().findField("y").fieldId());
    assertThat(table.snapshots()).hasSize(2);
    assertRows(Map.of("x", new long[] {0, 300}, "y", new long[] {300, 600}));
    Set<String> referenced = referencedFiles();
    for (String original : paths(second)) {
      assertThat(referenced).as("the second job's file as written is never committed").doesNotContain(original);
      assertThat(exists(original)).as("%s deleted after its rewrite was committed", original).isFalse();
    }
    assertThat(referenced).as("the first job's files are committed as written").containsAll(
        paths(aFirst ? a : b));
  }

  /**
   * Job B's checkpoint is persisted, then the process dies before its commit; job A adds its column meanwhile. The
   * restarted run (a new sink, a claimed epoch) commits the persisted committable, read back from its bytes.
   */
  @Test
  void aReplayOfAPersistedCheckpointAfterAnotherJobAddedAColumnCommits() throws IOException {
    createTable(false);
    IcebergSink<Record> sinkB = sink(WITH_Y);
    StagingManifest b = stage(sinkB, JOB_B, 1, 300, 600, "y");
    IcebergCommittable.Serializer serializer = new IcebergCommittable.Serializer();
    byte[] persisted = VersionedSerialization.toBytes(serializer,
        committer(sinkB).combine(new CommitId(JOB_B, 1), List.of(b)));
    IcebergSink<Record> sinkA = sink(WITH_X);
    StagingManifest a = stage(sinkA, JOB_A, 1, 0, 300, "x");
    IcebergAggregatedCommitter committerA = committer(sinkA);
    assertThat(committerA.commit(committerA.combine(new CommitId(JOB_A, 1), List.of(a))))
        .isInstanceOf(CommitOutcome.Committed.class);

    IcebergSink<Record> restarted = sink(WITH_Y);
    IcebergAggregatedCommitter committerB = committer(restarted);
    long epoch = restarted.openTarget().claimEpoch(JOB_B, "restart").epoch();
    committerB.fence(JOB_B, epoch);
    CommitOutcome outcome = committerB.commit(VersionedSerialization.fromBytes(serializer, persisted));

    assertThat(outcome).isInstanceOf(CommitOutcome.Committed.class);
    assertRows(Map.of("x", new long[] {0, 300}, "y", new long[] {300, 600}));
    assertThat(referencedFiles()).allMatch(path -> !name(path).startsWith(JOB_B.value())
        || name(path).matches(".*-r" + epoch + "-[0-9a-f]{12}\\.parquet"),
        "job B's files are the rewrites of the restarted run (epoch " + epoch + ")");
  }

  /**
   * Through the real runtime: job B persists its first checkpoint and dies before committing it; job A adds its
   * column before B's process starts again; the restarted B restores, commits the persisted checkpoint (its files
   * rewritten) and goes on with its own newer checkpoints. B's keys are audited exactly, A's and B's values read back.
   */
  @Test
  void aJobRestartedAfterAnotherJobAddedAColumnCommitsItsPersistedCheckpoint() throws IOException {
    createTable(false);
    IcebergSink<Record> sinkA = sink(WITH_X);
    StagingManifest a = stage(sinkA, JOB_A, 1, 100_000, 100_300, "x");
    IcebergAggregatedCommitter committerA = committer(sinkA);
    AtomicReference<CommitOutcome> aCommitted = new AtomicReference<>();
    int[] lives = {0};
    CrashHarness.Config config = new CrashHarness.Config(300, 2, 50, 40, false, false,
        dev.lakecommit.core.runtime.RestoreBehindPolicy.FAIL);

    CrashHarness.Outcome outcome = CrashHarness.run(dir.resolve("checkpoints"), config,
        CrashSchedule.at(CrashSchedule.PERSISTED, 1), crashes -> {
          if (lives[0]++ == 1) {
            aCommitted.set(committerA.commit(committerA.combine(new CommitId(JOB_A, 1), List.of(a))));
          }
          return new CrashingSink<>(sink(WITH_Y), crashes);
        }, rowsWithY(config.records()),
        () -> IcebergCrashMatrixTest.keys(table()).stream().filter(key -> key < 100_000).toList());

    assertThat(outcome.failure()).isNull();
    assertThat(outcome.crashes()).isEqualTo(1);
    assertThat(aCommitted.get()).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(outcome.audit().exact()).as(outcome.audit().toString()).isTrue();
    Table table = table();
    Snapshot firstOfB = null;
    for (Snapshot snapshot : table.snapshots()) {
      if ("crash-job".equals(snapshot.summary().get(CommitId.JOB_ID_KEY)) && firstOfB == null) {
        firstOfB = snapshot;
      }
    }
    assertThat(firstOfB).isNotNull();
    assertThat(firstOfB.summary().get(CommitId.CHECKPOINT_ID_KEY)).isEqualTo("1");
    assertThat(firstOfB.addedDataFiles(table.io())).as("checkpoint 1 of B, written before A's column, rewritten")
        .isNotEmpty().allMatch(file -> name(file.location()).matches(".*-r\\d+-[0-9a-f]{12}\\.parquet"));
    assertRows(Map.of("x", new long[] {100_000, 100_300}, "y", new long[] {0, 300}));
  }

  private static dev.lakecommit.core.runtime.CheckpointedSource<Record> rowsWithY(long count) {
    dev.lakecommit.core.testing.RangeSource keys = new dev.lakecommit.core.testing.RangeSource(count);
    return position -> {
      dev.lakecommit.core.runtime.CheckpointedSource.SourceReader<Long> reader = keys.open(position);
      return new dev.lakecommit.core.runtime.CheckpointedSource.SourceReader<>() {
        @Override
        public Record next() throws IOException {
          Long key = reader.next();
          if (key == null) {
            return null;
          }
          GenericRecord row = GenericRecord.create(WITH_Y);
          row.setField("id", key);
          row.setField("payload", "row-" + key);
          row.setField("y", key * 7);
          return row;
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

  /**
   * The process dies after B's files were rewritten, before the commit. The restart commits the persisted
   * checkpoint (rewriting again, under its own epoch); the crashed run's rewrites are never committed and the
   * orphan sweep finds them.
   */
  @Test
  void aCrashBetweenTheRewriteAndTheCommitLosesNothingAndDuplicatesNothing() throws IOException {
    createTable(false);
    IcebergSink<Record> sinkA = sink(WITH_X);
    IcebergSink<Record> sinkB = sink(WITH_Y);
    StagingManifest a = stage(sinkA, JOB_A, 1, 0, 300, "x");
    StagingManifest b = stage(sinkB, JOB_B, 1, 300, 600, "y");
    IcebergAggregatedCommitter committerA = committer(sinkA);
    assertThat(committerA.commit(committerA.combine(new CommitId(JOB_A, 1), List.of(a))))
        .isInstanceOf(CommitOutcome.Committed.class);
    AtomicReference<List<String>> crashedRewrites = new AtomicReference<>();
    IcebergAggregatedCommitter crashing = committer(sinkB).hooks(new IcebergAggregatedCommitter.Hooks() {
      @Override
      public void afterRewrite(FieldIdRewrite.Result rewrite) {
        crashedRewrites.set(rewrite.written());
        throw new SimulatedCrash("after-rewrite", 1);
      }
    });
    IcebergCommittable committable = crashing.combine(new CommitId(JOB_B, 1), List.of(b));
    crashing.fence(JOB_B, sinkB.openTarget().claimEpoch(JOB_B, "crashing run").epoch());

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> crashing.commit(committable))
        .isInstanceOf(SimulatedCrash.class);
    assertThat(crashedRewrites.get()).isNotEmpty().allMatch(this::exists);
    assertThat(table().snapshots()).hasSize(1);
    paths(b).forEach(original -> assertThat(exists(original)).as("original %s kept", original).isTrue());

    IcebergSink<Record> restartedSink = sink(WITH_Y);
    IcebergAggregatedCommitter restarted = committer(restartedSink);
    restarted.fence(JOB_B, restartedSink.openTarget().claimEpoch(JOB_B, "restarted run").epoch());
    assertThat(restarted.commit(committable)).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(restarted.commit(committable)).as("a replay of the committed checkpoint")
        .isInstanceOf(CommitOutcome.AlreadyCommitted.class);

    assertRows(Map.of("x", new long[] {0, 300}, "y", new long[] {300, 600}));
    assertThat(referencedFiles()).doesNotContainAnyElementsOf(crashedRewrites.get());
    OrphanFiles.Plan orphans = OrphanFiles.plan(table(), Duration.ZERO, Instant.now().plusSeconds(1));
    assertThat(orphans.orphans().stream().map(ConcurrentColumnsTest::name).toList())
        .as("the crashed run's rewrites are orphans of a committed checkpoint")
        .containsAll(crashedRewrites.get().stream().map(ConcurrentColumnsTest::name).toList());
  }

  /**
   * The process dies after the commit of the rewritten files landed, before the originals are deleted. The restart
   * replays the checkpoint: already committed, nothing is written again, and the originals go.
   */
  @Test
  void aCrashAfterTheCommitBeforeTheCleanupIsSettledByTheReplay() throws IOException {
    createTable(false);
    IcebergSink<Record> sinkA = sink(WITH_X);
    IcebergSink<Record> sinkB = sink(WITH_Y);
    StagingManifest a = stage(sinkA, JOB_A, 1, 0, 300, "x");
    StagingManifest b = stage(sinkB, JOB_B, 1, 300, 600, "y");
    IcebergAggregatedCommitter committerA = committer(sinkA);
    assertThat(committerA.commit(committerA.combine(new CommitId(JOB_A, 1), List.of(a))))
        .isInstanceOf(CommitOutcome.Committed.class);
    IcebergAggregatedCommitter crashing = committer(sinkB).hooks(new IcebergAggregatedCommitter.Hooks() {
      @Override
      public void afterCommit(FieldIdRewrite.Result rewrite) {
        throw new SimulatedCrash("after-commit", 1);
      }
    });
    IcebergCommittable committable = crashing.combine(new CommitId(JOB_B, 1), List.of(b));

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> crashing.commit(committable))
        .isInstanceOf(SimulatedCrash.class);
    assertThat(table().snapshots()).hasSize(2);
    paths(b).forEach(original -> assertThat(exists(original)).as("original %s still there", original).isTrue());
    Set<String> committedFiles = referencedFiles();

    IcebergAggregatedCommitter restarted = committer(sink(WITH_Y));
    assertThat(restarted.commit(committable)).isInstanceOf(CommitOutcome.AlreadyCommitted.class);

    assertRows(Map.of("x", new long[] {0, 300}, "y", new long[] {300, 600}));
    assertThat(referencedFiles()).as("the replay wrote nothing").isEqualTo(committedFiles);
    committedFiles.forEach(path -> assertThat(exists(path)).as("committed %s", path).isTrue());
    paths(b).forEach(original -> assertThat(exists(original)).as("original %s deleted by the replay", original)
        .isFalse());
  }

  /**
   * A third job adds its column after B's files were rewritten and before B's commit: B's attempt finds the ids it
   * rewrote with taken again, commits nothing (retryable), deletes its rewrites, and its retry rewrites again.
   */
  @Test
  void aColumnAddedBetweenTheRewriteAndTheCommitMakesTheAttemptRetry() throws IOException {
    createTable(false);
    IcebergSink<Record> sinkA = sink(WITH_X);
    IcebergSink<Record> sinkB = sink(WITH_Y);
    IcebergSink<Record> sinkC = sink(WITH_Z);
    StagingManifest a = stage(sinkA, JOB_A, 1, 0, 300, "x");
    StagingManifest b = stage(sinkB, JOB_B, 1, 300, 600, "y");
    StagingManifest c = stage(sinkC, JOB_C, 1, 600, 900, "z");
    IcebergAggregatedCommitter committerA = committer(sinkA);
    IcebergAggregatedCommitter committerC = committer(sinkC);
    assertThat(committerA.commit(committerA.combine(new CommitId(JOB_A, 1), List.of(a))))
        .isInstanceOf(CommitOutcome.Committed.class);
    AtomicReference<CommitOutcome> racing = new AtomicReference<>();
    List<List<String>> rewrites = new ArrayList<>();
    IcebergAggregatedCommitter committerB = committer(sinkB).hooks(new IcebergAggregatedCommitter.Hooks() {
      @Override
      public void afterRewrite(FieldIdRewrite.Result rewrite) {
        rewrites.add(rewrite.written());
        if (racing.get() == null) {
          racing.set(committerC.commit(committerC.combine(new CommitId(JOB_C, 1), List.of(c))));
        }
      }
    });
    IcebergCommittable committableB = committerB.combine(new CommitId(JOB_B, 1), List.of(b));

    CommitOutcome raced = committerB.commit(committableB);
    CommitOutcome retried = committerB.commit(committableB);

    assertThat(racing.get()).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(raced).as("the racing column was observed").isInstanceOf(CommitOutcome.Retryable.class);
    assertThat(((CommitOutcome.Retryable) raced).cause()).isInstanceOf(StaleFieldIdsException.class)
        .hasMessageContaining("Column 'y'");
    assertThat(rewrites).hasSize(2);
    assertThat(rewrites.get(0)).as("a new schema, new names").doesNotContainAnyElementsOf(rewrites.get(1));
    rewrites.get(0).forEach(path -> assertThat(exists(path)).as("rewrite %s of the failed attempt", path).isFalse());
    assertThat(retried).isInstanceOf(CommitOutcome.Committed.class);
    assertRows(Map.of("x", new long[] {0, 300}, "y", new long[] {300, 600}, "z", new long[] {600, 900}));
    assertThat(((HasTableOperations) table()).operations().current().lastColumnId()).isEqualTo(5);
  }

  @Test
  void aColumnAnotherJobAddedWithAnotherTypeStopsTheCommitNamingColumnFileAndTypes() throws IOException {
    createTable(false);
    Schema xAsLong = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "payload", Types.StringType.get()),
        Types.NestedField.optional(3, "x", Types.LongType.get()));
    IcebergSink<Record> sinkA = sink(WITH_X);
    IcebergSink<Record> sinkB = sink(xAsLong);
    StagingManifest a = stage(sinkA, JOB_A, 1, 0, 300, "x");
    StagingManifest b = stage(sinkB, JOB_B, 1, 300, 600, "x");
    IcebergAggregatedCommitter committerA = committer(sinkA);
    IcebergAggregatedCommitter committerB = committer(sinkB);
    assertThat(committerA.commit(committerA.combine(new CommitId(JOB_A, 1), List.of(a))))
        .isInstanceOf(CommitOutcome.Committed.class);
    Set<String> before = referencedFiles();

    CommitOutcome outcome = committerB.commit(committerB.combine(new CommitId(JOB_B, 1), List.of(b)));

    assertThat(outcome).isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(((CommitOutcome.Fatal) outcome).cause()).hasMessageContaining("Column 'x' is string in table")
        .hasMessageContaining("written with long").hasMessageContaining(b.files().get(0).path());
    assertThat(table().snapshots()).hasSize(1);
    assertThat(referencedFiles()).isEqualTo(before);
    paths(b).forEach(original -> assertThat(exists(original)).as("staged %s kept", original).isTrue());
  }

  private static String name(String location) {
    return location.substring(location.lastIndexOf('/') + 1);
  }
}
