package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.CrashHarness;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.CrashingSink;
import dev.lakecommit.core.testing.RangeSource;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongFunction;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * With {@code addNewColumns}, a column the table lacks is added by the commit that adds the first files holding
 * it, in the same transaction: one metadata version has both, none has one without the other, and crashes,
 * replays, a second writer and a racing job add it once.
 */
class SchemaInCommitTest {
  /** The test table's schema with an optional column {@code email} (the writers' input). */
  static final Schema WITH_EMAIL = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "payload", Types.StringType.get()),
      Types.NestedField.optional(3, "email", Types.StringType.get()));

  @TempDir Path dir;
  private CatalogFixture fixture;
  private Catalog catalog;

  @BeforeEach
  void createTable() {
    fixture = CatalogFixture.sqlite(dir);
    catalog = fixture.newCatalog();
    TestTables.create(catalog);
  }

  private IcebergSink<Record> sink(Schema staged) {
    return IcebergSink.forRecords(IcebergSinkConfig.builder().catalogName(fixture.name())
        .catalogProperties(fixture.properties()).table("db.events").createTable(staged, List.of())
        .addNewColumns(true).build());
  }

  private static Record row(Schema schema, long id, Object email) {
    GenericRecord record = GenericRecord.create(schema);
    record.setField("id", id);
    record.setField("payload", "row-" + id);
    if (schema.findField("email") != null) {
      record.setField("email", email);
    }
    return record;
  }

  /** Writer {@code index} of {@code writers} of the sink stages the keys {@code from .. to-1} for the checkpoint. */
  private static StagingManifest stage(IcebergSink<Record> sink, JobId job, int index, int writers, long checkpoint,
      long from, long to, LongFunction<Record> rows) throws IOException {
    SinkWriter<Record, StagingManifest, StagingWriterState> writer =
        sink.createWriter(new WriterContext(job, index, writers, 0, checkpoint - 1));
    try (writer) {
      for (long id = from; id < to; id++) {
        writer.write(rows.apply(id));
      }
      return writer.prepareCommit(checkpoint).orElseThrow();
    }
  }

  private Table table() {
    return catalog.loadTable(TestTables.IDENT);
  }

  private Map<Long, Object> emails() throws IOException {
    Map<Long, Object> emails = new HashMap<>();
    try (CloseableIterable<Record> rows = IcebergGenerics.read(table()).build()) {
      for (Record row : rows) {
        assertThat(emails.put((Long) row.getField("id"), row.getField("email"))).as("key %s once", row.getField("id"))
            .isNull();
      }
    }
    return emails;
  }

  private static long columnsNamed(Table table, String name) {
    return table.schema().columns().stream().filter(c -> c.name().equals(name)).count();
  }

  @Test
  void theNewColumnAndItsFirstValuesLandInOneSnapshotOfOneMetadataVersion() throws IOException {
    IcebergSink<Record> plain = sink(TestTables.SCHEMA);
    JobId job = JobId.of("job-1");
    SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committer = plain.createAggregatedCommitter();
    StagingManifest before = stage(plain, job, 0, 1, 1, 0, 100, id -> row(TestTables.SCHEMA, id, null));
    assertThat(committer.commit(committer.combine(new CommitId(job, 1), List.of(before))))
        .isInstanceOf(CommitOutcome.Committed.class);
    assertThat(before.evolvedSchema()).as("files of the table's schema carry none").isEmpty();
    Table old = table();
    Snapshot oldSnapshot = old.currentSnapshot();
    int oldMetadataVersions = ((HasTableOperations) old).operations().current().previousFiles().size();

    IcebergSink<Record> evolving = sink(WITH_EMAIL);
    SinkAggregatedCommitter<StagingManifest, IcebergCommittable> evolvingCommitter =
        evolving.createAggregatedCommitter();
    StagingManifest staged = stage(evolving, job, 0, 1, 2, 100, 200, id -> row(WITH_EMAIL, id, "e-" + id));

    assertThat(staged.evolvedSchema()).as("the manifest carries the schema its files were written with")
        .isPresent();
    assertThat(table().schema().findField("email")).as("building the sink and staging change nothing").isNull();
    assertThat(evolvingCommitter.commit(evolvingCommitter.combine(new CommitId(job, 2), List.of(staged))))
        .isInstanceOf(CommitOutcome.Committed.class);

    Table table = table();
    Snapshot added = table.currentSnapshot();
    assertThat(added.parentId()).isEqualTo(oldSnapshot.snapshotId());
    assertThat(table.schemas().get(added.schemaId()).findField("email"))
        .as("the snapshot that adds the files has the evolved schema").isNotNull();
    assertThat(table.schemas().get(oldSnapshot.schemaId()).findField("email")).isNull();
    assertThat(table.schema().findField("email").fieldId()).isEqualTo(3);
    TableMetadata current = ((HasTableOperations) table).operations().current();
    assertThat(current.previousFiles()).as("one metadata version for the schema change and the data together")
        .hasSize(oldMetadataVersions + 1);
    for (TableMetadata.MetadataLogEntry entry : current.previousFiles()) {
      TableMetadata version = TableMetadataParser.read(table.io(), entry.file());
      assertThat(version.schema().findField("email")).as("metadata version %s has the column without its data",
          entry.file()).isNull();
    }
    Map<Long, Object> emails = emails();
    assertThat(emails).hasSize(200);
    emails.forEach((id, email) -> assertThat(email).as("email of %s", id).isEqualTo(id < 100 ? null : "e-" + id));
  }

  /**
   * A new top-level column and a new field inside an existing struct, in one checkpoint: the sink numbers the new
   * fields top-level first, and the commit must add them in that order (walking the written schema depth-first
   * would number the nested field first, and the files' ids would then name other columns).
   */
  @Test
  void aNewColumnAndANewStructFieldGetTheIdsTheFilesWereWrittenWith() throws IOException {
    Types.StructType address = Types.StructType.of(Types.NestedField.optional(3, "city", Types.StringType.get()));
    Schema people = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "address", address));
    org.apache.iceberg.catalog.TableIdentifier ident = org.apache.iceberg.catalog.TableIdentifier.of("db", "people");
    catalog.createTable(ident, people);
    Schema staged = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "address", Types.StructType.of(
            Types.NestedField.optional(3, "city", Types.StringType.get()),
            Types.NestedField.optional(10, "zip", Types.StringType.get()))),
        Types.NestedField.optional(11, "country", Types.StringType.get()));
    IcebergSink<Record> sink = IcebergSink.forRecords(IcebergSinkConfig.builder().catalogName(fixture.name())
        .catalogProperties(fixture.properties()).table("db.people").createTable(staged, List.of())
        .addNewColumns(true).build());
    Schema written = sink.writeSchema();
    JobId job = JobId.of("people-job");
    StagingManifest manifest = stage(sink, job, 0, 1, 1, 0, 50, id -> {
      GenericRecord row = GenericRecord.create(written);
      GenericRecord where = GenericRecord.create(written.findField("address").type().asStructType());
      where.setField("city", "city-" + id);
      where.setField("zip", "zip-" + id);
      row.setField("id", id);
      row.setField("address", where);
      row.setField("country", "country-" + id);
      return row;
    });
    SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committer = sink.createAggregatedCommitter();
    assertThat(committer.commit(committer.combine(new CommitId(job, 1), List.of(manifest))))
        .isInstanceOf(CommitOutcome.Committed.class);

    Table table = catalog.loadTable(ident);
    assertThat(table.schema().findField("country").fieldId()).isEqualTo(written.findField("country").fieldId());
    assertThat(table.schema().findField("address.zip").fieldId())
        .isEqualTo(written.findField("address.zip").fieldId());
    long rows = 0;
    try (CloseableIterable<Record> read = IcebergGenerics.read(table).build()) {
      for (Record row : read) {
        long id = (Long) row.getField("id");
        assertThat(row.getField("country")).isEqualTo("country-" + id);
        assertThat(((Record) row.getField("address")).getField("zip")).isEqualTo("zip-" + id);
        rows++;
      }
    }
    assertThat(rows).isEqualTo(50);
  }

  @Test
  void twoWritersOfOneCheckpointAddingTheSameColumnAddItOnce() throws IOException {
    // Two sinks built apart, as two processes (or two Flink subtasks) build theirs, each with its own writer.
    IcebergSink<Record> first = sink(WITH_EMAIL);
    IcebergSink<Record> second = sink(WITH_EMAIL);
    JobId job = JobId.of("job-1");
    StagingManifest a = stage(first, job, 0, 2, 1, 0, 150, id -> row(WITH_EMAIL, id, "e-" + id));
    StagingManifest b = stage(second, job, 1, 2, 1, 150, 300, id -> row(WITH_EMAIL, id, "e-" + id));
    int lastColumnId = ((HasTableOperations) table()).operations().current().lastColumnId();

    SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committer = second.createAggregatedCommitter();
    assertThat(committer.commit(committer.combine(new CommitId(job, 1), List.of(a, b))))
        .isInstanceOf(CommitOutcome.Committed.class);

    Table table = table();
    assertThat(columnsNamed(table, "email")).isEqualTo(1);
    assertThat(((HasTableOperations) table).operations().current().lastColumnId()).isEqualTo(lastColumnId + 1);
    assertThat(table.snapshots()).hasSize(1);
    assertThat(table.schemas().get(table.currentSnapshot().schemaId()).findField("email")).isNotNull();
    Map<Long, Object> emails = emails();
    assertThat(emails).hasSize(300);
    emails.forEach((id, email) -> assertThat(email).as("email of %s", id).isEqualTo("e-" + id));
  }

  /**
   * Two jobs add the same column from the same table version. One's commit lands between the other's reading of
   * the table and its catalog commit: that commit conflicts, and its retry finds the column there (same id and
   * type) and adds only its files.
   */
  @Test
  void aRetryAfterAConflictFindsTheColumnAddedByAnotherJobAndAddsItsFilesOnly() throws IOException {
    IcebergSink<Record> sinkA = sink(WITH_EMAIL);
    IcebergSink<Record> sinkB = sink(WITH_EMAIL);
    JobId jobA = JobId.of("job-a");
    JobId jobB = JobId.of("job-b");
    StagingManifest a = stage(sinkA, jobA, 0, 1, 1, 0, 100, id -> row(WITH_EMAIL, id, "a-" + id));
    StagingManifest b = stage(sinkB, jobB, 0, 1, 1, 100, 200, id -> row(WITH_EMAIL, id, "b-" + id));
    SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committerA = sinkA.createAggregatedCommitter();
    AtomicReference<CommitOutcome> racing = new AtomicReference<>();
    TableCommitter tableCommitter = new TableCommitter(catalog, TestTables.IDENT, CommitMode.APPEND, null, null,
        CommitMetrics.NONE).attemptHook(attempt -> {
          if (racing.get() == null) {
            racing.set(committerA.commit(committerA.combine(new CommitId(jobA, 1), List.of(a))));
          }
        });
    IcebergAggregatedCommitter committerB =
        new IcebergAggregatedCommitter(tableCommitter, sinkB.table(), sinkB.layout(), false);
    IcebergCommittable committableB = committerB.combine(new CommitId(jobB, 1), List.of(b));

    CommitOutcome conflicted = committerB.commit(committableB);
    CommitOutcome retried = committerB.commit(committableB);

    assertThat(racing.get()).isInstanceOf(CommitOutcome.Committed.class);
    assertThat(conflicted).as("the racing commit was observed").isInstanceOf(CommitOutcome.Retryable.class);
    assertThat(((CommitOutcome.Retryable) conflicted).cause()).isInstanceOf(CommitFailedException.class);
    assertThat(retried).isInstanceOf(CommitOutcome.Committed.class);
    Table table = table();
    assertThat(columnsNamed(table, "email")).isEqualTo(1);
    assertThat(table.snapshots()).hasSize(2);
    Map<Long, Object> emails = emails();
    assertThat(emails).hasSize(200);
    emails.forEach((id, email) -> assertThat(email).isEqualTo((id < 100 ? "a-" : "b-") + id));
  }

  @Test
  void aColumnAnotherJobAddedWithAnotherTypeStopsTheCommitNamingIt() throws IOException {
    Schema emailAsLong = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "payload", Types.StringType.get()),
        Types.NestedField.optional(3, "email", Types.LongType.get()));
    IcebergSink<Record> sinkA = sink(WITH_EMAIL);
    IcebergSink<Record> sinkB = sink(emailAsLong);
    StagingManifest a = stage(sinkA, JobId.of("job-a"), 0, 1, 1, 0, 100, id -> row(WITH_EMAIL, id, "a-" + id));
    StagingManifest b = stage(sinkB, JobId.of("job-b"), 0, 1, 1, 100, 200, id -> row(emailAsLong, id, id));
    SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committerA = sinkA.createAggregatedCommitter();
    SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committerB = sinkB.createAggregatedCommitter();
    assertThat(committerA.commit(committerA.combine(new CommitId(JobId.of("job-a"), 1), List.of(a))))
        .isInstanceOf(CommitOutcome.Committed.class);

    CommitOutcome outcome = committerB.commit(committerB.combine(new CommitId(JobId.of("job-b"), 1), List.of(b)));

    assertThat(outcome).isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(((CommitOutcome.Fatal) outcome).cause()).hasMessageContaining("Column 'email' is string in table")
        .hasMessageContaining("written with long");
    assertThat(table().snapshots()).hasSize(1);
    assertThat(emails()).hasSize(100);
  }

  /**
   * Files that wrote a column the table has renamed since (and that add a column, so their commit evolves the
   * table): the commit would add the old name as a new column and their values would land there, not in the
   * renamed one. Files whose ids name other columns are rewritten only for columns their job added
   * ({@link ConcurrentColumnsTest}); here nothing is committed and the message names the column.
   */
  @Test
  void filesOfAColumnRenamedSinceAreNeverCommitted() throws IOException {
    Schema withCoupon = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "payload", Types.StringType.get()),
        Types.NestedField.optional(3, "coupon", Types.StringType.get()));
    IcebergSink<Record> sinkB = sink(withCoupon);
    StagingManifest b = stage(sinkB, JobId.of("job-b"), 0, 1, 1, 100, 200, id -> {
      Record record = GenericRecord.create(withCoupon);
      record.setField("id", id);
      record.setField("payload", "p-" + id);
      record.setField("coupon", "c-" + id);
      return record;
    });
    table().updateSchema().renameColumn("payload", "body").commit();
    SinkAggregatedCommitter<StagingManifest, IcebergCommittable> committerB = sinkB.createAggregatedCommitter();

    CommitOutcome outcome = committerB.commit(committerB.combine(new CommitId(JobId.of("job-b"), 1), List.of(b)));

    assertThat(outcome).isInstanceOf(CommitOutcome.Fatal.class);
    assertThat(((CommitOutcome.Fatal) outcome).cause()).hasMessageContaining("Column 'payload' had field id 2")
        .hasMessageContaining("renamed or dropped").hasMessageContaining(b.files().get(0).path());
    assertThat(table().schema().findField("coupon")).isNull();
    assertThat(table().schema().findField("payload")).isNull();
    assertThat(table().snapshots()).isEmpty();
  }

  /** 300 rows of the schema with {@code email}, 2 writers, a checkpoint every 50 rows. */
  private static final CrashHarness.Config CONFIG =
      new CrashHarness.Config(300, 2, 50, 40, false, false, dev.lakecommit.core.runtime.RestoreBehindPolicy.FAIL);

  /**
   * A crash before the first checkpoint's commit (persisted, not committed: the restart commits the persisted
   * committable, whose manifests carry the evolved schema) or after it (committed, the checkpoint not yet marked
   * done: the restart finds it in the table and skips it): after the restarts the table has {@code email} once and
   * every row its value. (The crash matrix covers the other points for the commit path as a whole.)
   */
  @ParameterizedTest(name = "crash at {0}")
  @ValueSource(strings = {CrashSchedule.PERSISTED, CrashSchedule.COMMIT_APPLIED})
  void aCrashAroundTheFirstCommitAddsTheColumnOnceWithEveryValue(String point) throws IOException {
    CrashHarness.Outcome outcome = CrashHarness.run(dir.resolve("checkpoints"), CONFIG, CrashSchedule.at(point, 1),
        crashes -> new CrashingSink<>(sink(WITH_EMAIL), crashes), records(CONFIG.records()),
        () -> IcebergCrashMatrixTest.keys(table()));

    assertThat(outcome.failure()).isNull();
    assertThat(outcome.crashes()).isEqualTo(1);
    assertThat(outcome.audit().exact()).as(outcome.audit().toString()).isTrue();
    Table table = table();
    assertThat(columnsNamed(table, "email")).isEqualTo(1);
    assertThat(((HasTableOperations) table).operations().current().lastColumnId()).isEqualTo(3);
    for (Snapshot snapshot : table.snapshots()) {
      assertThat(table.schemas().get(snapshot.schemaId()).findField("email"))
          .as("snapshot %s adds rows with email", snapshot.snapshotId()).isNotNull();
    }
    Map<Long, Object> emails = emails();
    assertThat(emails).hasSize(300);
    List<Long> wrong = new ArrayList<>();
    emails.forEach((id, email) -> {
      if (!("e-" + id).equals(email)) {
        wrong.add(id);
      }
    });
    assertThat(wrong).as("rows without their email").isEmpty();
  }

  private static CheckpointedSource<Record> records(long count) {
    RangeSource keys = new RangeSource(count);
    return position -> {
      CheckpointedSource.SourceReader<Long> reader = keys.open(position);
      return new CheckpointedSource.SourceReader<>() {
        @Override
        public Record next() throws IOException {
          Long key = reader.next();
          return key == null ? null : row(WITH_EMAIL, key, "e-" + key);
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
}
