package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.hive.testing.EmbeddedPostgres;
import dev.lakecommit.iceberg.DeletedRecord;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The PostgreSQL change source against a real server: a reader opened at a position a checkpoint took reads exactly
 * the changes after it, also those a crashed reader had read past it, because the replication slot is told of a
 * position only once the table holds it. The same with every event confirmed as it is read (the unsafe switch, as a
 * source with offsets of its own would do) loses the changes read after the checkpoint: the test sees it.
 */
class PostgresCdcSourceIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private EmbeddedPostgres pg;
  private String url;

  @BeforeEach
  void startPostgres() throws SQLException {
    pg = EmbeddedPostgres.startLogical();
    url = pg.createDatabase("stock");
    execute("CREATE TABLE items (id bigint PRIMARY KEY, qty int NOT NULL, note text)",
        "ALTER TABLE items REPLICA IDENTITY FULL",
        "INSERT INTO items SELECT i, 10, 'item ' || i FROM generate_series(1, 10) i");
  }

  @AfterEach
  void stopPostgres() {
    pg.close();
  }

  /**
   * A table with columns PostgreSQL may leave out of an update's change (large values stored out of line) is refused
   * unless it logs whole rows: its upserts would overwrite those values in the lake.
   */
  @org.junit.jupiter.api.Test
  void aTableThatDoesNotLogWholeRowsIsRefusedNamingItsColumns() throws Exception {
    execute("CREATE TABLE notes (id int PRIMARY KEY, body text, n int)");
    PostgresInput input = PostgresInput.parse("postgresql://" + pg.user() + "@127.0.0.1:" + pg.port()
        + "/stock?tables=public.items,public.notes");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> PostgresTables.describe(input, pg.password()))
        .hasMessageContaining("table public.notes has columns").hasMessageContaining("(body)")
        .hasMessageContaining("ALTER TABLE public.notes REPLICA IDENTITY FULL");
    execute("ALTER TABLE notes REPLICA IDENTITY FULL");
    assertThat(PostgresTables.describe(input, pg.password())).containsOnlyKeys("items", "notes");
  }

  @ParameterizedTest(name = "confirm on read: {0}")
  @ValueSource(booleans = {false, true})
  void aRestartReadsExactlyTheChangesAfterTheCheckpointsPosition(boolean unsafeConfirmOnRead) throws Exception {
    PostgresInput input = PostgresInput.parse("postgresql://" + pg.user() + "@127.0.0.1:" + pg.port()
        + "/stock?tables=public.items");
    PostgresCdcSource source = new PostgresCdcSource(input, pg.password(), "items-job", Map.of(),
        PostgresTables.describe(input, pg.password()), 100).unsafeConfirmOnRead(unsafeConfirmOnRead);
    byte[] checkpoint;
    List<String> afterCheckpoint = new ArrayList<>();
    try (CheckpointedSource.SourceReader<Record> reader = source.open(null)) {
      assertThat(read(reader, 10)).as("the snapshot").hasSize(10).allMatch(change -> change.startsWith("upsert"));
      // four transactions of two changes each (an update and a delete or an insert)
      for (int t = 1; t <= 4; t++) {
        execute("UPDATE items SET qty = qty - " + t + " WHERE id = " + t,
            t % 2 == 0 ? "DELETE FROM items WHERE id = " + (10 - t) : "INSERT INTO items VALUES (" + (100 + t)
                + ", " + t + ", NULL)");
      }
      List<String> first = read(reader, 3);
      assertThat(reader.atBoundary()).as("inside the second transaction after 3 changes").isFalse();
      first.addAll(read(reader, 1));
      // the transaction's end, which the reader returns at (with no record) before the next one's changes
      assertThat(reader.poll(Duration.ofSeconds(30))).as("the end of the second transaction").isNull();
      assertThat(reader.atBoundary()).as("after the second transaction").isTrue();
      checkpoint = reader.position();
      source.onCheckpointPersisted(1);
      source.onCheckpointComplete(1, 4);
      afterCheckpoint.addAll(read(reader, 4));
      byte[] end = reader.position();
      // the slot has confirmed what it was told: the checkpoint's position, or (unsafe) everything read
      long told = lsn(unsafeConfirmOnRead ? end : checkpoint);
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (confirmedLsn() < told && System.nanoTime() < deadline) {
        reader.poll(Duration.ofMillis(200)); // polls the slot's state; no changes come
      }
      assertThat(confirmedLsn()).as("the slot's confirmed position").isGreaterThanOrEqualTo(told);
    } // a crash after reading past the checkpoint: the reader goes without a checkpoint of what it read since

    execute("INSERT INTO items VALUES (999, 0, 'after the crash')");
    List<String> resumed = new ArrayList<>();
    try (CheckpointedSource.SourceReader<Record> reader = source.open(checkpoint)) {
      do {
        resumed.addAll(read(reader, 1));
      } while (!resumed.get(resumed.size() - 1).contains("id=999"));
    }
    if (unsafeConfirmOnRead) {
      assertThat(resumed).as("confirmed on read: the changes read after the checkpoint are lost")
          .hasSize(1);
    } else {
      assertThat(resumed.subList(0, resumed.size() - 1)).as("the changes after the checkpoint, once")
          .isEqualTo(afterCheckpoint);
    }
  }

  /**
   * The server stopped under a reader (a restart, a failover): the read ends with an error naming the input, so that
   * the job stops without committing what it read since its last checkpoint; a reader opened at that checkpoint once
   * the server is back reads every change after it.
   */
  @org.junit.jupiter.api.Test
  void aServerRestartEndsTheReadNamingTheInputAndTheNextReaderResumesAtTheCheckpoint() throws Exception {
    PostgresInput input = PostgresInput.parse("postgresql://" + pg.user() + "@127.0.0.1:" + pg.port()
        + "/stock?tables=public.items");
    PostgresCdcSource source = new PostgresCdcSource(input, pg.password(), "restart-job", Map.of(),
        PostgresTables.describe(input, pg.password()), 100);
    byte[] checkpoint;
    try (CheckpointedSource.SourceReader<Record> reader = source.open(null)) {
      read(reader, 10);
      assertThat(reader.atBoundary()).as("after the snapshot").isTrue();
      checkpoint = reader.position();
      execute("UPDATE items SET qty = 70 WHERE id = 7");
      assertThat(read(reader, 1)).containsExactly("upsert id=7, qty=70");
      pg.stop();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      java.io.IOException failure = null;
      while (failure == null && System.nanoTime() < deadline) {
        try {
          assertThat(reader.poll(Duration.ofMillis(200))).isNull();
        } catch (java.io.IOException e) {
          failure = e;
        }
      }
      assertThat(failure).as("the read ends with an error").isNotNull();
      assertThat(failure.getMessage()).contains("Reading the changes of postgresql://" + pg.user() + "@127.0.0.1:"
          + pg.port() + "/stock");
    } finally {
      pg.start();
    }
    execute("UPDATE items SET qty = 40 WHERE id = 4");
    execute("INSERT INTO items VALUES (999, 0, 'marker')");
    List<String> resumed = new ArrayList<>();
    try (CheckpointedSource.SourceReader<Record> reader = source.open(checkpoint)) {
      do {
        resumed.addAll(read(reader, 1));
      } while (!resumed.get(resumed.size() - 1).contains("id=999"));
    }
    // the changes after the checkpoint at the snapshot's end, and no snapshot again
    assertThat(resumed).containsExactly("upsert id=7, qty=70", "upsert id=4, qty=40", "upsert id=999, qty=0");
  }

  /**
   * A second copy of a running job: its reader is refused while the first holds the job's replication slot, naming
   * the slot, so two copies never read (and commit) the same changes; once the first is gone, it reads on from the
   * checkpoint.
   */
  @org.junit.jupiter.api.Test
  void aSecondCopyOfARunningJobIsRefusedNamingTheSlot() throws Exception {
    PostgresInput input = PostgresInput.parse("postgresql://" + pg.user() + "@127.0.0.1:" + pg.port()
        + "/stock?tables=public.items");
    Map<String, PostgresTables.SourceTable> tables = PostgresTables.describe(input, pg.password());
    PostgresCdcSource first = new PostgresCdcSource(input, pg.password(), "twice-job", Map.of(), tables, 100);
    PostgresCdcSource second = new PostgresCdcSource(input, pg.password(), "twice-job", Map.of(), tables, 100);
    byte[] checkpoint;
    try (CheckpointedSource.SourceReader<Record> reader = first.open(null)) {
      read(reader, 10);
      checkpoint = reader.position();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!PostgresTables.slot(input, pg.password(), "lakecommit_twice_job").active()
          && System.nanoTime() < deadline) {
        assertThat(reader.poll(Duration.ofMillis(200))).isNull(); // until the first's stream holds the slot
      }
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> second.open(checkpoint))
          .hasMessageContaining("Replication slot lakecommit_twice_job").hasMessageContaining("in use by another");
    }
    execute("UPDATE items SET qty = 5 WHERE id = 5");
    try (CheckpointedSource.SourceReader<Record> reader = second.open(checkpoint)) {
      assertThat(read(reader, 1)).containsExactly("upsert id=5, qty=5");
    }
  }

  /**
   * A column added to a captured table, or widened, while the job reads: the reader stops at the first change that
   * has it, naming the table and the column and how to go on, rather than drop the column's values or fail on the
   * first value the column cannot hold.
   */
  @ParameterizedTest(name = "{0}")
  @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', value = {
      "ALTER TABLE items ADD COLUMN color text|UPDATE items SET color = 'red' WHERE id = 3|color|was added after",
      "ALTER TABLE items ALTER COLUMN qty TYPE bigint|UPDATE items SET qty = 5000000000 WHERE id = 3|qty|was widened"
          + " after the run started (int to long)"})
  void aColumnAddedOrWidenedWhileReadingStopsTheReaderNamingTableAndColumn(String alter, String update,
      String column, String said) throws Exception {
    PostgresInput input = PostgresInput.parse("postgresql://" + pg.user() + "@127.0.0.1:" + pg.port()
        + "/stock?tables=public.items");
    PostgresCdcSource source = new PostgresCdcSource(input, pg.password(), "columns-job", Map.of(),
        PostgresTables.describe(input, pg.password()), 100);
    try (CheckpointedSource.SourceReader<Record> reader = source.open(null)) {
      read(reader, 10);
      execute(alter, update);
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      RuntimeException failure = null;
      while (failure == null && System.nanoTime() < deadline) {
        try {
          assertThat(reader.poll(Duration.ofMillis(200))).isNull();
        } catch (KafkaSource.ColumnNotInSchemaException e) {
          failure = e;
        }
      }
      assertThat(failure).as("the reader stops at the change with the new column").isNotNull();
      assertThat(failure.getMessage()).contains("Column '" + column + "' of source table 'items'", said,
          "--add-new-columns");
    }
    assertThat(PostgresTables.describe(input, pg.password()).get("items").schema().findField(column).type())
        .as("the next run's column").isEqualTo(column.equals("qty") ? org.apache.iceberg.types.Types.LongType.get()
            : org.apache.iceberg.types.Types.StringType.get());
  }

  /** The next {@code count} changes, as "upsert id=..., qty=..." or "delete id=...". */
  private static List<String> read(CheckpointedSource.SourceReader<Record> reader, int count) throws Exception {
    List<String> changes = new ArrayList<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (changes.size() < count && System.nanoTime() < deadline) {
      Record record = reader.poll(Duration.ofMillis(200));
      if (record != null) {
        Record row = record instanceof DeletedRecord deleted ? deleted.row() : record;
        assertThat(SourceTableRow.tableOf(record)).isEqualTo("items");
        changes.add((record instanceof DeletedRecord ? "delete" : "upsert") + " id=" + row.getField("id")
            + (record instanceof DeletedRecord ? "" : ", qty=" + row.getField("qty")));
      }
    }
    assertThat(changes).as("changes read within a minute").hasSize(count);
    return changes;
  }

  private static long lsn(byte[] position) throws Exception {
    return JSON.readTree(position).get("offset").get("lsn").asLong();
  }

  private long confirmedLsn() throws SQLException {
    try (Connection connection = DriverManager.getConnection(url, pg.user(), pg.password());
        Statement statement = connection.createStatement();
        ResultSet row = statement.executeQuery("SELECT confirmed_flush_lsn FROM pg_replication_slots"
            + " WHERE slot_name = 'lakecommit_items_job'")) {
      if (!row.next() || row.getString(1) == null) {
        return -1;
      }
      String[] parts = row.getString(1).split("/");
      return (Long.parseLong(parts[0], 16) << 32) + Long.parseLong(parts[1], 16);
    }
  }

  private void execute(String... statements) throws SQLException {
    pg.execute(url, statements);
  }

}
