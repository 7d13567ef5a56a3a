package dev.lakecommit.staging.testing;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * A schema with every type (field ids as Iceberg assigns them to a new table: top-level fields first, so a table
 * created with this schema keeps these ids) Lakecommit stages, and deterministic rows of it (row {@code i} is a pure function of
 * {@code i}; every optional column is null in some rows, floats include NaN).
 */
public final class AllTypes {
  public static final Schema SCHEMA =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "i", Types.IntegerType.get()),
          Types.NestedField.optional(3, "s", Types.StringType.get()),
          Types.NestedField.optional(4, "bin", Types.BinaryType.get()),
          Types.NestedField.optional(5, "flag", Types.BooleanType.get()),
          Types.NestedField.optional(6, "d", Types.DoubleType.get()),
          Types.NestedField.optional(7, "f", Types.FloatType.get()),
          Types.NestedField.optional(8, "dec", Types.DecimalType.of(9, 2)),
          Types.NestedField.optional(9, "day", Types.DateType.get()),
          Types.NestedField.optional(10, "t", Types.TimeType.get()),
          Types.NestedField.optional(11, "ts", Types.TimestampType.withoutZone()),
          Types.NestedField.optional(12, "tstz", Types.TimestampType.withZone()),
          Types.NestedField.optional(13, "u", Types.UUIDType.get()),
          Types.NestedField.optional(14, "fx", Types.FixedType.ofLength(4)),
          Types.NestedField.optional(
              15,
              "point",
              Types.StructType.of(
                  Types.NestedField.required(18, "x", Types.DoubleType.get()),
                  Types.NestedField.optional(19, "label", Types.StringType.get()))),
          Types.NestedField.optional(
              16, "tags", Types.ListType.ofOptional(20, Types.StringType.get())),
          Types.NestedField.optional(
              17,
              "attrs",
              Types.MapType.ofOptional(21, 22, Types.StringType.get(), Types.LongType.get())));

  private static final LocalDateTime EPOCH_2024 = LocalDateTime.of(2024, 1, 1, 0, 0);

  private AllTypes() {}

  /** Row {@code i}: column {@code c} is null when {@code (i + c) % 7 == 0} (never {@code id}). */
  public static Record row(long i) {
    Record r = GenericRecord.create(SCHEMA);
    r.setField("id", i);
    set(r, i, 2, "i", (int) (i * 31 % 100_000) - 50_000);
    set(r, i, 3, "s", "row-" + i + (i % 5 == 0 ? "-ünïcødé" : ""));
    set(r, i, 4, "bin", ByteBuffer.wrap(("b" + i).getBytes(StandardCharsets.UTF_8)));
    set(r, i, 5, "flag", i % 2 == 0);
    set(r, i, 6, "d", i % 11 == 0 ? Double.NaN : i * 1.5);
    set(r, i, 7, "f", i % 13 == 0 ? Float.NaN : i * 0.25f);
    set(r, i, 8, "dec", BigDecimal.valueOf(i * 101 - 5000, 2));
    set(r, i, 9, "day", LocalDate.of(2024, 1, 1).plusDays(i % 1000));
    set(r, i, 10, "t", LocalTime.ofNanoOfDay((i * 1_234_567_000L) % 86_400_000_000_000L));
    set(r, i, 11, "ts", EPOCH_2024.plusSeconds(i * 3_607).plusNanos((i % 1000) * 1000));
    set(r, i, 12, "tstz", OffsetDateTime.of(EPOCH_2024.plusMinutes(i * 59), ZoneOffset.UTC));
    set(r, i, 13, "u", new UUID(i, ~i));
    set(r, i, 14, "fx", new byte[] {(byte) i, (byte) (i >> 8), 7, 9});
    if ((i + 15) % 7 != 0) {
      Record point = GenericRecord.create(SCHEMA.findType("point").asStructType());
      point.setField("x", i / 3.0);
      point.setField("label", i % 3 == 0 ? null : "p" + i);
      r.setField("point", point);
    }
    if ((i + 18) % 7 != 0) {
      List<String> tags = new ArrayList<>();
      for (int k = 0; k < i % 4; k++) {
        tags.add(k == 1 ? null : "t" + k);
      }
      r.setField("tags", tags);
    }
    if ((i + 20) % 7 != 0) {
      Map<String, Long> attrs = new LinkedHashMap<>();
      for (int k = 0; k < i % 3; k++) {
        attrs.put("k" + k, k == 1 ? null : i * k);
      }
      r.setField("attrs", attrs);
    }
    return r;
  }

  /** Rows {@code from .. to-1}. */
  public static List<Record> rows(long from, long to) {
    List<Record> rows = new ArrayList<>();
    for (long i = from; i < to; i++) {
      rows.add(row(i));
    }
    return rows;
  }

  private static void set(Record r, long i, int column, String name, Object value) {
    r.setField(name, (i + column) % 7 == 0 ? null : value);
  }
}
