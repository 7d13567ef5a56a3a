package dev.lakecommit.hive;

import java.time.DateTimeException;
import java.time.ZoneId;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * How the sink writes a table's Parquet files, from the table's parameters: as Hive writes them unless the table
 * says otherwise. Partition columns are never written into the files (Hive keeps them in the path only).
 *
 * @param codec the Parquet codec by Iceberg's name ({@code snappy}, {@code gzip}, {@code zstd}, ...)
 * @param int96Timestamps timestamps as Hive's INT96 (Hive 2.x/3.x read nothing else) rather than INT64
 *     {@code TIMESTAMP(MICROS)} (Hive 4, Spark, Trino)
 * @param int96Zone the zone an INT96 value's wall-clock time is read in: the writer converts a timestamp without
 *     zone from this zone to UTC, and records it in the footer ({@code writer.time.zone}) for Hive 3.1+ readers
 */
record HiveFileFormat(String codec, boolean int96Timestamps, ZoneId int96Zone) {
  /** Table parameter: {@code int96} (the default) or {@code int64-micros}. */
  static final String TIMESTAMP_KEY = "lakecommit.parquet.timestamp";
  /** Table parameter: the zone of INT96 timestamps ({@code UTC} by default). */
  static final String INT96_ZONE_KEY = "lakecommit.parquet.int96.zone";
  /** Hive's own table parameter for the Parquet codec. */
  static final String HIVE_CODEC_KEY = "parquet.compression";
  /** The codec when neither the sink's configuration nor the table chooses one: what Hive readers all read. */
  static final String DEFAULT_CODEC = "snappy";

  HiveFileFormat {
    Objects.requireNonNull(codec, "codec");
    Objects.requireNonNull(int96Zone, "int96Zone");
  }

  static final HiveFileFormat DEFAULT = new HiveFileFormat(DEFAULT_CODEC, true, ZoneId.of("UTC"));

  /**
   * The format of table {@code name} with parameters {@code params}; {@code codec} (configured on the sink) wins
   * over the table's {@code parquet.compression}.
   *
   * @throws IllegalArgumentException naming the table and parameter if a value is not understood
   */
  static HiveFileFormat of(String name, Map<String, String> params, String codec) {
    String timestamps = params.getOrDefault(TIMESTAMP_KEY, "int96").trim().toLowerCase(Locale.ROOT);
    if (!timestamps.equals("int96") && !timestamps.equals("int64-micros")) {
      throw new IllegalArgumentException(String.format(
          "Invalid table parameter %s=%s of table %s (must be int96 or int64-micros)", TIMESTAMP_KEY, timestamps,
          name));
    }
    ZoneId zone;
    String zoneName = params.getOrDefault(INT96_ZONE_KEY, "UTC").trim();
    try {
      zone = ZoneId.of(zoneName);
    } catch (DateTimeException e) {
      throw new IllegalArgumentException(String.format(
          "Invalid table parameter %s=%s of table %s (must be a time zone id such as UTC or Europe/Berlin)",
          INT96_ZONE_KEY, zoneName, name), e);
    }
    String chosen = codec != null ? codec : params.getOrDefault(HIVE_CODEC_KEY, DEFAULT_CODEC);
    return new HiveFileFormat(chosen.trim().toLowerCase(Locale.ROOT), timestamps.equals("int96"), zone);
  }
}
