package dev.lakecommit.ingest.source;

import java.util.Locale;
import java.util.Optional;

/** The file formats the tool reads. */
public enum InputFormat {
  /** JSON lines: one object per line. */
  JSON,
  /** CSV (RFC 4180) with a header row. */
  CSV,
  PARQUET,
  AVRO;

  /**
   * The format named on the command line: {@code json}, {@code jsonl}, {@code csv}, {@code parquet} or
   * {@code avro}, in any case.
   *
   * @throws IllegalArgumentException naming the {@code --format} option and the accepted names
   */
  public static InputFormat of(String name) {
    String lower = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
    switch (lower) {
      case "json":
      case "jsonl":
      case "ndjson":
        return JSON;
      case "csv":
        return CSV;
      case "parquet":
        return PARQUET;
      case "avro":
        return AVRO;
      default:
        throw new IllegalArgumentException(
            "Unknown --format '" + name + "': expected one of json, jsonl, csv, parquet, avro");
    }
  }

  /**
   * The format a file name's extension implies ({@code .json}, {@code .jsonl}, {@code .ndjson}, {@code .csv},
   * {@code .parquet}, {@code .parq}, {@code .avro}, in any case), or empty. JSON and CSV files may end in a
   * compression extension ({@code a.jsonl.gz}, {@code b.csv.zst}: see {@link Compression}); Parquet and Avro compress
   * inside the file, so {@code x.parquet.gz} is no format.
   */
  public static Optional<InputFormat> fromExtension(String fileName) {
    if (fileName == null) {
      return Optional.empty();
    }
    String plain = Compression.stripExtension(fileName);
    String name = plain.substring(plain.lastIndexOf('/') + 1).toLowerCase(Locale.ROOT);
    int dot = name.lastIndexOf('.');
    if (dot < 0) {
      return Optional.empty();
    }
    boolean compressed = !plain.equals(fileName);
    switch (name.substring(dot + 1)) {
      case "json":
      case "jsonl":
      case "ndjson":
        return Optional.of(JSON);
      case "csv":
        return Optional.of(CSV);
      case "parquet":
      case "parq":
        return compressed ? Optional.empty() : Optional.of(PARQUET);
      case "avro":
        return compressed ? Optional.empty() : Optional.of(AVRO);
      default:
        return Optional.empty();
    }
  }

  /** Whether positions in files of this format count lines (and byte offsets) rather than records. */
  boolean lineBased() {
    return this == JSON || this == CSV;
  }
}
