package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Map;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericMapData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.BooleanType;
import org.apache.flink.table.types.logical.DateType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.DoubleType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.SmallIntType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/** Flink rows seen as Iceberg records: each Flink type lands as Iceberg's generic Java class, by column name. */
class RowDataRecordTest {
  private static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "name", Types.StringType.get()),
      Types.NestedField.optional(3, "small", Types.IntegerType.get()),
      Types.NestedField.optional(4, "ok", Types.BooleanType.get()),
      Types.NestedField.optional(5, "price", Types.DecimalType.of(10, 2)),
      Types.NestedField.optional(6, "day", Types.DateType.get()),
      Types.NestedField.optional(7, "at", Types.TimeType.get()),
      Types.NestedField.optional(8, "local_ts", Types.TimestampType.withoutZone()),
      Types.NestedField.optional(9, "utc_ts", Types.TimestampType.withZone()),
      Types.NestedField.optional(10, "bytes", Types.BinaryType.get()),
      Types.NestedField.optional(11, "tags", Types.ListType.ofOptional(12, Types.StringType.get())),
      Types.NestedField.optional(13, "attrs", Types.MapType.ofOptional(14, 15, Types.StringType.get(),
          Types.DoubleType.get())),
      Types.NestedField.optional(16, "nested", Types.StructType.of(
          Types.NestedField.optional(17, "x", Types.IntegerType.get()))),
      Types.NestedField.optional(18, "absent", Types.StringType.get()));

  // Flink's columns in another order, one column the table lacks, and one the table has that Flink lacks.
  private static final RowType ROW = RowType.of(
      new org.apache.flink.table.types.logical.LogicalType[] {
          new VarCharType(VarCharType.MAX_LENGTH), new BigIntType(false), new SmallIntType(), new BooleanType(),
          new DecimalType(10, 2), new DateType(), new TimeType(), new TimestampType(6),
          new LocalZonedTimestampType(6), new VarBinaryType(VarBinaryType.MAX_LENGTH),
          new ArrayType(new VarCharType(VarCharType.MAX_LENGTH)),
          new MapType(new VarCharType(VarCharType.MAX_LENGTH), new DoubleType()),
          RowType.of(new org.apache.flink.table.types.logical.LogicalType[] {new IntType()}, new String[] {"x"}),
          new IntType()},
      new String[] {"name", "id", "small", "ok", "price", "day", "at", "local_ts", "utc_ts", "bytes", "tags",
          "attrs", "nested", "extra"});

  @Test
  void convertsEveryColumnByName() {
    Instant instant = Instant.parse("2026-11-30T01:02:03.456789Z");
    LocalDateTime local = LocalDateTime.of(2026, 11, 30, 4, 5, 6, 7000);
    GenericRowData row = GenericRowData.of(StringData.fromString("alice"), 42L, (short) 7, true,
        DecimalData.fromBigDecimal(new BigDecimal("12.34"), 10, 2), (int) LocalDate.of(2026, 11, 30).toEpochDay(),
        (int) (LocalTime.of(13, 14, 15).toNanoOfDay() / 1_000_000), TimestampData.fromLocalDateTime(local),
        TimestampData.fromInstant(instant), new byte[] {1, 2, 3},
        new GenericArrayData(new Object[] {StringData.fromString("a"), null}),
        new GenericMapData(Map.of(StringData.fromString("k"), 1.5d)),
        GenericRowData.of(9), 99);

    RowDataRecord view = RowDataRecord.of(ROW, SCHEMA, false);
    Record record = view.convert(row);

    assertThat(record.struct()).isSameAs(SCHEMA.asStruct());
    assertThat(record.get(0, Long.class)).isEqualTo(42L);
    assertThat(record.getField("name")).isEqualTo("alice");
    assertThat(record.get(2, Integer.class)).isEqualTo(7);
    assertThat(record.get(3, Boolean.class)).isTrue();
    assertThat(record.get(4, BigDecimal.class)).isEqualTo(new BigDecimal("12.34"));
    assertThat(record.get(5, LocalDate.class)).isEqualTo(LocalDate.of(2026, 11, 30));
    assertThat(record.get(6, LocalTime.class)).isEqualTo(LocalTime.of(13, 14, 15));
    assertThat(record.get(7, LocalDateTime.class)).isEqualTo(local);
    assertThat(record.get(8, OffsetDateTime.class)).isEqualTo(OffsetDateTime.ofInstant(instant, ZoneOffset.UTC));
    assertThat(record.get(9, ByteBuffer.class)).isEqualTo(ByteBuffer.wrap(new byte[] {1, 2, 3}));
    assertThat(record.get(10)).isEqualTo(java.util.Arrays.asList("a", null));
    assertThat(record.get(11)).isEqualTo(Map.of("k", 1.5d));
    GenericRecord nested = GenericRecord.create(SCHEMA.findField("nested").type().asStructType());
    nested.set(0, 9);
    assertThat(record.get(12, Record.class)).isEqualTo(nested);
    assertThat(record.get(13, String.class)).isNull();

    // The view moves on to the next row; a copy keeps the values.
    Record copy = record.copy();
    view.convert(GenericRowData.of(null, 43L, null, null, null, null, null, null, null, null, null, null, null, 1));
    assertThat(record.get(0, Long.class)).isEqualTo(43L);
    assertThat(record.get(1, String.class)).isNull();
    assertThat(copy.get(0, Long.class)).isEqualTo(42L);
  }

  @Test
  void refusesTypesThatDoNotFitNamingTheColumn() {
    RowType wrong = RowType.of(new org.apache.flink.table.types.logical.LogicalType[] {
        new BigIntType(false), new IntType()}, new String[] {"id", "name"});
    assertThatThrownBy(() -> RowDataRecord.of(wrong, SCHEMA, false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Column 'name'").hasMessageContaining("INT").hasMessageContaining("string");
  }

  @Test
  void refusesAMissingRequiredColumn() {
    RowType noId = RowType.of(new org.apache.flink.table.types.logical.LogicalType[] {
        new VarCharType(10)}, new String[] {"name"});
    assertThatThrownBy(() -> RowDataRecord.of(noId, SCHEMA, false))
        .hasMessageContaining("Column 'id' is required by the table but missing from the Flink row type");
  }

  @Test
  void matchesNamesIgnoringCaseWhenAsked() {
    RowType upper = RowType.of(new org.apache.flink.table.types.logical.LogicalType[] {
        new BigIntType(false)}, new String[] {"ID"});
    assertThatThrownBy(() -> RowDataRecord.of(upper, SCHEMA, false)).hasMessageContaining("Column 'id'");
    Record record = RowDataRecord.of(upper, SCHEMA, true).convert(GenericRowData.of(5L));
    assertThat(record.get(0, Long.class)).isEqualTo(5L);
  }

  @Test
  void isReadOnly() {
    Record record = RowDataRecord.of(ROW, SCHEMA, false).convert(GenericRowData.of(
        null, 1L, null, null, null, null, null, null, null, null, null, null, null, null));
    assertThatThrownBy(() -> record.set(0, 2L)).isInstanceOf(UnsupportedOperationException.class);
  }
}
