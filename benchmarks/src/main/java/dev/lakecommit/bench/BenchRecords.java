package dev.lakecommit.bench;

import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * The records the writer benchmarks write: an order-event-like schema mixing the types real ingests carry, and
 * rows drawn from a fixed seed, so every variant and every run writes identical values.
 */
final class BenchRecords {
  static final long SEED = 0x1A4EC0FFL;

  static final Schema SCHEMA =
      new Schema(
          Types.NestedField.required(1, "event_id", Types.LongType.get()),
          Types.NestedField.optional(2, "customer", Types.StringType.get()),
          Types.NestedField.optional(3, "country", Types.StringType.get()),
          Types.NestedField.optional(4, "amount", Types.DoubleType.get()),
          Types.NestedField.optional(5, "price", Types.DecimalType.of(12, 2)),
          Types.NestedField.optional(6, "event_time", Types.TimestampType.withZone()),
          Types.NestedField.optional(7, "event_date", Types.DateType.get()),
          Types.NestedField.optional(8, "quantity", Types.IntegerType.get()));

  private static final String[] COUNTRIES = {"DE", "FR", "US", "BR", "JP", "IN", "NG", "AU", "CA", "CN"};
  private static final OffsetDateTime START = OffsetDateTime.of(2025, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC);

  private BenchRecords() {}

  /** {@code count} rows of {@link #SCHEMA}, the same for the same count; about 5% of optional values are null. */
  static List<Record> generate(int count) {
    if (count < 1) {
      throw new IllegalArgumentException(String.format("Invalid row count: %s (must be > 0)", count));
    }
    SplittableRandom random = new SplittableRandom(SEED);
    List<Record> rows = new ArrayList<>(count);
    Record template = GenericRecord.create(SCHEMA);
    for (int i = 0; i < count; i++) {
      Record r = template.copy();
      r.setField("event_id", (long) i);
      r.setField("customer", maybeNull(random, "customer-" + random.nextInt(1_000_000)));
      r.setField("country", maybeNull(random, COUNTRIES[random.nextInt(COUNTRIES.length)]));
      r.setField("amount", maybeNull(random, random.nextDouble() * 10_000));
      r.setField("price", maybeNull(random, BigDecimal.valueOf(random.nextLong(100_000_000L), 2)));
      // Events arrive roughly in time order, about 3 s apart, with microsecond jitter.
      OffsetDateTime time = START.plusNanos(i * 3_000_000_000L + random.nextLong(2_000_000L) * 1000);
      r.setField("event_time", maybeNull(random, time));
      r.setField("event_date", maybeNull(random, LocalDate.from(time)));
      r.setField("quantity", maybeNull(random, 1 + random.nextInt(50)));
      rows.add(r);
    }
    return rows;
  }

  private static <T> T maybeNull(SplittableRandom random, T value) {
    return random.nextInt(20) == 0 ? null : value;
  }
}
