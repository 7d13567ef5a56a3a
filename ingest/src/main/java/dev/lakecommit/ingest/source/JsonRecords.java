package dev.lakecommit.ingest.source;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * Reads a JSON object (an ASCII line or message) straight into a record of a struct, without the map of the object
 * in between: each top-level value is converted as {@link Values#record} converts it, into its column's place. An
 * object that this does not read whole and without a fault (malformed, a duplicate key, a value that does not fit, a
 * required column missing, a column the struct lacks where those are refused) gives null: the caller reads it again
 * the map's way ({@link Json#parse}, {@link Values#record}), which reports it exactly as before and also decides which
 * fault of an object with several is the one reported. Not thread-safe.
 */
final class JsonRecords {
  /** Test switch: false reads every object the map's way. */
  static volatile boolean enabled = true;
  private final List<Types.NestedField> fields;
  private final Map<String, Integer> positions = new HashMap<>();
  private final GenericRecord template;
  private final boolean[] present;

  JsonRecords(Types.StructType struct) {
    this.fields = struct.fields();
    for (int i = 0; i < fields.size(); i++) {
      positions.put(fields.get(i).name(), i);
    }
    this.template = GenericRecord.create(struct);
    this.present = new boolean[fields.size()];
  }

  /**
   * The object's record, or null if it must be read the map's way.
   *
   * @param lines the parser to feed, one per input: kept for the next object if this one is read whole
   * @param strictColumns whether a key the struct lacks is refused
   */
  Record read(Json.Lines lines, byte[] bytes, int length, boolean strictColumns) {
    try {
      JsonParser parser = lines.feed(bytes, length);
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        lines.drop();
        return null;
      }
      Arrays.fill(present, false);
      GenericRecord record = template.copy();
      Set<String> others = null;
      JsonToken token;
      for (token = parser.nextToken(); token == JsonToken.FIELD_NAME; token = parser.nextToken()) {
        String name = parser.currentName();
        Integer position = positions.get(name);
        JsonToken value = parser.nextToken();
        if (position == null) {
          if (strictColumns || !(others == null ? others = new HashSet<>() : others).add(name)) {
            lines.drop();
            return null;
          }
          Json.value(parser, value); // not kept, but parsed as the map's way parses it
          continue;
        }
        int i = position;
        if (present[i]) {
          lines.drop();
          return null;
        }
        present[i] = true;
        Types.NestedField field = fields.get(i);
        record.set(i, Values.fromJson(field.type(), Json.value(parser, value), field.name()));
      }
      if (token != JsonToken.END_OBJECT || !lines.endsLine()) {
        lines.drop();
        return null;
      }
      for (int i = 0; i < fields.size(); i++) {
        if (fields.get(i).isRequired() && record.get(i) == null) {
          return null; // missing or null: reported by the map's way
        }
      }
      return record;
    } catch (IOException | RuntimeException | Values.ValueException e) {
      lines.drop();
      return null;
    }
  }
}
