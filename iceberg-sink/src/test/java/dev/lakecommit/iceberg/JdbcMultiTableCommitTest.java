package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.testing.SimulatedCrash;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link JdbcMultiTableCommit} on Iceberg's JDBC catalog (SQLite here, PostgreSQL in the IT): all tables change in
 * one database transaction or none does — under a conflicting writer, a crash between two pointer swaps, and a
 * missing table — and every attempt that did not publish leaves no metadata file behind.
 */
class JdbcMultiTableCommitTest {
  private static final Schema SCHEMA = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
  private static final Namespace DB = Namespace.of("cut");
  private static final List<TableIdentifier> TABLES = List.of(TableIdentifier.of(DB, "credits"),
      TableIdentifier.of(DB, "debits"), TableIdentifier.of(DB, "orders"));

  @TempDir Path dir;
  private final List<AutoCloseable> servers = new ArrayList<>();

  static Stream<String> catalogs() {
    return Stream.of("jdbc-sqlite");
  }

  @AfterEach
  void closeServers() throws Exception {
    for (AutoCloseable server : servers) {
      server.close();
    }
  }

  private CatalogFixture fixture(String name) {
    CatalogFixture fixture = CatalogFixture.named(name, dir, servers);
    Catalog catalog = fixture.newCatalog();
    for (TableIdentifier table : TABLES) {
      catalog.createTable(table, SCHEMA, PartitionSpec.unpartitioned());
    }
    return fixture;
  }

  private static JdbcMultiTableCommit committer(CatalogFixture fixture, Catalog catalog) {
    FileIO io = ((org.apache.iceberg.HasTableOperations) catalog.loadTable(TABLES.get(0))).operations().io();
    return JdbcMultiTableCommit.of(fixture.name(), fixture.properties(), io, 3);
  }

  /** Checkpoint {@code checkpoint} of a job: one file of {@code rows} rows per table, and the job's watermark. */
  private static Map<TableIdentifier, MultiTableCommit.TableChange> checkpoint(long checkpoint, long rows) {
    Map<TableIdentifier, MultiTableCommit.TableChange> changes = new LinkedHashMap<>();
    for (TableIdentifier table : TABLES) {
      changes.put(table, transaction -> {
        transaction.newFastAppend().appendFile(file(table, checkpoint, rows)).commit();
        transaction.updateProperties().set("lakecommit.committed.job", Long.toString(checkpoint)).commit();
      });
    }
    return changes;
  }

  private static DataFile file(TableIdentifier table, long checkpoint, long rows) {
    return DataFiles.builder(PartitionSpec.unpartitioned())
        .withPath("/data/" + table.name() + "/ckpt-" + checkpoint + "-" + System.nanoTime() + ".parquet")
        .withFileSizeInBytes(1_000).withRecordCount(rows).withFormat(FileFormat.PARQUET).build();
  }

  /** Every table's pointer, read in one query: what a reader of the catalog sees at one moment. */
  private static Map<String, String> pointers(CatalogFixture fixture) throws SQLException {
    Properties connection = new Properties();
    fixture.properties().forEach((key, value) -> {
      if (key.startsWith("jdbc.")) {
        connection.put(key.substring("jdbc.".length()), value);
      }
    });
    Map<String, String> pointers = new HashMap<>();
    try (Connection db = DriverManager.getConnection(fixture.properties().get("uri"), connection);
        Statement select = db.createStatement();
        ResultSet rows = select.executeQuery("SELECT table_name, metadata_location FROM iceberg_tables")) {
      while (rows.next()) {
        pointers.put(rows.getString(1), rows.getString(2));
      }
    }
    return pointers;
  }

  private static long rows(Table table) {
    Snapshot current = table.currentSnapshot();
    return current == null ? 0 : Long.parseLong(current.summary().get("total-records"));
  }

