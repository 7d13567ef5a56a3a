package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.CrashHarness;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.CrashingSink;
import dev.lakecommit.core.testing.RangeSource;
import dev.lakecommit.core.testing.TestScale;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The crash-point matrix of the standalone runtime, against real Iceberg tables: every crash point, restart,
 * then exactly the source rows in the table, read back with Iceberg's generic reader. Each case runs with
 * synchronous commits and with pipelined ones (up to 2 persisted checkpoints waiting for their commits; 1 where
 * the idempotency check is off, which keeps the replayed crash points those of synchronous commits); pipelined on
 * one catalog in the default build, on every catalog in the long profile.
 */
class IcebergCrashMatrixTest {
  /** 300 rows, 2 writers, a checkpoint every 50 rows: 6 checkpoints, each a snapshot of real Parquet files. */
  private static final CrashHarness.Config CONFIG =
      new CrashHarness.Config(300, 2, 50, 40, false, false, dev.lakecommit.core.runtime.RestoreBehindPolicy.FAIL);

  @TempDir Path dir;

  static Stream<Arguments> pointsAndCatalogs() {
    return pointsAndCatalogs(CatalogFixture.NAMES);
  }

  static Stream<Arguments> pointsAndCatalogs(List<String> catalogs) {
    List<Arguments> cases = new ArrayList<>();
    for (int uncommitted : new int[] {0, 2}) {
      for (String catalog : catalogsFor(catalogs, uncommitted)) {
        for (String point : CrashSchedule.TARGET_POINTS) {
          int occurrence =
              point.equals(CrashSchedule.WRITE) ? 150 : point.equals(CrashSchedule.EPOCH_CLAIMED) ? 1 : 3;
          cases.add(Arguments.of(catalog, point, occurrence, uncommitted));
        }
      }
    }
    return cases.stream();
  }

  /** Every catalog synchronously; pipelined, the first one in the default build and all in the long profile. */
  static List<String> catalogsFor(List<String> catalogs, int uncommitted) {
    return uncommitted == 0 || TestScale.isLong() ? catalogs : catalogs.subList(0, 1);
  }

  static Stream<Arguments> catalogs() {
    return Stream.of(0, 2).flatMap(uncommitted -> catalogsFor(CatalogFixture.NAMES, uncommitted).stream()
        .map(catalog -> Arguments.of(catalog, uncommitted)));
  }

  private final List<AutoCloseable> servers = new ArrayList<>();

  @org.junit.jupiter.api.AfterEach
  void stopServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  private CatalogFixture fixture(String name, Path base) {
    return CatalogFixture.named(name, base, servers);
  }

  private CrashHarness.Outcome run(String catalog, Path base, CrashSchedule schedule, boolean check,
      boolean manifests, int uncommitted) throws IOException {
    CatalogFixture fixture = fixture(catalog, base);
    IcebergSinkConfig config = IcebergSinkConfig.builder()
        .catalogProperties(fixture.properties())
        .catalogName(fixture.name())
        .table("db.events")
        .createTable(TestTables.SCHEMA, List.of("bucket(2, id)"))
        .tableProperties(Map.of("format-version", "2"))
        .maxRowsPerFile(40)
        .writeManifests(manifests)
        .writerManifestMinFiles(1)
        .build();
    return CrashHarness.run(base.resolve("checkpoints"), CONFIG.withMaxUncommitted(uncommitted), schedule,
        crashes -> new CrashingSink<>(IcebergSink.forRecords(config).idempotencyCheck(check), crashes),
        records(CONFIG.records()),
        () -> keys(fixture.newCatalog().loadTable(TestTables.IDENT)));
  }

  static CheckpointedSource<Record> records(long count) {
    RangeSource keys = new RangeSource(count);
    return position -> {
      CheckpointedSource.SourceReader<Long> reader = keys.open(position);
      GenericRecord template = GenericRecord.create(TestTables.SCHEMA);
      return new CheckpointedSource.SourceReader<>() {
        @Override
        public Record next() throws IOException {
          Long key = reader.next();
          return key == null ? null : template.copy(Map.of("id", key, "payload", "row-" + key));
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

  static List<Long> keys(Table table) {
    List<Long> keys = new ArrayList<>();
    TestTables.keyCounts(table).forEach((key, count) -> {
      for (int i = 0; i < count; i++) {
        keys.add(key);
      }
    });
    return keys;
  }

  @ParameterizedTest(name = "{0}: crash at {1} #{2}, {3} uncommitted")
  @MethodSource("pointsAndCatalogs")
  void everyCrashPointEndsWithExactlyTheSourceRows(String catalog, String point, int occurrence, int uncommitted)
      throws IOException {
    CrashHarness.Outcome outcome =
        run(catalog, dir, CrashSchedule.at(point, occurrence), true, occurrence % 2 == 1, uncommitted);

    assertThat(outcome.failure()).isNull();
    assertThat(outcome.crashes()).isEqualTo(1);
    assertThat(outcome.audit().exact()).as(outcome.audit().toString()).isTrue();
  }

  @ParameterizedTest(name = "{0}, {1} uncommitted")
  @MethodSource("catalogs")
  void randomCrashSchedulesEndWithExactlyTheSourceRows(String catalog, int uncommitted) throws IOException {
    long seed = TestScale.seed();
    Random random = new Random(seed);
    int schedules = TestScale.pick(uncommitted == 0 ? 4 : 2, 100);
    for (int i = 0; i < schedules; i++) {
      CrashSchedule schedule = CrashSchedule.random(random, CONFIG.writesPerLife(), CONFIG.checkpointsPerLife());
      Path base = Files.createDirectory(dir.resolve("schedule-" + i));
      // odd schedules add files one by one, even ones append the writers' manifests
      CrashHarness.Outcome outcome = run(catalog, base, schedule, true, i % 2 == 0, uncommitted);
      String context = "seed " + seed + " (-Dlakecommit.seed=" + seed + "), schedule " + i + " " + schedule;
      assertThat(outcome.failure()).as(context).isNull();
      assertThat(outcome.audit().exact()).as(context + ": " + outcome.audit()).isTrue();
    }
  }

  @ParameterizedTest(name = "{0}, {1} uncommitted")
  @MethodSource("catalogs")
  void withoutTheIdempotencyCheckARestoreDuplicatesRows(String catalog, int uncommitted) throws IOException {
    // Files added one by one: a manifest appended twice is read once (Iceberg keys manifests by path), which
    // would hide the second commit from a row count, though not from the snapshot history.
    CrashHarness.Outcome outcome =
        run(catalog, dir, CrashSchedule.at(CrashSchedule.COMMIT_APPLIED, 2), false, false, Math.min(1, uncommitted));

    assertThat(outcome.crashes()).isEqualTo(1);
    assertThat(outcome.audit().duplicateKeys()).as(outcome.audit().toString()).isPositive();
  }
}
