package dev.lakecommit.ingest.source;

import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.nio.charset.CharacterCodingException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVParser;
import org.apache.commons.csv.CSVRecord;
import org.apache.commons.csv.QuoteMode;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.types.Types;

/**
 * CSV with a header row (RFC 4180, parsed by commons-csv). Records are split on bytes first ({@link TextRecords},
 * which keeps line feeds inside quoted fields), so the offset of every record is exact and a reader resumes at a
 * byte offset, with the header read again from the start of the file. An unquoted empty cell is null, a quoted
 * empty cell an empty string. Columns are matched to the schema by name (exactly, else ignoring case); header
 * columns the schema lacks are not read, schema columns the header lacks are null. Offsets are bytes, counts are
 * lines (the header is line 1).
 */
final class CsvFileRecords implements FileRecords {
  private static final CSVFormat FORMAT = CSVFormat.RFC4180.builder()
      .setQuoteMode(QuoteMode.ALL_NON_NULL) // with no null string: ,, is null and ,"", is ""
      .setIgnoreEmptyLines(false)
      .get();

  private final String file;
  private final Schema schema;
  private final TextRecords lines;
  private List<String> header;
  private int[] columnOf;
  private long offset;
  private long count;
  private long checksum;
  private long recordLine;
  private boolean strictColumns;

  /**
   * @param schema the records' schema, or null to read rows only ({@link #header()}, {@link #nextRow()})
   * @param offset where the next record starts; 0 = the start of the file (before the header)
   * @param count lines before it
   */
  CsvFileRecords(String file, InputFile input, Schema schema, long offset, long count, int maxRecordBytes)
      throws IOException {
    this(file, input, schema, offset, count, TextRecords.EMPTY_CHECKSUM, maxRecordBytes);
  }

  /** @param checksum the checksum of the bytes before {@code offset} */
  CsvFileRecords(String file, InputFile input, Schema schema, long offset, long count, long checksum,
      int maxRecordBytes) throws IOException {
    this.file = file;
    this.schema = schema;
    this.offset = offset;
    this.count = count;
    this.checksum = checksum;
    if (offset > 0) {
      try (TextRecords start = new TextRecords(TextRecords.openAt(file, input, 0), 0, true, maxRecordBytes)) {
        readHeader(start, 0);
      }
    }
    java.io.InputStream stream = TextRecords.openAt(file, input, offset);
    try {
      this.lines = new TextRecords(stream, offset, checksum, true, maxRecordBytes);
      if (offset == 0) {
        readHeader(lines, count);
        this.offset = lines.nextOffset();
        this.checksum = lines.checksum();
        this.count += lines.lines();
      }
    } catch (IOException | RuntimeException e) {
      stream.close();
      throw e;
    }
  }

  private void readHeader(TextRecords records, long linesBefore) throws IOException {
    if (!records.next()) {
      return; // an empty file: no header, no records
    }
    long line = linesBefore + 1;
    if (records.overlong() || records.unterminatedQuote()) {
      throw BadRecordException.file(file, line, true, "the header is " + (records.overlong() ? "too long"
          : "not closed (unterminated quote)"), null);
    }
    List<String> names;
    try {
      names = parse(records.text());
    } catch (CharacterCodingException e) {
      throw BadRecordException.file(file, line, true, "the header is not valid UTF-8", null);
    } catch (IllegalArgumentException e) {
      throw BadRecordException.file(file, line, true, "malformed CSV header: " + e.getMessage(), null);
    }
    Map<String, Integer> exact = new HashMap<>();
    for (int i = 0; i < names.size(); i++) {
      String name = names.get(i);
      if (name == null || name.isBlank()) {
        throw BadRecordException.file(file, line, true, "header column " + (i + 1) + " has no name", null);
      }
      if (exact.put(name, i) != null) {
        throw BadRecordException.file(file, line, true, "header column '" + name + "' appears twice", null);
      }
    }
    this.header = names;
    if (schema != null) {
      mapColumns(exact, line);
    }
  }

  private void mapColumns(Map<String, Integer> exact, long line) {
    Map<String, Integer> lower = new HashMap<>();
    exact.forEach((name, index) -> lower.merge(name.toLowerCase(Locale.ROOT), index, (a, b) -> -1));
    List<Types.NestedField> fields = schema.columns();
    columnOf = new int[fields.size()];
    for (int i = 0; i < fields.size(); i++) {
      Types.NestedField field = fields.get(i);
      Integer column = exact.get(field.name());
      if (column == null) {
        column = lower.get(field.name().toLowerCase(Locale.ROOT));
      }
      if (column == null || column < 0) {
        if (field.isRequired()) {
          throw BadRecordException.file(file, line, true, "required column '" + field.name()
              + "' is not in the header " + header, null);
        }
        column = -1;
      }
      columnOf[i] = column;
    }
  }

