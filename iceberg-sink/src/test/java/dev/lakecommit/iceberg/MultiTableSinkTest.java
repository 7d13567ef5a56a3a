package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.CrashHarness;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.CrashingSink;
import dev.lakecommit.core.testing.RangeSource;
import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The multi-table sink under the standalone runtime, on a catalog with atomic cuts (JDBC on SQLite) and one with cut
 * records (Hadoop): a transfer workload whose every transfer is a debit row and a credit row in two tables, the
 * debits moving to a table that appears mid-run. Every run ends with each source key once over the tables, and every
 * cut of the job balances (the same transfers in the debit tables as in the credits) — without crashes, at every
 * crash point of the protocol, and after a crash right after the first records of the new table (whose staged files
 * the restart removes). Without the idempotency check a replay duplicates. A newer run fences an older one's cut and
 * its first write into a table the newer run never saw.
 */
class MultiTableSinkTest {
  static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.required(2, "transfer", Types.LongType.get()),
      Types.NestedField.required(3, "account", Types.StringType.get()),
      Types.NestedField.required(4, "amount", Types.LongType.get()));
  static final TableIdentifier DEBITS = TableIdentifier.of("bank", "debits");
  static final TableIdentifier CREDITS = TableIdentifier.of("bank", "credits");
  static final TableIdentifier LATE_DEBITS = TableIdentifier.of("bank", "debits_late");
  static final List<TableIdentifier> TABLES = List.of(DEBITS, CREDITS, LATE_DEBITS);
  /** From this transfer on, debits go to {@link #LATE_DEBITS}, a table that appears mid-run. */
  static final long LATE_FROM = 60;
  static final int RECORDS = 240;
  /** Even: a transfer's two rows are never split by a checkpoint. */
  static final int CHECKPOINT_EVERY = 40;

  @TempDir Path dir;
  private final List<AutoCloseable> closeables = new ArrayList<>();
  private CatalogFixture fixture;

  static Stream<String> catalogs() {
    return Stream.of("jdbc-sqlite", "hadoop");
  }

  /** Each crash point once, on the catalogs in turn (every point on both with {@code -Plong}). */
  static Stream<Arguments> crashPoints() {
    return CutFixtures.crashPoints(catalogs().toList(), 0, 100, 3);
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
    return sink(catalog, idempotencyCheck, 15);
  }

  private MultiTableSink<Record> sink(String catalog, boolean idempotencyCheck, long rowsPerFile) {
    MultiTableSink<Record> sink = MultiTableSink.forRecords(fixture(catalog).properties())
        .catalogName(fixture(catalog).name())
        .router(record -> TableIdentifier.of("bank", (String) record.getField("account")))
        .schema(SCHEMA)
        .partitionBy(table -> List.of("bucket(2, id)"))
        .tableProperties(Map.of("format-version", "2"))
        .maxRowsPerFile(rowsPerFile)
        .build()
        .idempotencyCheck(idempotencyCheck);
    closeables.add(sink);
    return sink;
  }

  /** Key k: transfer k / 2, its debit (even k) or credit (odd k). */
  static CheckpointedSource<Record> transfers(long count) {
    RangeSource keys = new RangeSource(count);
    return position -> {
      CheckpointedSource.SourceReader<Long> reader = keys.open(position);
      GenericRecord template = GenericRecord.create(SCHEMA);
      return new CheckpointedSource.SourceReader<>() {
        @Override
        public Record next() throws IOException {
          Long key = reader.next();
          if (key == null) {
            return null;
          }
          long transfer = key / 2;
          String account = key % 2 == 1 ? CREDITS.name() : transfer >= LATE_FROM ? LATE_DEBITS.name()
              : DEBITS.name();
          return template.copy(Map.of("id", key, "transfer", transfer, "account", account, "amount", 10 + transfer));
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

  private CrashHarness.Outcome run(String catalog, CrashSchedule schedule, boolean idempotencyCheck)
      throws IOException {
    return CrashHarness.run(dir.resolve("checkpoints"),
        new CrashHarness.Config(RECORDS, 3, CHECKPOINT_EVERY, 15, false, false,
            dev.lakecommit.core.runtime.RestoreBehindPolicy.FAIL),
        schedule, crashes -> new CrashingSink<>(sink(catalog, idempotencyCheck), crashes), transfers(RECORDS),
        () -> ids(fixture.newCatalog()));
  }

  /** Every id a reader of the tables sees now, with repeats. */
  private static List<Long> ids(Catalog catalog) {
    List<Long> ids = new ArrayList<>();
    for (TableIdentifier table : TABLES) {
      if (catalog.tableExists(table)) {
        rows(catalog.loadTable(table), null).forEach(row -> ids.add((Long) row.getField("id")));
      }
    }
    return ids;
  }

  private static List<Record> rows(Table table, Long snapshotId) {
    return CutAudit.rows(table, snapshotId);
  }

  /**
   * Each checkpoint of the job, read as a cut: every table at its newest snapshot of the job at or below the
   * checkpoint. The transfers in the debit tables must be those in the credits, each once.
   */
  private static int assertEveryCutBalances(Catalog catalog) {
    CutAudit audit = new CutAudit(catalog, TABLES);
    Set<Long> checkpoints = audit.checkpoints();
    assertThat(checkpoints).isNotEmpty();
    for (long checkpoint : checkpoints) {
      Map<Long, Integer> debits = new TreeMap<>();
      Map<Long, Integer> credits = new TreeMap<>();
      audit.at(checkpoint).forEach((table, rows) -> {
        Map<Long, Integer> side = table.equals(CREDITS) ? credits : debits;
        rows.forEach(row -> side.merge((Long) row.getField("transfer"), 1, Integer::sum));
      });
      assertThat(debits).as("debits at cut %s", checkpoint).isEqualTo(credits);
      assertThat(debits.values()).as("each transfer once at cut %s", checkpoint).allMatch(n -> n == 1);
    }
    return checkpoints.size();
  }

  /** Files under a table's data location that no snapshot references. */
  private static List<String> unreferenced(Table table) throws IOException {
    Set<String> referenced = OrphanFiles.referenced(table);
    Path data = Path.of(java.net.URI.create(IcebergSink.dataLocation(table)));
    if (!Files.exists(data)) {
      return List.of();
    }
    try (Stream<Path> files = Files.walk(data)) {
      return files.filter(Files::isRegularFile).filter(file -> file.toString().endsWith(".parquet"))
          .map(file -> file.toUri().toString())
          .filter(location -> !referenced.contains(OrphanFiles.normalize(location))).toList();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void routedRecordsLandOnceAndEveryCutBalances(String catalog) throws IOException {
    CrashHarness.Outcome outcome = run(catalog, CrashSchedule.none(), true);

    assertThat(outcome.failure()).isNull();
    assertThat(outcome.audit().exact()).as(outcome.audit().toString()).isTrue();
    Catalog reader = fixture.newCatalog();
    assertThat(TABLES).allMatch(reader::tableExists);
    assertThat(assertEveryCutBalances(reader)).isEqualTo(RECORDS / CHECKPOINT_EVERY);
    MultiTableSink<Record> sink = sink(catalog, true);
    JobId job = JobId.of("crash-job");
    assertThat(sink.jobTables(job).tables().keySet()).containsExactlyInAnyOrderElementsOf(TABLES);
    try (CutCommitter cut = sink.cutCommitter(job)) {
      CutCommitter.Cut last = cut.lastCut(job, TABLES, List.of()).orElseThrow();
      assertThat(last.checkpointId()).isEqualTo(RECORDS / CHECKPOINT_EVERY);
      assertThat(last.snapshots().keySet()).containsExactlyInAnyOrderElementsOf(TABLES);
      assertThat(cut.mode()).contains(catalog.equals("hadoop") ? "record" : "atomic");
    }
  }

  @ParameterizedTest(name = "{0}: crash at {1} #{2}")
  @MethodSource("crashPoints")
  void everyCrashPointEndsWithEachRowOnceAndBalancedCuts(String catalog, String point, int occurrence)
      throws IOException {
    CrashHarness.Outcome outcome = run(catalog, CrashSchedule.at(point, occurrence), true);

    assertThat(outcome.crashes()).as("the crash happened").isEqualTo(1);
    assertThat(outcome.failure()).isNull();
    assertThat(outcome.audit().exact()).as(outcome.audit().toString()).isTrue();
    Catalog reader = fixture.newCatalog();
    assertEveryCutBalances(reader);
    for (TableIdentifier table : TABLES) {
      assertThat(unreferenced(reader.loadTable(table))).as("files of %s no snapshot holds", table).isEmpty();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aCrashRightAfterTheFirstRecordsOfANewTableLeavesNothingOfItsRunThere(String catalog) throws IOException {
    // the crash comes 18 records into the late table (in files of 4 rows, some closed), before the checkpoint that
    // would hold them: staged there, not committed
    CrashSchedule schedule = CrashSchedule.at(CrashSchedule.WRITE, (int) (2 * LATE_FROM + 36));
    List<String> stagedAtTheCrash = new ArrayList<>();
    CrashHarness.Outcome outcome = CrashHarness.run(dir.resolve("checkpoints"),
        new CrashHarness.Config(RECORDS, 1, CHECKPOINT_EVERY, 15, false, false,
            dev.lakecommit.core.runtime.RestoreBehindPolicy.FAIL),
        schedule, crashes -> {
          if (crashes.crashes() == 1 && stagedAtTheCrash.isEmpty()) {
            // the second life starts: what the first left in the new table
            Catalog reader = fixture.newCatalog();
            try {
              stagedAtTheCrash.addAll(unreferenced(reader.loadTable(LATE_DEBITS)));
            } catch (IOException e) {
              throw new java.io.UncheckedIOException(e);
            }
            assertThat(reader.loadTable(LATE_DEBITS).currentSnapshot()).as("nothing committed there yet").isNull();
          }
          return new CrashingSink<>(sink(catalog, true, 4), crashes);
        }, transfers(RECORDS), () -> ids(fixture.newCatalog()));

    assertThat(outcome.crashes()).isEqualTo(1);
    assertThat(stagedAtTheCrash).as("the first life staged in the new table").isNotEmpty();
    assertThat(outcome.audit().exact()).as(outcome.audit().toString()).isTrue();
    Catalog reader = fixture.newCatalog();
    assertThat(unreferenced(reader.loadTable(LATE_DEBITS))).isEmpty();
    stagedAtTheCrash.forEach(location -> assertThat(Path.of(java.net.URI.create(location))).doesNotExist());
    assertEveryCutBalances(reader);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void withoutTheIdempotencyCheckAReplayedCutDuplicates(String catalog) throws IOException {
    CrashHarness.Outcome outcome = run(catalog, CrashSchedule.at(CrashSchedule.COMMIT_APPLIED, 3), false);

    assertThat(outcome.crashes()).isEqualTo(1);
    assertThat(outcome.audit().duplicateKeys()).as(outcome.audit().toString()).isPositive();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aNewerRunFencesTheOlderRunsCutsAndItsFirstWriteIntoATableItRegistersLate(String catalog) throws Exception {
    MultiTableSink<Record> sink = sink(catalog, true);
    JobId job = JobId.of("fenced");
    TargetRun older = TargetRun.open(sink, job);
    closeables.add(older);
    older.claim("older run");
    SinkWriter<Record, TableManifests, StagingWriterState> writer =
        sink.createWriter(new WriterContext(job, 0, 1, 0, 0, older.epoch()));
    SinkAggregatedCommitter<TableManifests, CutCommittable> committer = sink.createAggregatedCommitter();
    older.fence(committer);
    Record debit = GenericRecord.create(SCHEMA).copy(Map.of("id", 0L, "transfer", 0L, "account", "debits",
        "amount", 10L));
    writer.write(debit);
    CutCommittable first = committer.combine(new CommitId(job, 1), List.of(writer.prepareCommit(1).orElseThrow()));

    // a newer run claims: it sees the registered table and takes it
    TargetRun newer = TargetRun.open(sink(catalog, true), job);
    closeables.add(newer);
    newer.claim("newer run");
    assertThat(newer.epoch()).isGreaterThan(older.epoch());

    // the older run's cut is refused, and nothing of it is visible
    CommitOutcome outcome = committer.commit(first);
    assertThat(outcome).isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(((CommitOutcome.Fatal) outcome).cause()).isInstanceOf(FencedException.class);
    assertThat(fixture.newCatalog().loadTable(DEBITS).snapshots()).noneMatch(snapshot ->
        snapshot.summary().containsKey(CommitId.CHECKPOINT_ID_KEY));
    // its first record of a table the newer run's claim never saw is refused before anything is staged there
    Record credit = GenericRecord.create(SCHEMA).copy(Map.of("id", 1L, "transfer", 0L, "account", "credits",
        "amount", 10L));
    assertThatThrownBy(() -> writer.write(credit)).isInstanceOf(FencedException.class)
        .hasMessageContaining("bank.credits");
    assertThat(unreferenced(fixture.newCatalog().loadTable(CREDITS))).isEmpty();
    committer.close();
    writer.close();
  }

  /**
   * A later run of a job writes records with a column its tables lack and a wider amount: without addNewColumns the
   * writer stops naming the table and the column, with nothing staged; with it, each table the cut touches evolves
   * in the cut that commits its rows, the first run's rows read back without a value in the new column, and a table
   * created now has the whole schema.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aTableEvolvesInTheCutThatCommitsItsNewColumns(String catalog) throws Exception {
    Schema narrow = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.required(2, "account", Types.StringType.get()),
        Types.NestedField.required(3, "amount", Types.IntegerType.get()));
    Schema wide = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.required(2, "account", Types.StringType.get()),
        Types.NestedField.required(3, "amount", Types.LongType.get()),
        Types.NestedField.optional(4, "memo", Types.StringType.get()));
    JobId job = JobId.of("evolving");
    cut(catalog, job, narrow, false, 1, List.of(
        GenericRecord.create(narrow).copy(Map.of("id", 0L, "account", "debits", "amount", -5)),
        GenericRecord.create(narrow).copy(Map.of("id", 1L, "account", "credits", "amount", 5))));

    List<Record> later = List.of(
        GenericRecord.create(wide).copy(Map.of("id", 2L, "account", "debits", "amount", -3_000_000_000L,
            "memo", "big")),
        GenericRecord.create(wide).copy(Map.of("id", 3L, "account", "credits", "amount", 2_999_999_999L,
            "memo", "big")),
        GenericRecord.create(wide).copy(Map.of("id", 4L, "account", "fees", "amount", 1L, "memo", "fee")));
    assertThatThrownBy(() -> cut(catalog, job, wide, false, 2, later)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("evo.").hasMessageContaining("no column 'memo'").hasMessageContaining("addNewColumns");
    cut(catalog, job, wide, true, 2, later);

    Catalog reader = fixture.newCatalog();
    for (String name : List.of("debits", "credits", "fees")) {
      Table table = reader.loadTable(TableIdentifier.of("evo", name));
      assertThat(table.schema().findField("memo")).as("memo of %s", name).isNotNull();
      assertThat(table.schema().findType("amount")).as("amount of %s", name).isEqualTo(Types.LongType.get());
      assertThat(unreferenced(table)).as("staged files of the refused run in %s", name).isEmpty();
    }
    Map<Long, List<Object>> rows = new TreeMap<>();
    for (String name : List.of("debits", "credits", "fees")) {
      rows(reader.loadTable(TableIdentifier.of("evo", name)), null).forEach(row -> rows.put((Long) row.getField("id"),
          java.util.Arrays.asList(row.getField("amount"), row.getField("memo"))));
    }
    assertThat(rows).containsExactlyEntriesOf(new TreeMap<>(Map.of(
        0L, java.util.Arrays.asList(-5L, null), 1L, java.util.Arrays.asList(5L, null),
        2L, List.of(-3_000_000_000L, "big"), 3L, List.of(2_999_999_999L, "big"), 4L, List.of(1L, "fee"))));
    CutAudit audit = new CutAudit(reader, List.of(TableIdentifier.of("evo", "debits"),
        TableIdentifier.of("evo", "credits"), TableIdentifier.of("evo", "fees")));
    assertThat(audit.checkpoints()).containsExactly(1L, 2L);
  }

  /** One run of {@code job} writing {@code records} (each to table {@code evo.<account>}) as cut {@code checkpoint}. */
  private void cut(String catalog, JobId job, Schema schema, boolean addNewColumns, long checkpoint,
      List<Record> records) throws Exception {
    MultiTableSink<Record> sink = MultiTableSink.forRecords(fixture(catalog).properties(), schema)
        .catalogName(fixture.name())
        .router(record -> TableIdentifier.of("evo", (String) record.getField("account")))
        .addNewColumns(addNewColumns)
        .build();
    closeables.add(sink);
    TargetRun run = TargetRun.open(sink, job);
    closeables.add(run);
    run.claim("run of checkpoint " + checkpoint);
    try (SinkWriter<Record, TableManifests, StagingWriterState> writer =
            sink.createWriter(new WriterContext(job, 0, 1, 0, checkpoint - 1, run.epoch()));
        SinkAggregatedCommitter<TableManifests, CutCommittable> committer = sink.createAggregatedCommitter()) {
      try {
        for (Record record : records) {
          writer.write(record);
        }
      } catch (RuntimeException e) {
        writer.abortPrepare();
        throw e;
      }
      run.fence(committer);
      CommitOutcome outcome = committer.commit(committer.combine(new CommitId(job, checkpoint),
          List.of(writer.prepareCommit(checkpoint).orElseThrow())));
      assertThat(outcome).as("cut %s", checkpoint).isInstanceOf(CommitOutcome.Committed.class);
    }
  }

  @Test
  void oneWritersOpenFilesStayWithinTheBoundOverAllItsTables() throws Exception {
    int tables = TestScale.pick(40, 1000);
    int maxOpen = 6;
    MultiTableSink<Record> sink = MultiTableSink.forRecords(fixture("jdbc-sqlite").properties())
        .catalogName(fixture.name())
        .router(record -> TableIdentifier.of("many", "t" + record.getField("transfer")))
        .schema(SCHEMA)
        .partitionBy(table -> List.of("bucket(4, id)"))
        .maxOpenFiles(maxOpen)
        .build();
    closeables.add(sink);
    JobId job = JobId.of("many");
    TargetRun run = TargetRun.open(sink, job);
    closeables.add(run);
    run.claim("the only run");
    MultiTableWriter<Record> writer =
        (MultiTableWriter<Record>) sink.createWriter(new WriterContext(job, 0, 1, 0, 0, run.epoch()));
    GenericRecord template = GenericRecord.create(SCHEMA);
    java.util.Random random = new java.util.Random(20261206L);
    int rows = tables * 8;
    for (long id = 0; id < rows; id++) {
      long table = id < tables ? id : random.nextInt(tables);
      writer.write(template.copy(Map.of("id", id, "transfer", table, "account", "t" + table, "amount", id)));
      assertThat(writer.budget().openFiles()).isLessThanOrEqualTo(maxOpen);
    }
    TableManifests manifests = writer.prepareCommit(1).orElseThrow();
    assertThat(writer.tableCount()).isEqualTo(tables);
    assertThat(manifests.manifests()).hasSize(tables);
    assertThat(manifests.manifests().values().stream().mapToLong(m -> m.recordCount()).sum()).isEqualTo(rows);
    assertThat(writer.budget().mostOpenFiles()).isEqualTo(maxOpen);
    assertThat(writer.budget().openFiles()).isZero();
    assertThat(sink.jobTables(job).tables()).hasSize(tables);
    writer.close();
  }

  @Test
  void twoRunsClaimingTheSameEpochAtOnceEndWithDifferentEpochs() throws Exception {
    JobId job = JobId.of("fresh");
    MultiTableTarget first = (MultiTableTarget) sink("hadoop", true).openTarget();
    MultiTableTarget second = (MultiTableTarget) sink("hadoop", true).openTarget();
    closeables.add(first);
    closeables.add(second);
    long[] firstEpoch = new long[1];
    // the second run has chosen epoch 1 of a job with no table yet; the first claims it before it publishes
    second.beforeClaim(new Runnable() {
      private boolean done;

      @Override
      public void run() {
        if (!done) {
          done = true;
          try {
            firstEpoch[0] = first.claimEpoch(job, "first run").epoch();
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        }
      }
    });

    long secondEpoch = second.claimEpoch(job, "second run").epoch();

    assertThat(second.claimConflicts()).as("the claims met").isEqualTo(1);
    assertThat(firstEpoch[0]).isEqualTo(1);
    assertThat(secondEpoch).isEqualTo(2);
    assertThat(second.currentEpoch(job).orElseThrow().epoch()).isEqualTo(2);
  }

  @Test
  void aCrashBetweenTheTablesCommitsAndTheCutRecordIsRolledForwardByTheNextRun() throws IOException {
    java.util.concurrent.atomic.AtomicInteger records = new java.util.concurrent.atomic.AtomicInteger();
    CrashHarness.Outcome outcome = CrashHarness.run(dir.resolve("checkpoints"),
        new CrashHarness.Config(RECORDS, 2, CHECKPOINT_EVERY, 15, false, false,
            dev.lakecommit.core.runtime.RestoreBehindPolicy.FAIL),
        CrashSchedule.none(), crashes -> sink("hadoop", true).beforeCutRecord(() -> {
          if (records.incrementAndGet() == 4) {
            throw new dev.lakecommit.core.testing.SimulatedCrash("before the cut record", 4);
          }
        }), transfers(RECORDS), () -> ids(fixture.newCatalog()));

    assertThat(records.get()).as("the crash came").isGreaterThan(4);
    assertThat(outcome.lives()).isEqualTo(2);
    assertThat(outcome.audit().exact()).as(outcome.audit().toString()).isTrue();
    Catalog reader = fixture.newCatalog();
    assertEveryCutBalances(reader);
    try (CutCommitter cut = sink("hadoop", true).cutCommitter(JobId.of("crash-job"))) {
      assertThat(cut.lastCut(JobId.of("crash-job"), TABLES, List.of()).orElseThrow().checkpointId())
          .isEqualTo(RECORDS / CHECKPOINT_EVERY);
    }
  }

  /**
   * The tables hold a checkpoint whose cut record was never published (a crash between the tables' commits and the
   * record): the next run's sweep of older runs' files above the last cut keeps the files the tables committed, and
   * its replay of the checkpoint finds them there.
   */
  @Test
  void theSweepOfANewRunKeepsFilesATableCommittedAboveTheLastCut() throws Exception {
    JobId job = JobId.of("unrecorded");
    MultiTableSink<Record> crashing = sink("hadoop", true).beforeCutRecord(() -> {
      throw new IllegalStateException("crash before the cut record");
    });
    TargetRun first = TargetRun.open(crashing, job);
    closeables.add(first);
    first.claim("first run");
    CutCommittable cut;
    try (SinkWriter<Record, TableManifests, StagingWriterState> writer =
            crashing.createWriter(new WriterContext(job, 0, 1, 0, 0, first.epoch()));
        SinkAggregatedCommitter<TableManifests, CutCommittable> committer = crashing.createAggregatedCommitter()) {
      GenericRecord template = GenericRecord.create(SCHEMA);
      writer.write(template.copy(Map.of("id", 0L, "transfer", 0L, "account", "debits", "amount", 10L)));
      writer.write(template.copy(Map.of("id", 1L, "transfer", 0L, "account", "credits", "amount", 10L)));
      first.fence(committer);
      cut = committer.combine(new CommitId(job, 1), List.of(writer.prepareCommit(1).orElseThrow()));
      // the run ends here, as if it crashed: its retry would have published the record
      assertThat(committer.commit(cut)).isInstanceOf(CommitOutcome.Unknown.class);
    }
    Catalog reader = fixture.newCatalog();
    assertThat(reader.loadTable(DEBITS).currentSnapshot()).as("the tables hold checkpoint 1").isNotNull();

    MultiTableSink<Record> sink = sink("hadoop", true);
    TargetRun second = TargetRun.open(sink, job);
    closeables.add(second);
    second.claim("second run");
    assertThat(second.lastCommitted()).as("the last cut").isEmpty();
    second.deleteOlderRuns(second.lastCommitted().orElse(0));

    for (TableIdentifier table : List.of(DEBITS, CREDITS)) {
      Table loaded = reader.loadTable(table);
      try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.FileScanTask> tasks =
          loaded.newScan().planFiles()) {
        for (org.apache.iceberg.FileScanTask task : tasks) {
          assertThat(loaded.io().newInputFile(task.file().location()).exists())
              .as("committed %s of %s", task.file().location(), table).isTrue();
        }
      }
      assertThat(rows(loaded, null)).as("rows of %s", table).hasSize(1);
    }
    try (SinkAggregatedCommitter<TableManifests, CutCommittable> committer = sink.createAggregatedCommitter()) {
      second.fence(committer);
      assertThat(committer.commit(cut)).as("the replay rolls the cut forward")
          .isInstanceOf(CommitOutcome.AlreadyCommitted.class);
    }
    assertThat(second.lastCommitted()).hasValue(1);
  }

  @Test
  void tableNamesWithDotsReadBackAsTheSameTables() {
    TableIdentifier dotted = TableIdentifier.of(org.apache.iceberg.catalog.Namespace.of("db", "x%y"), "orders.eu");
    assertThat(TableNames.encode(dotted)).isEqualTo("db.x%25y.orders%2Eeu");
    assertThat(TableNames.decode(TableNames.encode(dotted))).isEqualTo(dotted);
    assertThat(TableNames.encode(DEBITS)).isEqualTo("bank.debits");
  }

  @Test
  void aClaimThatACrashLeftEmptyStillTakesItsEpochAndTwoNamesOfOneTableAreRefused() throws Exception {
    MultiTableSink<Record> sink = sink("hadoop", true);
    JobId job = JobId.of("torn");
    // a run killed while it wrote its claim of epoch 5: the object is there, empty
    Path state = Path.of(java.net.URI.create(sink.stateLocation() + "/torn/tables"));
    Files.createDirectories(state);
    Files.write(state.resolve("claim-00000000000000000005-0123456789abcdef"), new byte[0]);
    try (MultiTableTarget target = (MultiTableTarget) sink.openTarget()) {
      assertThat(target.claimEpoch(job, "next run").epoch()).isEqualTo(6);
    }

    JobTables tables = sink.jobTables(job);
    tables.register(DEBITS, "uuid-1");
    tables.register(DEBITS, "uuid-1");
    assertThatThrownBy(() -> tables.register(TableIdentifier.of("bank", "DEBITS"), "uuid-1"))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("bank.DEBITS").hasMessageContaining(
            "bank.debits").hasMessageContaining("same table");
    // the table dropped and created again under its name: another UUID
    assertThatThrownBy(() -> tables.register(DEBITS, "uuid-2")).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("bank.debits").hasMessageContaining("dropped and created again");
  }
}
