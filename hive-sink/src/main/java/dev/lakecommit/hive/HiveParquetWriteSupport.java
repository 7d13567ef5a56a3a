package dev.lakecommit.hive;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.avro.util.Utf8;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type.Repetition;
import org.apache.parquet.schema.Types.GroupBuilder;

/**
 * Writes records of the staged schema as Hive writes Parquet: the data columns only (partition columns live in
 * the path), lower-case names, every column optional, timestamps as INT96 (or INT64 micros per
 * {@link HiveFileFormat}), decimals as fixed-length binary, lists and maps in Hive's group layout. Columns carry
 * their Iceberg field ids too, so Iceberg readers match them by id.
 */
final class HiveParquetWriteSupport extends WriteSupport<Record> {
  /** Hive 3.1+ reads INT96 values in the zone this footer key names. */
  static final String WRITER_ZONE_KEY = "writer.time.zone";
  private static final long JULIAN_DAY_OF_EPOCH = 2_440_588L;

  private final MessageType fileType;
  private final HiveFileFormat format;
  /** Key-value metadata every file gets. */
  private final Map<String, String> footer;
  /** Positions in the staged schema of the columns written, in file order. */
  private final int[] positions;
  private final Type[] types;
  private RecordConsumer out;

  HiveParquetWriteSupport(Schema staged, List<String> partitionColumns, HiveFileFormat format) {
    this(staged, partitionColumns, format, Map.of());
  }

  HiveParquetWriteSupport(Schema staged, List<String> partitionColumns, HiveFileFormat format,
      Map<String, String> footer) {
    this.format = format;
    this.footer = Map.copyOf(footer);
    List<Types.NestedField> columns = staged.columns();
    List<Integer> kept = new ArrayList<>();
    org.apache.parquet.schema.Types.MessageTypeBuilder message = org.apache.parquet.schema.Types.buildMessage();
    for (int i = 0; i < columns.size(); i++) {
      Types.NestedField field = columns.get(i);
      if (partitionColumns.contains(field.name().toLowerCase(Locale.ROOT))) {
        continue;
      }
      kept.add(i);
      message.addField(fileType(field.name(), field.fieldId(), field.type()));
    }
    this.fileType = message.named("hive_schema");
    this.positions = kept.stream().mapToInt(Integer::intValue).toArray();
    this.types = kept.stream().map(i -> columns.get(i).type()).toArray(Type[]::new);
  }

  MessageType fileType() {
    return fileType;
  }

  @Override
  public WriteContext init(Configuration configuration) {
    Map<String, String> metadata = new HashMap<>(footer);
    if (format.int96Timestamps()) {
      metadata.put(WRITER_ZONE_KEY, format.int96Zone().getId());
    }
    return new WriteContext(fileType, metadata);
  }

  @Override
  public void prepareForWrite(RecordConsumer recordConsumer) {
    this.out = recordConsumer;
  }

  @Override
  public void write(Record record) {
    out.startMessage();
    for (int i = 0; i < positions.length; i++) {
      Object value = record.get(positions[i]);
      if (value != null) {
        out.startField(fileType.getFieldName(i), i);
        writeValue(types[i], value);
        out.endField(fileType.getFieldName(i), i);
      }
    }
    out.endMessage();
  }

  private org.apache.parquet.schema.Type fileType(String name, int id, Type type) {
    return fileType(name, id, type, Repetition.OPTIONAL);
  }

