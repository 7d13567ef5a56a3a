package dev.lakecommit.ingest.source;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;

/**
 * Reading Parquet and Avro files whose own field ids differ from the source schema's (files written by Iceberg
 * carry their table's ids; files without ids get ids by name mapping): a read schema with the source's names and
 * types but the file's ids, and a step that turns what was read back into records of the source schema.
 */
final class FileSchemas {
  private FileSchemas() {}

  /** Thrown when a file's columns cannot be read as the source schema; the message names the column. */
  static final class MismatchException extends Exception {
    private static final long serialVersionUID = 1L;

    MismatchException(String message) {
      super(message);
    }
  }

  /**
   * The source schema with the ids of the file's columns of the same names (exact, else ignoring case). Source
   * columns the file lacks get unused ids and read as null; types must be equal or a promotion Iceberg reads
   * (int to long, float to double, wider decimal). All fields are optional here: {@link #conform} checks the
   * source's required fields.
   */
  static Schema readSchema(Schema source, Schema file) throws MismatchException {
    int[] nextId = {1 + TypeUtil.indexById(file.asStruct()).keySet().stream().mapToInt(Integer::intValue).max()
        .orElse(0)};
    return new Schema(struct(source.asStruct(), file.asStruct(), null, nextId).fields());
  }

  private static Types.StructType struct(Types.StructType source, Types.StructType file, String prefix,
      int[] nextId) throws MismatchException {
    List<Types.NestedField> fields = new ArrayList<>();
    for (Types.NestedField field : source.fields()) {
      String path = prefix == null ? field.name() : prefix + "." + field.name();
      Types.NestedField match = file.field(field.name());
      if (match == null) {
        match = file.caseInsensitiveField(field.name());
      }
      if (match == null) {
        if (field.isRequired()) {
          throw new MismatchException("required column '" + path + "' is not in the file");
        }
        Type fresh = TypeUtil.assignFreshIds(field.type(), () -> nextId[0]++);
        fields.add(Types.NestedField.optional(nextId[0]++, field.name(), fresh));
      } else {
        fields.add(Types.NestedField.optional(match.fieldId(), field.name(),
            type(field.type(), match.type(), path, nextId)));
      }
    }
    return Types.StructType.of(fields);
  }

  private static Type type(Type source, Type file, String path, int[] nextId) throws MismatchException {
    if (source.isPrimitiveType()) {
      if (file.isPrimitiveType()
          && (source.equals(file) || TypeUtil.isPromotionAllowed(file, source.asPrimitiveType()))) {
        return source;
      }
      throw mismatch(path, source, file);
    }
    if (source.typeId() != file.typeId()) {
      throw mismatch(path, source, file);
    }
    switch (source.typeId()) {
      case STRUCT:
        return struct(source.asStructType(), file.asStructType(), path, nextId);
      case LIST: {
        Types.ListType list = file.asListType();
        return Types.ListType.ofOptional(list.elementId(),
            type(source.asListType().elementType(), list.elementType(), path + "[]", nextId));
      }
      case MAP: {
        Types.MapType map = file.asMapType();
        return Types.MapType.ofOptional(map.keyId(), map.valueId(),
            type(source.asMapType().keyType(), map.keyType(), path + ".key", nextId),
            type(source.asMapType().valueType(), map.valueType(), path + ".value", nextId));
      }
      default:
        throw mismatch(path, source, file);
    }
  }

  private static MismatchException mismatch(String path, Type source, Type file) {
    return new MismatchException("column '" + path + "' is " + file + " in the file but " + source
        + " in the schema");
  }

  /** A record of the source struct from one read with {@link #readSchema}, checking required fields. */
  static Record conform(Record read, Types.StructType source, String prefix) throws Values.ValueException {
    GenericRecord record = GenericRecord.create(source);
    List<Types.NestedField> fields = source.fields();
    for (int i = 0; i < fields.size(); i++) {
      Types.NestedField field = fields.get(i);
      String path = prefix == null ? field.name() : prefix + "." + field.name();
      Object value = value(read.get(i), field.type(), path);
      if (value == null && field.isRequired()) {
        throw new Values.ValueException(path, "is null but required");
      }
      record.set(i, value);
    }
    return record;
  }

  private static Object value(Object value, Type type, String path) throws Values.ValueException {
    if (value == null || type.isPrimitiveType()) {
      return value;
    }
    switch (type.typeId()) {
      case STRUCT:
        return conform((Record) value, type.asStructType(), path);
      case LIST: {
        Types.ListType list = type.asListType();
        List<Object> elements = new ArrayList<>();
        for (Object element : (Collection<?>) value) {
          Object converted = value(element, list.elementType(), path + "[]");
          if (converted == null && list.isElementRequired()) {
            throw new Values.ValueException(path, "has a null element but elements are required");
          }
          elements.add(converted);
        }
        return elements;
      }
      case MAP: {
        Types.MapType map = type.asMapType();
        Map<Object, Object> entries = new java.util.LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
          Object converted = value(entry.getValue(), map.valueType(), path + ".value");
          if (converted == null && map.isValueRequired()) {
            throw new Values.ValueException(path, "has a null value but values are required");
          }
          entries.put(value(entry.getKey(), map.keyType(), path + ".key"), converted);
        }
        return entries;
      }
      default:
        return value;
    }
  }
}
