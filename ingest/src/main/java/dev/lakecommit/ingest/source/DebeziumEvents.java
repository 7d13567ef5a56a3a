package dev.lakecommit.ingest.source;

import java.util.Map;

/**
 * Debezium change events in JSON ({@code --format debezium}): the envelope {@code {"before", "after", "op",
 * "source", ...}}, bare or inside {@code {"schema", "payload"}} (the JSON converter with schemas enabled). Creates
 * ({@code c}), snapshot reads ({@code r}) and updates ({@code u}) are the row of {@code after}, written as an upsert
 * of its key; deletes ({@code d}) are a {@link dev.lakecommit.iceberg.DeletedRecord} of the row of {@code before}, or of the message key when
 * {@code before} is absent. Tombstones (no value: what Debezium sends after a delete for log compaction) carry no
 * change. Truncates ({@code t}) and logical decoding messages ({@code m}) are not row changes: they are bad records,
 * which stop the job unless a bad-record sink takes them.
 */
final class DebeziumEvents {
  private DebeziumEvents() {}

  /** What an event asks of the table. */
  enum Kind {
    UPSERT, DELETE
  }

  /**
   * An event's change: the row's fields (the key's at least, for a delete), and the source table it names in
   * {@code source.table} (null if it names none).
   */
  record Change(Kind kind, Map<String, Object> row, String table) {
    Change(Kind kind, Map<String, Object> row) {
      this(kind, row, null);
    }
  }

  /**
   * The change an event's value asks for.
   *
   * @param value the message value parsed as JSON
   * @param key the message key parsed as JSON, or null (no key, or not JSON); asked for only by a delete without
   *     {@code before}
   * @throws Values.ValueException naming the field ({@code op}, {@code after}, ...) if the value is not a row change
   *     of Debezium's envelope
   */
  static Change change(Object value, java.util.function.Supplier<Object> key) throws Values.ValueException {
    Map<String, Object> envelope = payload(value, "value");
    Object op = envelope.get("op");
    if (!(op instanceof String kind)) {
      throw new Values.ValueException("op", "not a Debezium change event: no 'op' field"
          + (envelope.containsKey("op") ? " of type string" : "") + " (give the JSON of Debezium's envelope, or"
          + " another --format)");
    }
    String table = envelope.get("source") instanceof Map<?, ?> source && source.get("table") instanceof String name
        ? name : null;
    return switch (kind) {
      case "c", "r", "u" -> new Change(Kind.UPSERT, row(envelope, "after", kind), table);
      case "d" -> new Change(Kind.DELETE, envelope.get("before") instanceof Map<?, ?> ? row(envelope, "before", kind)
          : keyRow(key.get()), table);
      case "t" -> throw new Values.ValueException("op", "a Debezium truncate event (op 't'): a truncate of the source"
          + " table is not applied to the lake table; take it with --bad-records, and truncate the table yourself if"
          + " you mean to");
      case "m" -> throw new Values.ValueException("op", "a Debezium logical decoding message (op 'm'), not a row"
          + " change");
      default -> throw new Values.ValueException("op", "unknown Debezium operation '" + kind + "' (c, r, u or d)");
    };
  }

  /** The names of the fields of a message key (bare or in the JSON converter's envelope); empty if it is none. */
  static java.util.List<String> keyFields(Object key) {
    if (key == null) {
      return java.util.List.of();
    }
    try {
      return java.util.List.copyOf(payload(key, "key").keySet());
    } catch (Values.ValueException notAnObject) {
      return java.util.List.of();
    }
  }

  /**
   * Whether a message (parsed) is the JSON converter's {@code {"schema", "payload"}} with a struct schema that
   * declares its fields: Kafka Connect's JSON converter then reads it with the types the schema gives.
   */
  static boolean hasConnectSchema(Object json) {
    return json instanceof Map<?, ?> object && object.size() == 2 && object.get("payload") instanceof Map<?, ?>
        && object.get("schema") instanceof Map<?, ?> schema && schema.get("fields") instanceof java.util.List<?>;
  }

  /** A JSON object's {@code payload} if it is the JSON converter's {@code {"schema", "payload"}}, else itself. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> payload(Object json, String what) throws Values.ValueException {
    if (!(json instanceof Map<?, ?> object)) {
      throw new Values.ValueException(null, "expected a JSON object as the message " + what + ", got "
          + Json.kind(json));
    }
    if (object.size() == 2 && object.containsKey("schema") && object.containsKey("payload")) {
      Object payload = object.get("payload");
      if (!(payload instanceof Map<?, ?>)) {
        throw new Values.ValueException("payload", "expected a JSON object as the message " + what + "'s payload, "
            + "got " + Json.kind(payload));
      }
      return (Map<String, Object>) payload;
    }
    return (Map<String, Object>) object;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> row(Map<String, Object> envelope, String field, String op)
      throws Values.ValueException {
    Object row = envelope.get(field);
    if (!(row instanceof Map<?, ?>)) {
      throw new Values.ValueException(field, "a Debezium event with op '" + op + "' needs a JSON object in '"
          + field + "', got " + Json.kind(row));
    }
    return (Map<String, Object>) row;
  }

  private static Map<String, Object> keyRow(Object key) throws Values.ValueException {
    if (key == null) {
      throw new Values.ValueException("before", "a Debezium delete event with no 'before' row and no JSON key: "
          + "the deleted row's key is unknown");
    }
    return payload(key, "key");
  }
}