  /**
   * Fails the read (not as a bad record) on a header column the schema lacks; see {@link FileSource#evolve}. Only
   * for a reader with a schema.
   */
  CsvFileRecords strictColumns(boolean strict) throws IOException {
    this.strictColumns = strict;
    if (strict && header != null) {
      for (String name : header) {
        if (schema.findField(name) == null && schema.caseInsensitiveFindField(name) == null) {
          lines.close();
          throw new IOException("Column '" + name + "' in the header of " + file + " was not in the input when it "
              + "was scanned before the run: the file changed while it was read; run again");
        }
      }
    }
    return this;
  }

  /** The header's column names, or null for an empty file. */
  List<String> header() {
    return header;
  }

  @Override
  public Record next() throws IOException {
    List<String> row = nextRow();
    if (row == null) {
      return null;
    }
    List<Types.NestedField> fields = schema.columns();
    GenericRecord record = GenericRecord.create(schema);
    for (int i = 0; i < fields.size(); i++) {
      Types.NestedField field = fields.get(i);
      String cell = columnOf[i] < 0 ? null : row.get(columnOf[i]);
      Object value = null;
      if (cell != null) {
        try {
          value = Values.fromText(field.type(), cell, field.name());
        } catch (Values.ValueException e) {
          throw BadRecordException.record(file, recordLine, true, e.field(), e.getMessage(),
              lines.lenientText());
        }
      } else if (field.isRequired()) {
        throw BadRecordException.record(file, recordLine, true, field.name(), "is empty but required",
            lines.lenientText());
      }
      record.set(i, value);
    }
    return record;
  }

  /** The next row's cells (null for an unquoted empty cell), or null at the end. */
  List<String> nextRow() throws IOException {
    if (header == null) {
      return null;
    }
    while (lines.next()) {
      recordLine = count + 1;
      count += lines.lines();
      offset = lines.nextOffset();
      checksum = lines.checksum();
      if (lines.empty()) {
        continue;
      }
      if (lines.overlong()) {
        throw bad("record is longer than " + lines.lenientText().length() + " bytes, the limit");
      }
      if (lines.quoteCut()) {
        throw bad("unterminated quoted field: the quote opened on this line is not closed within "
            + TextRecords.MAX_QUOTED_LINES + " lines or before the end of the file; only this line is rejected, "
            + "reading goes on at the next line");
      }
      if (lines.unterminatedQuote()) {
        throw bad("unterminated quoted field: the file ends inside quotes");
      }
      List<String> cells;
      try {
        cells = parse(lines.text());
      } catch (CharacterCodingException e) {
        throw bad("not valid UTF-8 (byte " + (lines.firstInvalidByte() + 1) + " of the record)");
      } catch (IllegalArgumentException e) {
        throw bad("malformed CSV: " + e.getMessage());
      }
      if (cells.size() != header.size()) {
        throw bad("the row has " + cells.size() + " column" + (cells.size() == 1 ? "" : "s") + ", the header has "
            + header.size());
      }
      return cells;
    }
    return null;
  }

  private BadRecordException bad(String reason) {
    return BadRecordException.record(file, recordLine, true, null, reason, lines.lenientText());
  }

  /** The cells of exactly one CSV record. */
  static List<String> parse(String text) {
    List<String> plain = splitPlain ? splitPlain(text) : null;
    if (plain != null) {
      return plain;
    }
    try (CSVParser parser = FORMAT.parse(new StringReader(text))) {
      List<CSVRecord> records = parser.getRecords();
      if (records.size() != 1) {
        throw new IllegalArgumentException("expected one record, found " + records.size());
      }
      CSVRecord record = records.get(0);
      List<String> cells = new ArrayList<>(record.size());
      for (int i = 0; i < record.size(); i++) {
        cells.add(record.get(i));
      }
      return cells;
    } catch (IOException | UncheckedIOException e) {
      String message = e instanceof UncheckedIOException ? e.getCause().getMessage() : e.getMessage();
      throw new IllegalArgumentException(message, e);
    }
  }

  /** Test-only: false parses every record with commons-csv, as before the plain split. */
  static volatile boolean splitPlain = true;

  /**
   * The cells of a record without quotes, split on commas: what commons-csv makes of it (an empty cell is null), at
   * a fraction of the cost of a parser per record. Null for anything else — a quote, a line break other than one
   * ending the text, an empty text — which the parser then reads, for the same cells or the same error.
   */
  static List<String> splitPlain(String text) {
    int end = text.length();
    if (end > 0 && text.charAt(end - 1) == '\n') {
      end--;
      if (end > 0 && text.charAt(end - 1) == '\r') {
        end--;
      }
    }
    if (end == 0) {
      return null;
    }
    List<String> cells = new ArrayList<>();
    int start = 0;
    for (int i = 0; i < end; i++) {
      char c = text.charAt(i);
      if (c == ',') {
        cells.add(i == start ? null : text.substring(start, i));
        start = i + 1;
      } else if (c == '"' || c == '\r' || c == '\n') {
        return null;
      }
    }
    cells.add(end == start ? null : text.substring(start, end));
    return cells;
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
    lines.close();
  }
}