  private org.apache.parquet.schema.Type fileType(String name, int id, Type type, Repetition repetition) {
    String column = name.toLowerCase(Locale.ROOT);
    switch (type.typeId()) {
      case BOOLEAN:
        return primitive(PrimitiveTypeName.BOOLEAN, repetition, null).id(id).named(column);
      case INTEGER:
        return primitive(PrimitiveTypeName.INT32, repetition, null).id(id).named(column);
      case LONG:
        return primitive(PrimitiveTypeName.INT64, repetition, null).id(id).named(column);
      case FLOAT:
        return primitive(PrimitiveTypeName.FLOAT, repetition, null).id(id).named(column);
      case DOUBLE:
        return primitive(PrimitiveTypeName.DOUBLE, repetition, null).id(id).named(column);
      case DATE:
        return primitive(PrimitiveTypeName.INT32, repetition, LogicalTypeAnnotation.dateType()).id(id).named(column);
      case TIMESTAMP:
        if (format.int96Timestamps()) {
          return primitive(PrimitiveTypeName.INT96, repetition, null).id(id).named(column);
        }
        boolean utc = ((Types.TimestampType) type).shouldAdjustToUTC();
        return primitive(PrimitiveTypeName.INT64, repetition,
            LogicalTypeAnnotation.timestampType(utc, LogicalTypeAnnotation.TimeUnit.MICROS)).id(id).named(column);
      case STRING:
        return primitive(PrimitiveTypeName.BINARY, repetition, LogicalTypeAnnotation.stringType()).id(id)
            .named(column);
      case BINARY:
      case FIXED:
        return primitive(PrimitiveTypeName.BINARY, repetition, null).id(id).named(column);
      case DECIMAL:
        Types.DecimalType decimal = (Types.DecimalType) type;
        return primitive(PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY, repetition,
            LogicalTypeAnnotation.decimalType(decimal.scale(), decimal.precision()))
            .length(decimalBytes(decimal.precision())).id(id).named(column);
      case STRUCT:
        GroupBuilder<GroupType> struct = org.apache.parquet.schema.Types.buildGroup(repetition);
        for (Types.NestedField field : type.asStructType().fields()) {
          struct.addField(fileType(field.name(), field.fieldId(), field.type()));
        }
        return struct.id(id).named(column);
      case LIST:
        Types.ListType list = type.asListType();
        return org.apache.parquet.schema.Types.buildGroup(repetition).as(LogicalTypeAnnotation.listType())
            .addField(org.apache.parquet.schema.Types.repeatedGroup()
                .addField(fileType("array_element", list.elementId(), list.elementType()))
                .named("bag"))
            .id(id).named(column);
      case MAP:
        Types.MapType map = type.asMapType();
        return org.apache.parquet.schema.Types.buildGroup(repetition).as(LogicalTypeAnnotation.mapType())
            .addField(org.apache.parquet.schema.Types.repeatedGroup()
                .addField(fileType("key", map.keyId(), map.keyType(), Repetition.REQUIRED))
                .addField(fileType("value", map.valueId(), map.valueType()))
                .named("key_value"))
            .id(id).named(column);
      default:
        throw new IllegalArgumentException("Column '" + name + "' has type " + type + ", which Hive cannot read");
    }
  }

  private static org.apache.parquet.schema.Types.PrimitiveBuilder<org.apache.parquet.schema.PrimitiveType> primitive(
      PrimitiveTypeName primitive, Repetition repetition, LogicalTypeAnnotation logical) {
    return org.apache.parquet.schema.Types.primitive(primitive, repetition).as(logical);
  }

  /** The fewest bytes that hold every unscaled value of {@code precision} digits, as Hive sizes them. */
  static int decimalBytes(int precision) {
    int bytes = 1;
    while (Math.pow(2.0, 8 * bytes - 1) < Math.pow(10.0, precision)) {
      bytes++;
    }
    return bytes;
  }

  private void writeValue(Type type, Object value) {
    switch (type.typeId()) {
      case BOOLEAN:
        out.addBoolean((Boolean) value);
        break;
      case INTEGER:
        out.addInteger((Integer) value);
        break;
      case LONG:
        out.addLong((Long) value);
        break;
      case FLOAT:
        out.addFloat((Float) value);
        break;
      case DOUBLE:
        out.addDouble((Double) value);
        break;
      case DATE:
        out.addInteger((int) ((LocalDate) value).toEpochDay());
        break;
      case TIMESTAMP:
        writeTimestamp(value);
        break;
      case STRING:
        // a Utf8 (Iceberg's generic model takes any CharSequence) as its bytes, not decoded and encoded again
        out.addBinary(value instanceof Utf8 utf8 ? Binary.fromReusedByteArray(utf8.getBytes(), 0, utf8.getByteLength())
            : Binary.fromString(value.toString()));
        break;
      case BINARY:
        out.addBinary(Binary.fromReusedByteBuffer(((ByteBuffer) value).duplicate()));
        break;
      case FIXED:
        out.addBinary(value instanceof ByteBuffer buffer
            ? Binary.fromReusedByteBuffer(buffer.duplicate()) : Binary.fromReusedByteArray((byte[]) value));
        break;
      case DECIMAL:
        out.addBinary(Binary.fromConstantByteArray(
            fixedDecimal((BigDecimal) value, decimalBytes(((Types.DecimalType) type).precision()))));
        break;
      case STRUCT:
        writeStruct(type.asStructType(), (org.apache.iceberg.StructLike) value);
        break;
      case LIST:
        writeList(type.asListType(), (List<?>) value);
        break;
      case MAP:
        writeMap(type.asMapType(), (Map<?, ?>) value);
        break;
      default:
        throw new IllegalArgumentException("Cannot write " + type + " for Hive");
    }
  }