  private static long metadataFiles(Table table) throws Exception {
    Path metadata = Path.of(java.net.URI.create(table.location() + "/metadata"));
    try (Stream<Path> files = Files.list(metadata)) {
      return files.filter(path -> path.toString().endsWith(".metadata.json")).count();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void everyTableShowsItsChangeAtOnce(String name) throws Exception {
    CatalogFixture fixture = fixture(name);
    Catalog catalog = fixture.newCatalog();

    MultiTableCommit.Result result = committer(fixture, catalog).commit(checkpoint(1, 10));

    assertThat(result.attempts()).isEqualTo(1);
    Map<String, String> pointers = pointers(fixture);
    for (TableIdentifier id : TABLES) {
      Table table = catalog.loadTable(id);
      assertThat(rows(table)).as("%s", id).isEqualTo(10);
      assertThat(table.properties()).containsEntry("lakecommit.committed.job", "1");
      assertThat(pointers.get(id.name())).isEqualTo(result.metadataLocations().get(id));
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void manyTablesWhoseMetadataIsWrittenOnSeveralThreadsShowTheirChangesAtOnce(String name) throws Exception {
    CatalogFixture fixture = fixture(name);
    Catalog catalog = fixture.newCatalog();
    Map<TableIdentifier, MultiTableCommit.TableChange> changes = new LinkedHashMap<>();
    List<TableIdentifier> many = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      TableIdentifier table = TableIdentifier.of(DB, "t" + i);
      catalog.createTable(table, SCHEMA, PartitionSpec.unpartitioned());
      many.add(table);
      long rows = i + 1;
      changes.put(table, transaction -> transaction.newFastAppend().appendFile(file(table, 1, rows)).commit());
    }

    MultiTableCommit.Result result = committer(fixture, catalog).commit(changes);

    Map<String, String> pointers = pointers(fixture);
    for (int i = 0; i < many.size(); i++) {
      Table table = catalog.loadTable(many.get(i));
      assertThat(rows(table)).as("%s", many.get(i)).isEqualTo(i + 1);
      assertThat(pointers.get(many.get(i).name())).isEqualTo(result.metadataLocations().get(many.get(i)));
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aConflictingWriterRollsBackEveryTableAndTheNextAttemptAppliesOnce(String name) throws Exception {
    CatalogFixture fixture = fixture(name);
    Catalog catalog = fixture.newCatalog();
    Catalog other = fixture.newCatalog();
    AtomicInteger swapped = new AtomicInteger();
    JdbcMultiTableCommit committer = committer(fixture, catalog).hook(new JdbcMultiTableCommit.SwapHook() {
      @Override
      public void beforeSwap(int attempt) {
        if (attempt == 1) {
          // Another writer commits to the second table after this commit read it: the first table's swap is made
          // in the database transaction, the second's finds its pointer moved, and the transaction rolls back.
          other.loadTable(TABLES.get(1)).newFastAppend().appendFile(file(TABLES.get(1), 99, 7)).commit();
        }
      }

      @Override
      public void swapped(TableIdentifier table, int count) {
        swapped.incrementAndGet();
      }
    });

    MultiTableCommit.Result result = committer.commit(checkpoint(1, 10));

    assertThat(result.attempts()).as("the conflict was met").isEqualTo(2);
    assertThat(swapped).as("1 swap of attempt 1, 3 of attempt 2").hasValue(4);
    for (TableIdentifier id : TABLES) {
      Table table = catalog.loadTable(id);
      long expected = id.equals(TABLES.get(1)) ? 17 : 10;
      assertThat(rows(table)).as("%s: the checkpoint once", id).isEqualTo(expected);
      assertThat(table.snapshots()).as("%s", id).hasSize(id.equals(TABLES.get(1)) ? 2 : 1);
      // The initial metadata, the other writer's (second table), and this commit's: attempt 1's are deleted.
      assertThat(metadataFiles(table)).as("%s", id).isEqualTo(id.equals(TABLES.get(1)) ? 3 : 2);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aCrashBetweenTwoPointerSwapsChangesNoTable(String name) throws Exception {
    CatalogFixture fixture = fixture(name);
    Catalog catalog = fixture.newCatalog();
    for (int crashAfter = 1; crashAfter < TABLES.size(); crashAfter++) {
      Map<String, String> before = pointers(fixture);
      int at = crashAfter;
      JdbcMultiTableCommit dying = committer(fixture, catalog).hook(new JdbcMultiTableCommit.SwapHook() {
        @Override
        public void swapped(TableIdentifier table, int count) {
          if (count == at) {
            throw new SimulatedCrash("jdbc-swapped-" + count, 1);
          }
        }
      });
      assertThatThrownBy(() -> dying.commit(checkpoint(1, 10))).isInstanceOf(SimulatedCrash.class);
      assertThat(pointers(fixture)).as("after %d of %d swaps", at, TABLES.size()).isEqualTo(before);
    }
    committer(fixture, catalog).commit(checkpoint(1, 10));
    for (TableIdentifier id : TABLES) {
      assertThat(rows(catalog.loadTable(id))).as("%s", id).isEqualTo(10);
      assertThat(catalog.loadTable(id).snapshots()).hasSize(1);
    }
  }

  /** The switch that makes each swap its own transaction: the same crash leaves a torn state, which the test sees. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void withoutTheOneTransactionTheSameCrashLeavesTheTablesAtDifferentCheckpoints(String name) throws Exception {
    CatalogFixture fixture = fixture(name);
    Catalog catalog = fixture.newCatalog();
    Map<String, String> before = pointers(fixture);
    JdbcMultiTableCommit torn = committer(fixture, catalog).oneTransaction(false)
        .hook(new JdbcMultiTableCommit.SwapHook() {
          @Override
          public void swapped(TableIdentifier table, int count) {
            if (count == 1) {
              throw new SimulatedCrash("jdbc-swapped-1", 1);
            }
          }
        });
    assertThatThrownBy(() -> torn.commit(checkpoint(1, 10))).isInstanceOf(SimulatedCrash.class);

    Map<String, String> after = pointers(fixture);
    assertThat(after.get(TABLES.get(0).name())).isNotEqualTo(before.get(TABLES.get(0).name()));
    assertThat(after.get(TABLES.get(1).name())).isEqualTo(before.get(TABLES.get(1).name()));
    assertThat(rows(catalog.loadTable(TABLES.get(0)))).isEqualTo(10);
    assertThat(rows(catalog.loadTable(TABLES.get(1)))).isZero();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aMissingTableFailsTheCommitWithNothingVisible(String name) throws Exception {
    CatalogFixture fixture = fixture(name);
    Catalog catalog = fixture.newCatalog();
    Map<TableIdentifier, MultiTableCommit.TableChange> changes = new LinkedHashMap<>(checkpoint(1, 10));
    TableIdentifier missing = TableIdentifier.of(DB, "dropped");
    changes.put(missing, transaction -> transaction.updateProperties().set("k", "v").commit());
    Map<String, String> before = pointers(fixture);

    assertThatThrownBy(() -> committer(fixture, catalog).commit(changes)).isInstanceOf(NoSuchTableException.class)
        .hasMessageContaining("cut.dropped");
    assertThat(pointers(fixture)).isEqualTo(before);
    for (TableIdentifier id : TABLES) {
      assertThat(metadataFiles(catalog.loadTable(id))).as("%s", id).isEqualTo(1);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogs")
  void aWriterThatKeepsWinningExhaustsTheAttemptsWithNothingVisible(String name) throws Exception {
    CatalogFixture fixture = fixture(name);
    Catalog catalog = fixture.newCatalog();
    Catalog other = fixture.newCatalog();
    JdbcMultiTableCommit committer = committer(fixture, catalog).hook(new JdbcMultiTableCommit.SwapHook() {
      @Override
      public void beforeSwap(int attempt) {
        other.loadTable(TABLES.get(2)).newFastAppend().appendFile(file(TABLES.get(2), 99, 1)).commit();
      }
    });

    assertThatThrownBy(() -> committer.commit(checkpoint(1, 10))).isInstanceOf(CommitFailedException.class)
        .hasMessageContaining("3 attempts").hasMessageContaining("nothing of this commit is visible");
    assertThat(rows(catalog.loadTable(TABLES.get(0)))).isZero();
    assertThat(rows(catalog.loadTable(TABLES.get(1)))).isZero();
    assertThat(rows(catalog.loadTable(TABLES.get(2)))).as("the other writer's three rows").isEqualTo(3);
  }
}
