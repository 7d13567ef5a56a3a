package dev.lakecommit.iceberg;

import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsDeletes;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.StagingWriter;
import dev.lakecommit.staging.StagingWriterState;
import dev.lakecommit.staging.WriteBudget;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * A writer of a {@link MultiTableSink}: a staging writer per table it has written, all within one {@link
 * WriteBudget} of open files and buffered bytes. A table is made ready ({@link MultiTableSink#prepare}: created,
 * registered, holding the run's epoch) before its first file is staged. A table written by key ({@link
 * MultiTableSink.Builder#upsertKey}) gets an {@link UpsertWriter}, which takes deletes too; its files are bounded
 * per checkpoint by the table's target file size, not by the budget.
 */
final class MultiTableWriter<IN>
    implements SinkWriter<IN, TableManifests, StagingWriterState>, SupportsDeletes<IN> {
  private final MultiTableSink<IN> sink;
  private final WriterContext context;
  private final WriteBudget budget;
  private final Map<TableIdentifier, SinkWriter<IN, StagingManifest, StagingWriterState>> writers =
      new LinkedHashMap<>();
  private long lastPrepared;

  MultiTableWriter(MultiTableSink<IN> sink, WriterContext context) {
    this.sink = sink;
    this.context = context;
    this.budget = new WriteBudget(sink.maxOpenFiles(), sink.maxBufferedBytes());
    this.lastPrepared = context.restoredCheckpointId();
  }

  @Override
  public void write(IN record) throws IOException {
    writer(sink.route(record)).write(record);
  }

  /**
   * Deletes the row of the record's key in its table.
   *
   * @throws IllegalStateException naming the table if the sink appends to it (no key to delete by)
   */
  @Override
  @SuppressWarnings("unchecked")
  public void delete(IN record) throws IOException {
    TableIdentifier table = sink.route(record);
    if (!(writer(table) instanceof SupportsDeletes<?> deletes)) {
      throw new IllegalStateException("A delete reached table " + table + ", which the sink appends to: give the"
          + " sink an upsert key for the table (MultiTableSink.Builder.upsertKey) to apply deletes by key");
    }
    ((SupportsDeletes<IN>) deletes).delete(record);
  }

  private SinkWriter<IN, StagingManifest, StagingWriterState> writer(TableIdentifier table) {
    SinkWriter<IN, StagingManifest, StagingWriterState> writer = writers.get(table);
    if (writer == null) {
      writer = open(table);
      writers.put(table, writer);
    }
    return writer;
  }

  private SinkWriter<IN, StagingManifest, StagingWriterState> open(TableIdentifier identifier) {
    Table table = sink.prepare(context.jobId(), context.epoch(), identifier);
    // named after the checkpoint this writer prepares next, as the writer's other tables' files are
    WriterContext tableContext = new WriterContext(context.jobId(), context.writerIndex(), context.numberOfWriters(),
        context.attempt(), lastPrepared, context.epoch());
    Schema schema = sink.writeSchema(identifier, table);
    List<String> key = sink.upsertKey(identifier);
    if (!key.isEmpty()) {
      return new UpsertWriter<>(table, schema, !schema.sameSchema(table.schema()), MultiTableSink.layout(table),
          sink.upsertSettings(identifier, key), sink.converter(schema), tableContext);
    }
    return StagingWriter.create(sink.writerConfig(table, schema), sink.converter(schema), tableContext, budget);
  }

  @Override
  public Optional<TableManifests> prepareCommit(long checkpointId) throws IOException {
    SortedMap<String, StagingManifest> manifests = new TreeMap<>();
    for (Map.Entry<TableIdentifier, SinkWriter<IN, StagingManifest, StagingWriterState>> writer
        : writers.entrySet()) {
      writer.getValue().prepareCommit(checkpointId)
          .ifPresent(manifest -> manifests.put(TableNames.encode(writer.getKey()), manifest));
    }
    lastPrepared = checkpointId;
    return manifests.isEmpty() ? Optional.empty() : Optional.of(new TableManifests(manifests));
  }

  @Override
  public StagingWriterState snapshotState(long checkpointId) {
    return new StagingWriterState(context.writerIndex(), lastPrepared);
  }

  @Override
  public void abortPrepare() throws IOException {
    for (SinkWriter<IN, StagingManifest, StagingWriterState> writer : writers.values()) {
      writer.abortPrepare();
    }
  }

  @Override
  public void close() throws IOException {
    SinkWriter.closeAll(writers.values());
  }

  /** Tables this writer has written. */
  int tableCount() {
    return writers.size();
  }

  /** The writer's budget, for tests that count what it holds. */
  WriteBudget budget() {
    return budget;
  }
}
