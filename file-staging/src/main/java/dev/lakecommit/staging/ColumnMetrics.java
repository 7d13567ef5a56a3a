package dev.lakecommit.staging;

import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.apache.iceberg.Metrics;

/**
 * Per-column statistics of one staged file, keyed by Iceberg field id: what a table commit needs for file
 * pruning, exactly as Iceberg computes them for the file ({@link org.apache.iceberg.parquet.ParquetUtil}).
 *
 * <p>Bounds are in Iceberg's single-value serialization ({@link org.apache.iceberg.types.Conversions}). All maps
 * are immutable, sorted by field id, and never null (empty when the metrics mode collects nothing).
 */
public record ColumnMetrics(
    Map<Integer, Long> columnSizes,
    Map<Integer, Long> valueCounts,
    Map<Integer, Long> nullValueCounts,
    Map<Integer, Long> nanValueCounts,
    Map<Integer, ByteBuffer> lowerBounds,
    Map<Integer, ByteBuffer> upperBounds) {

  /** No statistics at all. */
  public static final ColumnMetrics EMPTY =
      new ColumnMetrics(Map.of(), Map.of(), Map.of(), Map.of(), Map.of(), Map.of());

  public ColumnMetrics {
    columnSizes = counts(columnSizes, "columnSizes");
    valueCounts = counts(valueCounts, "valueCounts");
    nullValueCounts = counts(nullValueCounts, "nullValueCounts");
    nanValueCounts = counts(nanValueCounts, "nanValueCounts");
    lowerBounds = bounds(lowerBounds, "lowerBounds");
    upperBounds = bounds(upperBounds, "upperBounds");
  }

  /** The statistics of Iceberg {@link Metrics}; null maps become empty ones. */
  public static ColumnMetrics of(Metrics metrics) {
    Objects.requireNonNull(metrics, "metrics");
    return new ColumnMetrics(
        metrics.columnSizes(),
        metrics.valueCounts(),
        metrics.nullValueCounts(),
        metrics.nanValueCounts(),
        metrics.lowerBounds(),
        metrics.upperBounds());
  }

  /** These statistics as Iceberg {@link Metrics} of a file with {@code recordCount} rows. */
  public Metrics toMetrics(long recordCount) {
    return new Metrics(
        recordCount,
        columnSizes,
        valueCounts,
        nullValueCounts,
        nanValueCounts,
        Collections.unmodifiableMap(copyBuffers(lowerBounds)),
        Collections.unmodifiableMap(copyBuffers(upperBounds)));
  }

  private static Map<Integer, Long> counts(Map<Integer, Long> counts, String name) {
    if (counts == null || counts.isEmpty()) {
      return Map.of();
    }
    TreeMap<Integer, Long> sorted = new TreeMap<>();
    counts.forEach(
        (id, count) -> {
          if (id == null || count == null) {
            throw new IllegalArgumentException(
                String.format("Invalid %s entry: field %s -> %s (null keys and values are not allowed)",
                    name, id, count));
          }
          sorted.put(id, count);
        });
    return Collections.unmodifiableMap(sorted);
  }

  private static Map<Integer, ByteBuffer> bounds(Map<Integer, ByteBuffer> bounds, String name) {
    if (bounds == null || bounds.isEmpty()) {
      return Map.of();
    }
    for (Map.Entry<Integer, ByteBuffer> e : bounds.entrySet()) {
      if (e.getKey() == null || e.getValue() == null) {
        throw new IllegalArgumentException(
            String.format("Invalid %s entry: field %s -> %s (null keys and values are not allowed)",
                name, e.getKey(), e.getValue()));
      }
    }
    return Collections.unmodifiableMap(copyBuffers(bounds));
  }

  /** Read-only copies, so that neither the caller nor a reader can change a bound through a shared buffer. */
  private static TreeMap<Integer, ByteBuffer> copyBuffers(Map<Integer, ByteBuffer> buffers) {
    TreeMap<Integer, ByteBuffer> copy = new TreeMap<>();
    buffers.forEach((id, buffer) -> copy.put(id, copyOf(buffer)));
    return copy;
  }

  static ByteBuffer copyOf(ByteBuffer buffer) {
    ByteBuffer source = buffer.duplicate();
    byte[] bytes = new byte[source.remaining()];
    source.get(bytes);
    return ByteBuffer.wrap(bytes).asReadOnlyBuffer();
  }

  static byte[] bytesOf(ByteBuffer buffer) {
    ByteBuffer source = buffer.duplicate();
    byte[] bytes = new byte[source.remaining()];
    source.get(bytes);
    return bytes;
  }

  @Override
  public String toString() {
    return "ColumnMetrics{columnSizes=" + columnSizes + ", valueCounts=" + valueCounts + ", nullValueCounts="
        + nullValueCounts + ", nanValueCounts=" + nanValueCounts + ", lowerBounds=" + hex(lowerBounds)
        + ", upperBounds=" + hex(upperBounds) + "}";
  }

  private static String hex(Map<Integer, ByteBuffer> bounds) {
    StringBuilder out = new StringBuilder("{");
    bounds.forEach(
        (id, buffer) -> {
          if (out.length() > 1) {
            out.append(", ");
          }
          out.append(id).append('=').append(java.util.HexFormat.of().formatHex(bytesOf(buffer)));
        });
    return out.append('}').toString();
  }
}
