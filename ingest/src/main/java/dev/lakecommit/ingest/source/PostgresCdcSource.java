package dev.lakecommit.ingest.source;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.lakecommit.core.runtime.CheckpointedSource;
import dev.lakecommit.core.runtime.JobListener;
import dev.lakecommit.iceberg.DeletedRecord;
import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.debezium.engine.spi.OffsetCommitPolicy;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.iceberg.data.Record;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.OffsetBackingStore;
import org.apache.kafka.connect.util.Callback;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The changes of a PostgreSQL database, read directly through Debezium's embedded engine and its PostgreSQL
 * connector (logical replication with {@code pgoutput}): first a snapshot of the captured tables, then their changes
 * as they commit. Each record is a row of a captured table ({@link SourceTableRow}), a delete a {@link
 * DeletedRecord} of its key.
 *
 * <p>Exactly once, with the source position in the table:
 * <ul>
 *   <li>The reader's position is Debezium's offset of the last event read (the LSN of the change and of its
 *       transaction's commit). It is stored with every checkpoint and set in the table with its commit; a job that
 *       starts again hands the engine that offset, and the engine resumes just after it. The engine keeps no offsets
 *       of its own (a file that could disagree with the table).
 *   <li>The replication slot is told that the server may drop the log up to a position only once the table holds
 *       that position ({@link #onCheckpointComplete}): a restart always finds the changes after the table's position
 *       in the slot. A job that finds its slot gone (or its log removed) stops, naming the slot.
 *   <li>A checkpoint never ends inside a source transaction (Debezium's transaction metadata) or inside the snapshot:
 *       every commit, and every cut of several tables, shows the database as it was after one of its transactions.
 * </ul>
 */
public final class PostgresCdcSource implements CheckpointedSource<Record>, JobListener {
  private static final Logger LOG = LoggerFactory.getLogger(PostgresCdcSource.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  /** The engine's setting that carries the offset a run starts from to {@link TableOffsets}. */
  static final String START_OFFSET = "lakecommit.start-offset";
  private static final String TOPIC_PREFIX = "lakecommit";
  /**
   * Settings the source owns, a user's {@code -E} of one of them refused: they name the input and the offsets, or
   * the source's guarantees and its reading of the events depend on them.
   */
  private static final Set<String> OWN = Set.of("name", "connector.class", "offset.storage", "topic.prefix",
      "provide.transaction.metadata", "slot.name", "publication.name", "table.include.list", "database.dbname",
      "database.hostname", "database.port", "database.user", "errors.max.retries", "slot.drop.on.stop",
      "flush.lsn.source", "lsn.flush.mode", "tombstones.on.delete", "skipped.operations", "decimal.handling.mode",
      "time.precision.mode", "interval.handling.mode", "hstore.handling.mode", "binary.handling.mode",
      "unavailable.value.placeholder", "message.prefix.exclude.list", "message.prefix.include.list",
      "transforms", "predicates", START_OFFSET);
  /** The snapshot modes a user may choose: a snapshot first (the default), or none. */
  private static final Set<String> SNAPSHOT_MODES = Set.of("initial", "no_data");
  /** What Debezium sends for a large value an update left unchanged, when the table does not log it. */
  private static final String UNAVAILABLE = "__lakecommit_unavailable_value";

  private final PostgresInput input;
  private final String password;
  private final String jobId;
  private final Map<String, String> properties;
  private final Map<String, PostgresTables.SourceTable> tables;
  private final int bufferEvents;
  private volatile Reader reader;
  /** A stop asked for ({@link #requestStop}): the reader ends at the next transaction boundary. */
  private volatile boolean stopRequested;
  /** Unsafe, for tests: confirms every event to the slot as it is read, before the table holds it. */
  private boolean unsafeConfirmOnRead;
  /** The engine event at each persisted checkpoint's position, by checkpoint id. */
  private final ConcurrentSkipListMap<Long, Object> persisted = new ConcurrentSkipListMap<>();

  /**
   * @param properties Debezium settings ({@code -E}) added to the source's own
   * @param tables the captured tables by their {@code source.table} name
   * @param bufferEvents events read ahead of the job at most
   * @throws IllegalArgumentException naming a setting of {@code properties} that the source owns
   */
  public PostgresCdcSource(PostgresInput input, String password, String jobId, Map<String, String> properties,
      Map<String, PostgresTables.SourceTable> tables, int bufferEvents) {
    for (String key : properties.keySet()) {
      if (OWN.contains(key) || key.startsWith("transforms.") || key.startsWith("offset.")) {
        throw new IllegalArgumentException("Invalid option -E " + key + ": set by the tool (tables, slot and "
            + "publication go in the input: ?tables=...&slot=...&publication=...)");
      }
    }
    String mode = properties.get("snapshot.mode");
    if (mode != null && !SNAPSHOT_MODES.contains(mode)) {
      throw new IllegalArgumentException("Invalid option -E snapshot.mode=" + mode + ": initial (a snapshot, then the"
          + " changes; the default) or no_data (the changes only)");
    }
    this.input = input;
    this.password = password;
    this.jobId = jobId;
    this.properties = Map.copyOf(properties);
    this.tables = Map.copyOf(tables);
    this.bufferEvents = bufferEvents;
  }

  @Override
  public SourceReader<Record> open(byte[] position) throws IOException {
    String slot = input.slotFor(jobId);
    PostgresTables.Slot state = PostgresTables.slot(input, password, slot);
    if (state.active()) {
      throw new IOException("Replication slot " + slot + " of " + input + " is in use by another process: is job "
          + jobId + " running elsewhere? (Each job reads through a slot of its own; give another with ?slot=NAME.)");
    }
    if (position == null && state.exists()) {
      if (input.slot() != null) {
        throw new IOException("Replication slot " + slot + " of " + input + " exists, and job " + jobId + " has no "
            + "checkpoint to read it from: drop it (SELECT pg_drop_replication_slot('" + slot + "')) if it is no "
            + "other reader's, or name another with ?slot=NAME");
      }
      // the job's own slot of an earlier start that committed nothing: its place in the log is not the job's; the
      // snapshot that follows starts from a new one
      LOG.info("Dropping replication slot {} of an earlier start of job {}, which committed nothing", slot, jobId);
      PostgresTables.dropSlot(input, password, slot);
    }
    if (position != null) {
      List<String> captured = capturedTables(position);
      if (!captured.equals(input.tables())) {
        throw new IOException("Job " + jobId + " captured the tables " + captured + ", and the input names "
            + input.tables() + ": a table added later would lack the rows it had before. Capture other tables with"
            + " a job of their own (another --job-id), or start this one afresh into new tables.");
      }
    }
    if (position != null && !state.exists()) {
      throw new IOException("Replication slot " + slot + " of " + input + " is gone: the changes after the table's "
          + "position (" + commitPosition(position) + ") cannot be read any more. Start job " + jobId + " afresh into"
          + " new tables, or with another --job-id, to take a new snapshot.");
    }
    if (position != null && "lost".equals(state.walStatus())) {
      throw new IOException("Replication slot " + slot + " of " + input + " lost the log after "
          + state.confirmedFlushLsn() + " (max_slot_wal_keep_size): the changes after the table's position cannot"
          + " be read any more. Start job " + jobId + " afresh into new tables, or with another --job-id.");
    }
    Reader opened = new Reader(position);
    opened.start(engineProperties(slot, position));
    reader = opened;
    return opened;
  }

  private Properties engineProperties(String slot, byte[] position) {
    Properties settings = new Properties();
    settings.setProperty("name", "lakecommit-" + jobId);
    settings.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
    settings.setProperty("offset.storage", TableOffsets.class.getName());
    settings.setProperty("offset.flush.timeout.ms", "60000");
    if (position != null) {
      settings.setProperty(START_OFFSET, new String(position, StandardCharsets.UTF_8));
    }
    settings.setProperty("topic.prefix", TOPIC_PREFIX);
    settings.setProperty("database.hostname", input.host());
    settings.setProperty("database.port", Integer.toString(input.port()));
    settings.setProperty("database.user", input.user());
    if (password != null) {
      settings.setProperty("database.password", password);
    }
    settings.setProperty("database.dbname", input.database());
    settings.setProperty("plugin.name", "pgoutput");
    settings.setProperty("slot.name", slot);
    settings.setProperty("publication.name", input.publicationFor(jobId));
    settings.setProperty("publication.autocreate.mode", "filtered");
    settings.setProperty("table.include.list", String.join(",", input.tables().stream().map(Pattern::quote)
        .toList()));
    settings.setProperty("snapshot.mode", "initial");
    settings.setProperty("provide.transaction.metadata", "true");
    settings.setProperty("tombstones.on.delete", "false");
    // Debezium's default, said here: a truncate of a source table is not sent (it is not applied to the lake table)
    settings.setProperty("skipped.operations", "t");
    // logical decoding messages (pg_logical_emit_message) are not row changes
    settings.setProperty("message.prefix.exclude.list", ".*");
    settings.setProperty("unavailable.value.placeholder", UNAVAILABLE);
    settings.setProperty("decimal.handling.mode", "precise");
    settings.setProperty("time.precision.mode", "adaptive_time_microseconds");
    settings.setProperty("interval.handling.mode", "string");
    settings.setProperty("hstore.handling.mode", "json");
    settings.setProperty("binary.handling.mode", "bytes");
    // A lost connection ends the run (the job stops, naming the cause): a restart resumes from the table's position.
    // The engine's own restarts would replay from its committed offsets into the checkpoint being read.
    settings.setProperty("errors.max.retries", "0");
    properties.forEach(settings::setProperty);
    return settings;
  }

  /**
   * Unsafe, for tests only: confirms each event to the replication slot as soon as it is read, as a source that
   * keeps its offsets apart from the table would; a restart then misses the changes read but not committed.
   */
  PostgresCdcSource unsafeConfirmOnRead(boolean enabled) {
    this.unsafeConfirmOnRead = enabled;
    return this;
  }

  @Override
  public String commitPosition(byte[] position) {
    return position == null ? null : new String(position, StandardCharsets.UTF_8);
  }

  @Override
  public void onCheckpointPersisted(long checkpointId) {
    Reader current = reader;
    Object event = current == null ? null : current.eventAtPosition;
    if (event != null) {
      persisted.put(checkpointId, event);
    }
  }

  /** The table holds the checkpoint's position: the slot may let go of the log up to it. */
  @Override
  public void onCheckpointComplete(long checkpointId, long recordCount) {
    Map.Entry<Long, Object> entry = persisted.floorEntry(checkpointId);
    persisted.headMap(checkpointId, true).clear();
    Reader current = reader;
    if (entry != null && current != null) {
      current.acknowledge(entry.getValue());
    }
  }

  /** Ends an unbounded read at the next transaction boundary: the reader then ends, and the job commits. */
  public void requestStop() {
    stopRequested = true;
  }

  /** The source tables a position was taken over. */
  private static List<String> capturedTables(byte[] position) throws IOException {
    Object tables = JSON.readValue(position, new TypeReference<Map<String, Object>>() {}).get("tables");
    List<String> names = new ArrayList<>();
    if (tables instanceof List<?> list) {
      list.forEach(table -> names.add(table.toString()));
    }
    return names;
  }

  private final class Reader implements SourceReader<Record> {
    private final BlockingQueue<Object> events = new ArrayBlockingQueue<>(bufferEvents);
    private final Object endOfEvents = new Object();
    private DebeziumEngine<RecordChangeEvent<SourceRecord>> engine;
    private Thread engineThread;
    private volatile DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer;
    private volatile String failure;
    private volatile Throwable failureCause;
    /** The engine ended (its completion callback ran): once the queue is empty, the read ends. */
    private volatile boolean engineEnded;
    private volatile boolean closed;
    private byte[] position;
    private Object lastEvent;
    /** The engine event at the last position handed out. */
    private volatile Object eventAtPosition;
    private boolean inTransaction;
    private boolean inSnapshot;
    private boolean ended;

    Reader(byte[] position) {
      this.position = position;
    }

    void start(Properties settings) {
      engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
          .using(settings)
          .using(OffsetCommitPolicy.always())
          .using((success, message, error) -> {
            if (!success && !closed) {
              failure = message;
              failureCause = error;
            }
            engineEnded = true;
            events.offer(endOfEvents); // wakes a waiting poll; with the queue full, engineEnded tells
          })
          .notifying((records, committer) -> {
            this.committer = committer;
            for (RecordChangeEvent<SourceRecord> record : records) {
              while (!closed && !events.offer(record, 100, TimeUnit.MILLISECONDS)) {
                // the job reads slower than the source changes: the engine waits here
              }
            }
          })
          .build();
      engineThread = new Thread(engine, "lakecommit-debezium-" + jobId);
      engineThread.setDaemon(true);
      engineThread.start();
    }

    @Override
    public Record next() throws IOException {
      try {
        Record record;
        do {
          record = poll(Duration.ofSeconds(1));
        } while (record == null && !ended());
        return record;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("Interrupted while reading " + input, e);
      }
    }

    @Override
    public Record poll(Duration maxWait) throws IOException, InterruptedException {
      long deadline = System.nanoTime() + maxWait.toNanos();
      while (!ended) {
        if (stopRequested && atBoundary()) {
          ended = true;
          break;
        }
        Object event = events.poll(Math.max(0, Math.min(deadline - System.nanoTime(),
            TimeUnit.MILLISECONDS.toNanos(500))), TimeUnit.NANOSECONDS);
        if (event == null && engineEnded && events.isEmpty()) {
          event = endOfEvents;
        }
        if (event == null) {
          if (System.nanoTime() - deadline >= 0) {
            return null;
          }
          continue;
        }
        if (event == endOfEvents) {
          ended = true;
          if (failure != null || failureCause != null) {
            throw new IOException("Reading the changes of " + input + " failed: " + (failure != null ? failure
                : failureCause.toString()), failureCause);
          }
          if (!atBoundary()) {
            throw new IOException("Reading the changes of " + input + " ended inside a source transaction: nothing "
                + "of it is committed; run again to resume");
          }
          break;
        }
        @SuppressWarnings("unchecked")
        SourceRecord change = ((RecordChangeEvent<SourceRecord>) event).record();
        lastEvent = event;
        position = position(change);
        if (unsafeConfirmOnRead) {
          acknowledge(event);
        }
        boolean inside = inTransaction;
        Record record = record(change);
        if (record != null) {
          return record;
        }
        if (inside && !inTransaction) {
          // a transaction's end: returns at once, so that a checkpoint that waits for a boundary can be taken here
          // even while the next transaction's changes are already queued
          return null;
        }
      }
      return null;
    }

    /** A row of a change event; null for events that change no row (transaction markers, heartbeats). */
    private Record record(SourceRecord change) throws IOException {
      if (!(change.value() instanceof Struct value)) {
        return null;
      }
      String valueName = value.schema().name();
      if (valueName != null && valueName.endsWith("TransactionMetadataValue")) {
        inTransaction = "BEGIN".equals(value.getString("status"));
        return null;
      }
      if (value.schema().field("op") == null || "m".equals(value.getString("op"))) {
        return null; // a heartbeat, or a logical decoding message (not a row change)
      }
      Struct source = value.getStruct("source");
      String snapshot = source.schema().field("snapshot") == null ? null : source.getString("snapshot");
      inSnapshot = snapshot != null && !snapshot.equals("false") && !snapshot.equals("last")
          && !snapshot.equals("incremental");
      String tableName = source.getString("table");
      String where = input.database() + "." + source.getString("schema") + "." + tableName + " at LSN "
          + source.get("lsn");
      PostgresTables.SourceTable table = tables.get(tableName);
      if (table == null) {
        throw new IOException("A change of table " + tableName + " of " + input + ", which the job does not capture ("
            + where + ")");
      }
      String op = value.getString("op");
      Struct row = switch (op) {
        case "c", "r", "u" -> value.getStruct("after");
        case "d" -> value.getStruct("before");
        default -> throw BadRecordException.record(where, 0, false, "op", "a change with op '" + op + "' (a "
            + "truncate of the source table is not applied to the lake table)", String.valueOf(value));
      };
      unavailableValues(row, tableName, where);
      Record converted;
      try {
        converted = ConnectValues.record(table.schema().asStruct(), row, true);
      } catch (ConnectValues.UnknownColumn e) {
        throw new KafkaSource.ColumnNotInSchemaException(e.column, e.type, tableName, where);
      } catch (Values.ValueException e) {
        throw BadRecordException.record(where, 0, false, e.field(), e.getMessage(), String.valueOf(row));
      }
      Record record = new SourceTableRow(tableName, converted);
      return op.equals("d") ? new DeletedRecord(record) : record;
    }

    /**
     * Refuses a row with a large value an update left unchanged: PostgreSQL logs such a value only with the table's
     * {@code REPLICA IDENTITY FULL}; without it, the row's upsert would overwrite the value in the lake.
     */
    private void unavailableValues(Struct row, String table, String where) {
      for (org.apache.kafka.connect.data.Field field : row.schema().fields()) {
        Object value = row.get(field);
        if (UNAVAILABLE.equals(value) || value instanceof byte[] bytes
            && java.util.Arrays.equals(bytes, UNAVAILABLE.getBytes(StandardCharsets.UTF_8))) {
          throw BadRecordException.record(where, 0, false, field.name(), "PostgreSQL did not send column "
              + field.name() + " of table " + table + ", a large value the update left unchanged: give the table "
              + "REPLICA IDENTITY FULL (ALTER TABLE ... REPLICA IDENTITY FULL) so that its changes carry whole rows",
              "");
        }
      }
    }

    private byte[] position(SourceRecord change) throws IOException {
      Map<String, Object> at = new LinkedHashMap<>();
      at.put("partition", change.sourcePartition());
      at.put("offset", change.sourceOffset());
      at.put("tables", input.tables());
      return JSON.writeValueAsBytes(at);
    }

    @Override
    public boolean ended() {
      return ended;
    }

    @Override
    public boolean atBoundary() {
      return !inTransaction && !inSnapshot;
    }

    @Override
    public byte[] position() {
      eventAtPosition = lastEvent;
      return position;
    }

    /** Tells the engine that {@code event} and the events before it are in the table. */
    void acknowledge(Object event) {
      DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> commits = committer;
      if (commits == null || closed) {
        return;
      }
      @SuppressWarnings("unchecked")
      RecordChangeEvent<SourceRecord> change = (RecordChangeEvent<SourceRecord>) event;
      try {
        synchronized (this) {
          commits.markProcessed(change);
          commits.markBatchFinished();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException e) {
        // the slot keeps more of the log until the next checkpoint's acknowledgement; the table is not affected
        LOG.warn("Could not confirm the position of the table to replication slot {}: {}", input.slotFor(jobId),
            e.toString());
      }
    }

    @Override
    public void close() throws IOException {
      closed = true;
      events.clear();
      if (engine != null) {
        // the engine refuses to close while its connector starts (it may wait for the slot's creation): try again
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
          try {
            engine.close();
            break;
          } catch (IllegalStateException notNow) {
            if (engineEnded || System.nanoTime() - deadline > 0) {
              break;
            }
            try {
              engineThread.join(100);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              break;
            }
          }
        }
      }
      if (engineThread != null) {
        try {
          engineThread.join(TimeUnit.SECONDS.toMillis(30));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  /**
   * The engine's offset storage: holds the offset the run starts from (the table's) and what the engine writes
   * while it runs, nothing across runs. Debezium's PostgreSQL connector confirms to the replication slot the offsets
   * of the events marked processed, and only events the table holds are ({@link #onCheckpointComplete}).
   */
  public static final class TableOffsets implements OffsetBackingStore {
    private final Map<ByteBuffer, ByteBuffer> offsets = new ConcurrentHashMap<>();

    @Override
    public void configure(WorkerConfig config) {
      Object start = config.originals().get(START_OFFSET);
      Object name = config.originals().get("name");
      if (start == null) {
        return;
      }
      try {
        Map<String, Object> at = JSON.readValue(start.toString(), new TypeReference<Map<String, Object>>() {});
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of("schemas.enable", "false", "converter.type", "key"));
        List<Object> key = new ArrayList<>();
        key.add(name.toString());
        key.add(at.get("partition"));
        offsets.put(ByteBuffer.wrap(converter.fromConnectData("", null, key)),
            ByteBuffer.wrap(converter.fromConnectData("", null, at.get("offset"))));
      } catch (IOException e) {
        throw new IllegalStateException("Unreadable source position in the job's checkpoint: " + start, e);
      }
    }

    @Override
    public void start() {}

    @Override
    public void stop() {}

    @Override
    public Future<Map<ByteBuffer, ByteBuffer>> get(Collection<ByteBuffer> keys) {
      Map<ByteBuffer, ByteBuffer> found = new HashMap<>();
      for (ByteBuffer key : keys) {
        found.put(key, offsets.get(key));
      }
      return CompletableFuture.completedFuture(found);
    }

    @Override
    public Future<Void> set(Map<ByteBuffer, ByteBuffer> values, Callback<Void> callback) {
      offsets.putAll(values);
      if (callback != null) {
        callback.onCompletion(null, null);
      }
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public Set<Map<String, Object>> connectorPartitions(String connectorName) {
      return Set.of();
    }
  }
}
