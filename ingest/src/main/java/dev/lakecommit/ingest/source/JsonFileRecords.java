package dev.lakecommit.ingest.source;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.types.Types;

/** JSON lines: one object per line; blank lines are skipped. Offsets are bytes, counts are lines. */
final class JsonFileRecords implements FileRecords {
  /** Test switch: false reads every line the map's way, not {@link Direct}ly. */
  static volatile boolean directRecords = true;
  private final String file;
  private final Schema schema;
  private final TextRecords lines;
  private final Json.Lines parser = new Json.Lines();
  private long offset;
  private long count;
  /** The first line of the current record. */
  private long line;
  private Direct direct;
  private long checksum;
  private boolean strictColumns;

  /**
   * @param schema the records' schema, or null to read objects only ({@link #nextObject()})
   * @param offset where the next line starts
   * @param count lines before it
   */
  JsonFileRecords(String file, InputFile input, Schema schema, long offset, long count, int maxLineBytes)
      throws IOException {
    this(file, input, schema, offset, count, TextRecords.EMPTY_CHECKSUM, maxLineBytes);
  }

  /** @param checksum the checksum of the bytes before {@code offset} */
  JsonFileRecords(String file, InputFile input, Schema schema, long offset, long count, long checksum,
      int maxLineBytes) throws IOException {
    this.file = file;
    this.schema = schema;
    this.offset = offset;
    this.count = count;
    this.checksum = checksum;
    java.io.InputStream stream = TextRecords.openAt(file, input, offset);
    try {
      this.lines = new TextRecords(stream, offset, checksum, false, maxLineBytes);
    } catch (IOException | RuntimeException e) {
      stream.close();
      throw e;
    }
  }

  /** Fails the read (not as a bad record) on a field the schema lacks; see {@link FileSource#evolve}. */
  JsonFileRecords strictColumns(boolean strict) {
    this.strictColumns = strict;
    return this;
  }

  @Override
  public Record next() throws IOException {
    if (!advance()) {
      return null;
    }
    if (lines.ascii() && directRecords) {
      if (direct == null) {
        direct = new Direct(schema.asStruct());
      }
      Record record = direct.read(parser, lines.bytes(), lines.length(), strictColumns);
      if (record != null) {
        return record;
      }
    }
    Map<String, Object> object = object();
    if (strictColumns && object.size() > 0) {
      checkColumns(object);
    }
    try {
      return Values.record(schema.asStruct(), object, null);
    } catch (Values.ValueException e) {
      throw BadRecordException.record(file, count, true, e.field(), e.getMessage(), lines.lenientText());
    }
  }

  private void checkColumns(Map<String, Object> object) throws IOException {
    int known = 0;
    for (Types.NestedField field : schema.columns()) {
      if (object.containsKey(field.name())) {
        known++;
      }
    }
    if (known == object.size()) {
      return;
    }
    for (String name : object.keySet()) {
      if (schema.asStruct().field(name) == null) {
        throw new IOException("Column '" + name + "' in " + file + " line " + count + " was not in the input when "
            + "it was scanned before the run: the file changed while it was read; run again");
      }
    }
  }

  /** The next line's object, or null at the end. */
  Map<String, Object> nextObject() throws IOException {
    return advance() ? object() : null;
  }

  /**
   * Moves to the next line that is not blank; false at the end.
   *
   * @throws BadRecordException if the line is longer than the limit
   */
  private boolean advance() throws IOException {
    while (lines.next()) {
      line = count + 1;
      count += lines.lines();
      offset = lines.nextOffset();
      checksum = lines.checksum();
      if (lines.blank()) {
        continue;
      }
      if (lines.overlong()) {
        throw bad(line, "line is longer than " + lines.lenientText().length() + " bytes, the limit");
      }
      return true;
    }
    return false;
  }

  /** The current line's object. */
  @SuppressWarnings("unchecked")
  private Map<String, Object> object() {
    Object json;
    try {
      // an ASCII line (most are) is parsed from its bytes; any other is decoded first, so that invalid UTF-8
      // is found and message columns count characters
      json = lines.ascii() ? parser.parse(lines.bytes(), lines.length()) : Json.parse(text(line));
    } catch (Json.SyntaxException e) {
      throw bad(line, e.getMessage());
    }
    if (!(json instanceof Map)) {
      throw bad(line, "expected a JSON object, got " + Json.kind(json));
    }
    return (Map<String, Object>) json;
  }

  /**
   * Reads an ASCII line straight into a record of the schema, without the map of its object in between: each
   * top-level value is converted as {@link Values#record} converts it, into its column's place. Any line that this
   * does not read whole and without a fault (malformed, a duplicate key, a value that does not fit, a required
   * column missing, a column the schema lacks when those fail the read) is read again the map's way, which reports
   * it exactly as before: that way also decides which fault of a line with several is the one reported.
   */
  private static final class Direct {
    private final List<Types.NestedField> fields;
    private final Map<String, Integer> positions = new HashMap<>();
    private final GenericRecord template;
    private final boolean[] present;

    Direct(Types.StructType struct) {
      this.fields = struct.fields();
      for (int i = 0; i < fields.size(); i++) {
        positions.put(fields.get(i).name(), i);
      }
      this.template = GenericRecord.create(struct);
      this.present = new boolean[fields.size()];
    }

    /** The line's record, or null if it must be read the map's way. */
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

  private String text(long line) {
    try {
      return lines.text();
    } catch (CharacterCodingException e) {
      throw bad(line, "not valid UTF-8 (byte " + (lines.firstInvalidByte() + 1) + " of the line)");
    }
  }

  private BadRecordException bad(long line, String reason) {
    return BadRecordException.record(file, line, true, null, reason, lines.lenientText());
  }

  @Override
  public long offset() {
    return offset;
  }

  @Override
  public long count() {
    return count;
  }

  @Override
  public long checksum() {
    return checksum;
  }

  @Override
  public void close() throws IOException {
    parser.close();
    lines.close();
  }
}
