package dev.lakecommit.ingest.source;

import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.types.Types;

/** JSON lines: one object per line; blank lines are skipped. Offsets are bytes, counts are lines. */
final class JsonFileRecords implements FileRecords {
  private final String file;
  private final Schema schema;
  private final TextRecords lines;
  private final Json.Lines parser = new Json.Lines();
  private long offset;
  private long count;
  /** The first line of the current record. */
  private long line;
  private JsonRecords direct;
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
    if (lines.ascii() && JsonRecords.enabled) {
      if (direct == null) {
        direct = new JsonRecords(schema.asStruct());
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
