package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.Sink;
import dev.lakecommit.ingest.verify.TableRows;
import java.io.Closeable;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;

/**
 * The one place the tool tells an Iceberg table from a Hive table ({@code --target}). Every command asks its table
 * for what it needs — the sink of an ingest, the table's {@link CommitTarget} (watermarks, run epochs, staged
 * files), the rows {@code verify} reads, a description for reports — and none switches on the kind of table.
 */
sealed interface TableAccess permits IcebergAccess, HiveAccess {

  /** The access of the table the options name. */
  static TableAccess of(TableOptions options) {
    options.checkTableAndCatalog();
    return options.target() == TableKind.HIVE ? new HiveAccess(options) : new IcebergAccess(options);
  }

  /** How an ingest creates or evolves its table; options of the other kind of table are refused. */
  record IngestSettings(List<String> partitionBy, boolean createTable, boolean addNewColumns, String codec,
      String tableLocation, boolean external, boolean successFiles, WriteOptions write, int writers) {}

  /**
   * Refuses options that do not fit this kind of table, before anything is read or created.
   *
   * @throws IllegalArgumentException naming the option
   */
  void checkIngestOptions(IngestSettings settings);

  /**
   * Plans the input's schema against the table, from a scan that found every input column (also one that first
   * appears after the sample, or in a later file): the source's schema becomes what the job writes; with
   * {@code --add-new-columns} the table will get the input's new columns.
   *
   * @throws IllegalArgumentException naming a column the table lacks (and the file and line it appears in)
   */
  void planSchema(dev.lakecommit.ingest.source.FileSource source, dev.lakecommit.ingest.source.SchemaDrift drift,
      IngestSettings settings) throws IOException;

  /**
   * Connects, creates the table (unless it exists or creation is off) or checks it against {@code schema}, and
   * returns the sink of an ingest; the caller closes it.
   *
   * @throws IllegalArgumentException naming the option or column that does not fit
   */
  Sink<Record, ?, ?> openSink(Schema schema, IngestSettings settings) throws IOException;

  /**
   * How the job chooses a record's writer for this sink: by key for upserts, or null (any writer).
   *
   * @param sink a sink {@link #openSink} returned
   */
  java.util.function.ToIntBiFunction<Record, Integer> router(Sink<Record, ?, ?> sink, IngestSettings settings);

  /** The catalog, metastore and storage settings that name what a job talks to (values may be secret). */
  Map<String, String> endpointProperties();

  /** The table's commit target, on a connection of its own; the caller closes it. */
  CommitTarget openTarget() throws IOException;

  /** The table's rows as {@code verify} reads them back. */
  OpenRows openRows() throws IOException;

  /**
   * What the table is now, for reports: the kind, the name and where it stands ({@code snapshot 123},
   * {@code version 7}), with the fields {@code status} prints.
   */
  Description describe(JobId jobOrNull) throws IOException;

  /** A table's rows and what to close when they are read. */
  record OpenRows(TableRows rows, Closeable resources) implements Closeable {
    @Override
    public void close() throws IOException {
      resources.close();
    }
  }

  /**
   * @param title the table, as reports name it ({@code table db.t} or {@code Hive table db.t})
   * @param state where the table stands ({@code snapshot 123 (checkpoint 5 of job j)}, {@code version 7})
   * @param fields what {@code status --json} shows of the table, in order
   * @param headline the line {@code status} prints of the table
   */
  record Description(String title, String state, Map<String, Object> fields, String headline) {}
}
