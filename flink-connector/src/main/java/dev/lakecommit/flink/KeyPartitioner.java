package dev.lakecommit.flink;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.ToIntBiFunction;
import org.apache.flink.api.common.functions.Partitioner;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

/**
 * Sends each row to the writer subtask that owns its upsert key ({@code IcebergSink.keyRouter()}): in mode UPSERT
 * every row of a key, and so every change of it, must reach the same writer, which replaces or deletes the key's
 * earlier row of the same checkpoint by position. The owner depends only on the key's values and the number of
 * writers, as the writers compute it.
 *
 * <p>Opens the table once per sending subtask, on its first row, to resolve the key columns; the router keeps no
 * connection.
 */
final class KeyPartitioner implements Partitioner<RowData> {
  private static final long serialVersionUID = 1L;

  private final SinkRecipe target;
  private final RowType rowType;
  private transient ToIntBiFunction<RowData, Integer> router;

  KeyPartitioner(SinkRecipe target, RowType rowType) {
    this.target = target;
    this.rowType = rowType;
  }

  @Override
  public int partition(RowData row, int writers) {
    if (router == null) {
      router = openRouter(row, writers);
    }
    return router.applyAsInt(row, writers);
  }

  private ToIntBiFunction<RowData, Integer> openRouter(RowData first, int writers) {
    SinkRecipe.CoreSink core = target.open(rowType);
    try (var sink = core.sink()) {
      ToIntBiFunction<RowData, Integer> opened = core.keyRouter();
      // Resolves the key on this thread while the table is open.
      opened.applyAsInt(first, writers);
      return opened;
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot close the catalog of " + target.table() + " after resolving its key", e);
    }
  }
}