  private void writeTimestamp(Object value) {
    if (!format.int96Timestamps()) {
      long micros = value instanceof OffsetDateTime offset
          ? ChronoUnit.MICROS.between(OffsetDateTime.ofInstant(java.time.Instant.EPOCH, ZoneOffset.UTC), offset)
          : ChronoUnit.MICROS.between(LocalDateTime.of(1970, 1, 1, 0, 0), (LocalDateTime) value);
      out.addLong(micros);
      return;
    }
    LocalDateTime utc = value instanceof OffsetDateTime offset
        ? offset.withOffsetSameInstant(ZoneOffset.UTC).toLocalDateTime()
        : LocalDateTime.ofInstant(((LocalDateTime) value).atZone(format.int96Zone()).toInstant(), ZoneOffset.UTC);
    out.addBinary(Binary.fromConstantByteArray(int96(utc)));
  }

  /** Hive's INT96: nanoseconds of the day (8 bytes) then the Julian day (4 bytes), little endian, in UTC. */
  static byte[] int96(LocalDateTime utc) {
    ByteBuffer buffer = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
    buffer.putLong(utc.toLocalTime().toNanoOfDay());
    buffer.putInt((int) (utc.toLocalDate().toEpochDay() + JULIAN_DAY_OF_EPOCH));
    return buffer.array();
  }

  private static byte[] fixedDecimal(BigDecimal value, int length) {
    byte[] unscaled = value.unscaledValue().toByteArray();
    byte[] fixed = new byte[length];
    byte fill = (byte) (value.signum() < 0 ? 0xFF : 0x00);
    int pad = length - unscaled.length;
    for (int i = 0; i < length; i++) {
      fixed[i] = i < pad ? fill : unscaled[i - pad];
    }
    return fixed;
  }

  private void writeStruct(Types.StructType struct, org.apache.iceberg.StructLike value) {
    out.startGroup();
    List<Types.NestedField> fields = struct.fields();
    for (int i = 0; i < fields.size(); i++) {
      Object field = value.get(i, Object.class);
      if (field != null) {
        String name = fields.get(i).name().toLowerCase(Locale.ROOT);
        out.startField(name, i);
        writeValue(fields.get(i).type(), field);
        out.endField(name, i);
      }
    }
    out.endGroup();
  }

  private void writeList(Types.ListType list, List<?> values) {
    out.startGroup();
    if (!values.isEmpty()) {
      out.startField("bag", 0);
      for (Object element : values) {
        out.startGroup();
        if (element != null) {
          out.startField("array_element", 0);
          writeValue(list.elementType(), element);
          out.endField("array_element", 0);
        }
        out.endGroup();
      }
      out.endField("bag", 0);
    }
    out.endGroup();
  }

  private void writeMap(Types.MapType map, Map<?, ?> values) {
    out.startGroup();
    if (!values.isEmpty()) {
      out.startField("key_value", 0);
      for (Map.Entry<?, ?> entry : values.entrySet()) {
        out.startGroup();
        out.startField("key", 0);
        writeValue(map.keyType(), entry.getKey());
        out.endField("key", 0);
        if (entry.getValue() != null) {
          out.startField("value", 1);
          writeValue(map.valueType(), entry.getValue());
          out.endField("value", 1);
        }
        out.endGroup();
      }
      out.endField("key_value", 0);
    }
    out.endGroup();
  }
}
