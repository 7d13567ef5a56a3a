package dev.lakecommit.bench.spark;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.SplittableRandom;

/**
 * The input both sides of {@link IngestVsSpark} read, and the table both write: JSON lines of 8 columns (about 225
 * bytes a line, an ISO-8601 timestamp string in each), partitioned by two columns into 32 partitions, zstd.
 */
final class BenchInput {
  static final String NAMESPACE = "bench";
  static final String TABLE = "events";
  static final String PARTITION_BY = "country, currency";
  static final String CODEC = "zstd";
  /** The schema in the tool's {@code --schema} words. */
  static final String TOOL_SCHEMA = "id long, country string, currency string, amount double, quantity int, "
      + "customer string, note string, ts timestamptz";
  /** The same schema in Spark's DDL (Spark's TIMESTAMP is Iceberg's timestamptz). */
  static final String SPARK_DDL = "id BIGINT, country STRING, currency STRING, amount DOUBLE, quantity INT, "
      + "customer STRING, note STRING, ts TIMESTAMP";

  private static final String[] COUNTRIES = {"DE", "FR", "US", "JP"};
  private static final String[] CURRENCIES = {"EUR", "USD", "JPY", "GBP", "CHF", "SEK", "PLN", "CZK"};
  private static final long START = Instant.parse("2026-03-01T00:00:00Z").toEpochMilli();

  private BenchInput() {}

  /**
   * Writes {@code rows} lines with ids {@code 0 .. rows-1} into {@code files} files {@code part-NNNNN.json} of
   * {@code dir}, the same bytes for the same seed.
   */
  static void write(Path dir, long rows, int files, long seed) throws IOException {
    Files.createDirectories(dir);
    SplittableRandom random = new SplittableRandom(seed);
    StringBuilder line = new StringBuilder(256);
    long id = 0;
    for (int file = 0; file < files; file++) {
      long end = rows * (file + 1) / files;
      Path path = dir.resolve(String.format("part-%05d.json", file));
      try (BufferedWriter out = Files.newBufferedWriter(path, StandardCharsets.UTF_8)) {
        for (; id < end; id++) {
          line.setLength(0);
          line.append("{\"id\":").append(id)
              .append(",\"country\":\"").append(COUNTRIES[random.nextInt(COUNTRIES.length)])
              .append("\",\"currency\":\"").append(CURRENCIES[random.nextInt(CURRENCIES.length)])
              .append("\",\"amount\":").append(random.nextInt(1_000_000) / 100.0)
              .append(",\"quantity\":").append(1 + random.nextInt(20))
              .append(",\"customer\":\"c-").append(random.nextInt(100_000))
              .append("\",\"note\":\"");
          int length = 60 + random.nextInt(60);
          for (int i = 0; i < length; i++) {
            line.append((char) ('a' + random.nextInt(26)));
          }
          line.append("\",\"ts\":\"").append(Instant.ofEpochMilli(START + id * 37 + random.nextInt(1000)))
              .append("\"}\n");
          out.append(line);
        }
      }
    }
  }
}
