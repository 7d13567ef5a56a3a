package dev.lakecommit.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

class InternalRowConverterTest {
  static final Schema TARGET = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "small", Types.IntegerType.get()),
      Types.NestedField.optional(3, "name", Types.StringType.get()),
      Types.NestedField.optional(4, "amount", Types.DecimalType.of(10, 2)),
      Types.NestedField.optional(5, "day", Types.DateType.get()),
      Types.NestedField.optional(6, "ts", Types.TimestampType.withZone()),
      Types.NestedField.optional(7, "local_ts", Types.TimestampType.withoutZone()),
      Types.NestedField.optional(8, "payload", Types.BinaryType.get()),
      Types.NestedField.optional(9, "point", Types.StructType.of(
          Types.NestedField.optional(10, "x", Types.DoubleType.get()),
          Types.NestedField.optional(11, "y", Types.DoubleType.get()))),
      Types.NestedField.optional(12, "tags", Types.ListType.ofOptional(13, Types.StringType.get())),
      Types.NestedField.optional(14, "attrs", Types.MapType.ofOptional(15, 16, Types.StringType.get(),
          Types.LongType.get())),
      Types.NestedField.optional(17, "missing", Types.StringType.get()));

  static final StructType SOURCE = new StructType()
      .add("ID", DataTypes.LongType, false)
      .add("small", DataTypes.ShortType)
      .add("name", DataTypes.StringType)
      .add("amount", DataTypes.createDecimalType(10, 2))
      .add("day", DataTypes.DateType)
      .add("ts", DataTypes.TimestampType)
      .add("local_ts", DataTypes.TimestampNTZType)
      .add("payload", DataTypes.BinaryType)
      .add("point", new StructType().add("x", DataTypes.FloatType).add("y", DataTypes.DoubleType))
      .add("tags", DataTypes.createArrayType(DataTypes.StringType))
      .add("attrs", DataTypes.createMapType(DataTypes.StringType, DataTypes.IntegerType));

  @Test
  void copiesEveryTypeByNameIgnoringCase() {
    long micros = 1_700_000_000_123_456L;
    InternalRow row = new GenericInternalRow(new Object[] {
        42L,
        (short) 7,
        UTF8String.fromString("héllo"),
        Decimal.apply(new BigDecimal("12.34")),
        (int) LocalDate.of(2026, 11, 30).toEpochDay(),
        micros,
        -1L,
        new byte[] {1, 2, 3},
        new GenericInternalRow(new Object[] {1.5f, null}),
        new GenericArrayData(new Object[] {UTF8String.fromString("a"), null}),
        ArrayBasedMapData.apply(new Object[] {UTF8String.fromString("k")}, new Object[] {5})});

    Record record = InternalRowConverter.of(SOURCE, TARGET, "table t").convert(row);

    assertThat(record.getField("id")).isEqualTo(42L);
    assertThat(record.getField("small")).isEqualTo(7);
    assertThat(record.getField("name")).isEqualTo("héllo");
    assertThat(record.getField("amount")).isEqualTo(new BigDecimal("12.34"));
    assertThat(record.getField("day")).isEqualTo(LocalDate.of(2026, 11, 30));
    assertThat(record.getField("ts")).isEqualTo(
        OffsetDateTime.of(2023, 11, 14, 22, 13, 20, 123_456_000, ZoneOffset.UTC));
    assertThat(record.getField("local_ts")).isEqualTo(LocalDateTime.of(1969, 12, 31, 23, 59, 59, 999_999_000));
    assertThat(record.getField("payload")).isEqualTo(ByteBuffer.wrap(new byte[] {1, 2, 3}));
    Record point = (Record) record.getField("point");
    assertThat(point.getField("x")).isEqualTo(1.5d);
    assertThat(point.getField("y")).isNull();
    assertThat(record.getField("tags")).isEqualTo(java.util.Arrays.asList("a", null));
    assertThat(record.getField("attrs")).isEqualTo(Map.of("k", 5L));
    assertThat(record.getField("missing")).isNull();
  }

  @Test
  void nullsStayNull() {
    Object[] values = new Object[SOURCE.size()];
    values[0] = 1L;
    Record record = InternalRowConverter.of(SOURCE, TARGET, "table t").convert(new GenericInternalRow(values));
    assertThat(record.getField("id")).isEqualTo(1L);
    for (int i = 1; i < TARGET.columns().size(); i++) {
      assertThat(record.get(i)).isNull();
    }
  }

  @Test
  void columnsThatDoNotFitAreRejectedWithTheirNames() {
    StructType noId = new StructType().add("name", DataTypes.StringType);
    assertThatThrownBy(() -> InternalRowConverter.of(noId, TARGET, "table t"))
        .hasMessage("Missing column 'id' for table t: the column is required, the DataFrame has no such column"
            + " (columns: name)");
    StructType extra = new StructType().add("id", DataTypes.LongType).add("color", DataTypes.StringType);
    assertThatThrownBy(() -> InternalRowConverter.of(extra, TARGET, "table t"))
        .hasMessageStartingWith("Unknown columns [color] for table t");
    StructType narrowing = new StructType().add("id", DataTypes.LongType).add("small", DataTypes.LongType);
    assertThatThrownBy(() -> InternalRowConverter.of(narrowing, TARGET, "table t"))
        .hasMessage("Cannot write Spark type bigint to table t column 'small' of type int");
    StructType scale = new StructType().add("id", DataTypes.LongType)
        .add("amount", DataTypes.createDecimalType(10, 3));
    assertThatThrownBy(() -> InternalRowConverter.of(scale, TARGET, "table t"))
        .hasMessage("Cannot write Spark type decimal(10,3) to table t column 'amount' of type decimal(10, 2)");
    StructType zone = new StructType().add("id", DataTypes.LongType).add("local_ts", DataTypes.TimestampType);
    assertThatThrownBy(() -> InternalRowConverter.of(zone, TARGET, "table t"))
        .hasMessageStartingWith("Cannot write Spark type timestamp to table t column 'local_ts'");
    StructType nested = new StructType().add("id", DataTypes.LongType)
        .add("tags", DataTypes.createArrayType(DataTypes.IntegerType));
    assertThatThrownBy(() -> InternalRowConverter.of(nested, TARGET, "table t"))
        .hasMessage("Cannot write Spark type int to table t column 'tags' element of type string");
  }
}
