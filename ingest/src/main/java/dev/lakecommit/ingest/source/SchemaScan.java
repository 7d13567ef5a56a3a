package dev.lakecommit.ingest.source;

import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import org.apache.avro.file.DataFileStream;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.iceberg.Schema;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;

/**
 * Reads every record of the input once, for its top-level columns only: JSON lines with a streaming parse that
 * skips the values of known columns, CSV headers (and the cells of new columns), Parquet footers and Avro headers.
 * Records that cannot be parsed are skipped here: the read reports them.
 */
final class SchemaScan {
  private final Schema schema;
  /** The schema's top-level columns by name: looked up for every field of every JSON line. */
  private final Map<String, Types.NestedField> columns = new HashMap<>();
  private final InputFormat format;
  private final Map<String, SchemaDrift.Column> seen = new LinkedHashMap<>();
  private final Map<String, SchemaDrift.Column> firstNew = new LinkedHashMap<>();
  private final Map<String, SchemaDrift.Column> fileTyped = new LinkedHashMap<>();
  private final Map<String, SchemaDrift.Column> widened = new LinkedHashMap<>();
  private final List<String> conflicts = new ArrayList<>();
  private final Inference inference = new Inference();
  /** Fields inside known struct columns that the schema lacks, by dotted path: where each first appears. */
  private final Map<String, SchemaDrift.Column> nestedNew = new LinkedHashMap<>();
  /** Every field inside a known struct column, new or not, by dotted path: where each first appears. */
  private final Map<String, SchemaDrift.Column> nestedSeen = new LinkedHashMap<>();
  private final Map<String, Type> nestedTyped = new LinkedHashMap<>();
  /** Values of new nested JSON fields, each under its dotted path as a column name. */
  private final Inference nestedInference = new Inference();
  /** What the JSON line being parsed adds, done once it has parsed whole: a line that breaks adds nothing. */
  private final List<Runnable> pending = new ArrayList<>();
  /** The keys of the line being parsed, top-level and (dotted) inside struct columns: a repeated key breaks it. */
  private final Set<String> lineKeys = new HashSet<>();
  /** Test switch: false parses every JSON line, also those whose keys are all {@link #settled}. */
  static volatile boolean skipSettledLines = true;
  /** For tests: JSON lines skipped unparsed by all scans. */
  static final LongAdder SKIPPED_UNPARSED = new LongAdder();
  private final SettledColumns settled = new SettledColumns();

  SchemaScan(Schema schema, InputFormat format) {
    this.schema = schema;
    this.format = format;
    for (Types.NestedField column : schema.columns()) {
      columns.put(column.name(), column);
    }
  }

  void file(String file, InputFile in) throws IOException {
    try {
      switch (format) {
        case JSON -> json(file, in);
        case CSV -> csv(file, in);
        case PARQUET -> typed(file, ParquetFileRecords.fileSchema(
            ParquetFileRecords.footer(file, in).getFileMetaData().getSchema()));
        default -> avro(file, in);
      }
    } catch (BadRecordException e) {
      // a file that cannot be read as its format is reported when read
    } catch (IOException | RuntimeException e) {
      if (!Storage.isNotFound(e)) {
        throw e;
      }
    }
  }

  /**
   * An empty scan with the same schema and format, for one file scanned on a thread of its own; its findings join
   * this scan's through {@link #merge}. Only JSON and CSV scans have parts ({@link InputFormat#lineBased()}): a
   * Parquet or Avro file's widenings depend on the files before it.
   */
  SchemaScan part() {
    if (!format.lineBased()) {
      throw new IllegalStateException("a " + format + " scan reads its files in order");
    }
    return new SchemaScan(schema, format);
  }

  /**
   * Adds what a {@linkplain #part() part} found in the next file, as if this scan had read that file itself: a
   * column keeps the place it first appears at in file order, and the types its values suggest join those of the
   * files before (the join of {@link Inference#merge} does not depend on grouping).
   */
  void merge(SchemaScan part) {
    part.seen.forEach((name, column) ->
        see(name, column.file(), column.line(), column.lineBased(), part.firstNew.containsKey(name)));
    inference.addAll(part.inference);
    part.nestedSeen.forEach(nestedSeen::putIfAbsent);
    part.nestedNew.forEach(nestedNew::putIfAbsent);
    nestedInference.addAll(part.nestedInference);
  }

  SchemaDrift result() {
    List<SchemaDrift.Column> added = new ArrayList<>();
    Schema inferred = inference.isEmpty() ? new Schema() : inference.schema();
    for (SchemaDrift.Column column : firstNew.values()) {
      SchemaDrift.Column typed = fileTyped.get(column.name());
      Type type = typed != null ? typed.type() : inferred.findField(column.name()).type();
      added.add(new SchemaDrift.Column(column.name(), type, column.file(), column.line(), column.lineBased()));
    }
    List<SchemaDrift.Column> nested = new ArrayList<>();
    Schema nestedInferred = nestedInference.isEmpty() ? new Schema() : nestedInference.schema();
    for (SchemaDrift.Column column : nestedNew.values()) {
      Type type = nestedTyped.get(column.name());
      if (type == null) {
        type = nestedInferred.columns().stream().filter(f -> f.name().equals(column.name())).findFirst()
            .map(Types.NestedField::type).orElse(Types.StringType.get());
      }
      nested.add(new SchemaDrift.Column(column.name(), type, column.file(), column.line(), column.lineBased()));
    }
    return new SchemaDrift(schema, seen, added, nested, widened, conflicts, nestedSeen);
  }

  private Types.NestedField known(String name, boolean ignoreCase) {
    Types.NestedField field = columns.get(name);
    if (field != null || !ignoreCase) {
      return field;
    }
    field = schema.caseInsensitiveFindField(name);
    return field != null && schema.columns().contains(field) ? field : null;
  }

  private void see(String name, String file, long line, boolean lineBased, boolean isNew) {
    if (!seen.containsKey(name)) {
      SchemaDrift.Column column = new SchemaDrift.Column(name, null, file, line, lineBased);
      seen.put(name, column);
      if (isNew) {
        firstNew.put(name, column);
      }
    }
  }

  private void json(String file, InputFile in) throws IOException {
    try (TextRecords lines = new TextRecords(TextRecords.openAt(file, in, 0), 0, false,
        FileSource.MAX_RECORD_BYTES); Json.Lines reused = new Json.Lines()) {
      long count = 0;
      while (lines.next()) {
        long line = count + 1;
        count += lines.lines();
        if (lines.blank() || lines.overlong()) {
          continue;
        }
        if (lines.ascii()) {
          if (skipSettledLines && settled.coversKeysOf(lines.bytes(), lines.length(), seen.size())) {
            SKIPPED_UNPARSED.increment();
            continue; // nothing in it to see
          }
          try {
            if (object(reused.feed(lines.bytes(), lines.length()), file, line)) {
              reused.endsLine(); // what follows the object is not read: it only decides the parser's reuse
            } else {
              reused.drop();
            }
          } catch (IOException | RuntimeException e) {
            reused.drop(); // malformed: nothing of it was seen, and the read reports it
          }
          continue;
        }
        String text;
        try {
          text = lines.text();
        } catch (CharacterCodingException e) {
          continue;
        }
        try (JsonParser parser = Json.FACTORY.createParser(text)) {
          object(parser, file, line);
        } catch (IOException | RuntimeException e) {
          continue; // malformed: the read reports it
        }
      }
    }
  }

  /**
   * The schema's top-level columns that the scan has seen and that are not structs: a JSON line can add something
   * about them only where it is the first to hold them. A line whose top-level keys are all such columns adds
   * nothing, valid or not (a line that breaks adds nothing either), so it is not parsed: its keys are found by a
   * walk over its bytes that follows strings and nesting only. Most lines of most inputs are such lines.
   */
  private final class SettledColumns {
    private int builtFor = -1;
    private byte[][] names = new byte[1][];
    private int mask;

    /**
     * Whether every top-level key of the ASCII line is a settled column; false also for a key with an escape, an
     * unterminated string or a line that the walk cannot follow, which are then parsed.
     *
     * @param seenCount how many columns the scan has seen: the set is built again when it grows
     */
    boolean coversKeysOf(byte[] line, int length, int seenCount) {
      if (seenCount != builtFor) {
        build(seenCount);
      }
      int depth = 0;
      int i = 0;
      while (i < length) {
        byte b = line[i];
        if (b == '"') {
          int start = ++i;
          boolean escaped = false;
          while (i < length && line[i] != '"') {
            if (line[i] == '\\') {
              escaped = true;
              i++;
            }
            i++;
          }
          if (i >= length) {
            return false;
          }
          int end = i++;
          if (depth == 1) {
            int next = i;
            while (next < length && Json.whitespace(line[next])) {
              next++;
            }
            if (next < length && line[next] == ':' && (escaped || !contains(line, start, end))) {
              return false;
            }
          }
        } else {
          if (b == '{' || b == '[') {
            depth++;
          } else if (b == '}' || b == ']') {
            depth--;
          }
          i++;
        }
      }
      return true;
    }

    private void build(int seenCount) {
      List<byte[]> settledNames = new ArrayList<>();
      for (Types.NestedField column : schema.columns()) {
        if (!column.type().isStructType() && seen.containsKey(column.name())) {
          settledNames.add(column.name().getBytes(StandardCharsets.UTF_8));
        }
      }
      int size = Integer.highestOneBit(Math.max(1, settledNames.size()) * 4);
      names = new byte[size][];
      mask = size - 1;
      for (byte[] name : settledNames) {
        int slot = hash(name, 0, name.length) & mask;
        while (names[slot] != null) {
          slot = (slot + 1) & mask;
        }
        names[slot] = name;
      }
      builtFor = seenCount;
    }

    private boolean contains(byte[] line, int start, int end) {
      for (int slot = hash(line, start, end) & mask; names[slot] != null; slot = (slot + 1) & mask) {
        if (Arrays.equals(names[slot], 0, names[slot].length, line, start, end)) {
          return true;
        }
      }
      return false;
    }

    private static int hash(byte[] bytes, int start, int end) {
      int hash = 1;
      for (int i = start; i < end; i++) {
        hash = 31 * hash + bytes[i];
      }
      return hash ^ (hash >>> 16);
    }
  }

  /**
   * Sees the columns of the line's object, new ones with their values; false if the line is not an object.
   *
   * @throws IOException if the object is malformed or ends before it is closed: then nothing of it is seen (the
   *     read reports the line as a bad record)
   */
  private boolean object(JsonParser parser, String file, long line) throws IOException {
    pending.clear();
    lineKeys.clear();
    if (parser.nextToken() != JsonToken.START_OBJECT) {
      return false;
    }
    Map<String, Object> fresh = null;
    JsonToken token;
    for (token = parser.nextToken(); token == JsonToken.FIELD_NAME; token = parser.nextToken()) {
      String name = parser.currentName();
      if (!lineKeys.add(name)) {
        throw new JsonParseException(parser, "Duplicate field '" + name + "'"); // the read refuses the line
      }
      JsonToken value = parser.nextToken();
      Types.NestedField field = known(name, false);
      if (!seen.containsKey(name)) {
        boolean isNew = field == null;
        pending.add(() -> see(name, file, line, true, isNew));
      }
      if (field != null) {
        if (field.type().isStructType() && value == JsonToken.START_OBJECT) {
          struct(parser, field.type().asStructType(), name, file, line);
        } else {
          parser.skipChildren();
        }
      } else {
        if (fresh == null) {
          fresh = new LinkedHashMap<>();
        }
        fresh.put(name, Json.value(parser, value));
      }
    }
    if (token != JsonToken.END_OBJECT) {
      throw new JsonParseException(parser, "the object ends early"); // a fed line's parser: not all of it there
    }
    pending.forEach(Runnable::run);
    if (fresh != null) {
      inference.addJson(fresh);
    }
    return true;
  }

  /** The fields of a JSON object read as a known struct column: the new ones are seen, their values inferred. */
  private void struct(JsonParser parser, Types.StructType struct, String path, String file, long line)
      throws IOException {
    for (JsonToken token = parser.nextToken(); token == JsonToken.FIELD_NAME; token = parser.nextToken()) {
      String name = parser.currentName();
      JsonToken value = parser.nextToken();
      Types.NestedField field = struct.field(name);
      String nested = path + "." + name;
      if (!lineKeys.add(nested)) {
        throw new JsonParseException(parser, "Duplicate field '" + nested + "'");
      }
      if (!nestedSeen.containsKey(nested)) {
        pending.add(() -> nestedSeen.putIfAbsent(nested, new SchemaDrift.Column(nested, null, file, line, true)));
      }
      if (field == null) {
        Map<String, Object> one = new HashMap<>();
        one.put(nested, Json.value(parser, value));
        pending.add(() -> {
          nestedNew.putIfAbsent(nested, new SchemaDrift.Column(nested, null, file, line, true));
          nestedInference.addJson(one);
        });
      } else if (field.type().isStructType() && value == JsonToken.START_OBJECT) {
        struct(parser, field.type().asStructType(), nested, file, line);
      } else {
        parser.skipChildren();
      }
    }
  }

  /** Parquet and Avro: fields of a file's struct column that the schema's struct lacks, at every depth. */
  private void typedStruct(Types.StructType known, Types.StructType inFile, String path, String file) {
    for (Types.NestedField column : inFile.fields()) {
      Types.NestedField field = known.field(column.name());
      if (field == null) {
        field = known.caseInsensitiveField(column.name());
      }
      String nested = path + "." + column.name();
      nestedSeen.putIfAbsent(nested, new SchemaDrift.Column(nested, null, file, 0, false));
      if (field == null) {
        nestedNew.putIfAbsent(nested, new SchemaDrift.Column(nested, null, file, 0, false));
        nestedTyped.putIfAbsent(nested, column.type());
      } else if (field.type().isStructType() && column.type().isStructType()) {
        typedStruct(field.type().asStructType(), column.type().asStructType(), path + "." + field.name(), file);
      }
    }
  }

  private void csv(String file, InputFile in) throws IOException {
    try (CsvFileRecords records = new CsvFileRecords(file, in, null, 0, 0, FileSource.MAX_RECORD_BYTES)) {
      List<String> header = records.header();
      if (header == null) {
        return;
      }
      List<Integer> fresh = new ArrayList<>();
      Map<String, Integer> lower = new HashMap<>();
      header.forEach(name -> lower.merge(name.toLowerCase(Locale.ROOT), 1, Integer::sum));
      for (int i = 0; i < header.size(); i++) {
        String name = header.get(i);
        boolean isKnown = known(name, lower.get(name.toLowerCase(Locale.ROOT)) == 1) != null;
        see(name, file, 1, true, !isKnown);
        if (!isKnown) {
          fresh.add(i);
          inference.declare(name);
        }
      }
      if (fresh.isEmpty()) {
        return;
      }
      List<String> names = fresh.stream().map(header::get).toList();
      while (true) {
        List<String> row;
        try {
          row = records.nextRow();
        } catch (BadRecordException e) {
          continue;
        }
        if (row == null) {
          break;
        }
        List<String> cells = new ArrayList<>(fresh.size());
        fresh.forEach(i -> cells.add(row.get(i)));
        inference.addText(names, cells);
      }
    }
  }

  private void avro(String file, InputFile in) throws IOException {
    if (in.getLength() == 0) {
      return;
    }
    org.apache.avro.Schema avro;
    try (DataFileStream<Object> stream = new DataFileStream<>(in.newStream(), new GenericDatumReader<>())) {
      avro = stream.getSchema();
    } catch (IOException | RuntimeException e) {
      if (Storage.isNotFound(e)) {
        throw e;
      }
      return; // not Avro: reported when read
    }
    Schema fileSchema;
    try {
      fileSchema = AvroFileRecords.fileSchema(avro);
    } catch (IllegalArgumentException e) {
      return; // a union without a widest type: reported when read
    }
    typed(file, fileSchema);
  }

  /** Parquet and Avro: the columns of the file's own schema. */
  private void typed(String file, Schema fileSchema) {
    for (Types.NestedField column : fileSchema.columns()) {
      String name = column.name();
      Types.NestedField field = known(name, true);
      if (field == null) {
        SchemaDrift.Column before = fileTyped.get(name);
        Type type = TypeUtil.assignIncreasingFreshIds(new Schema(Types.NestedField.optional(1, "x", column.type())))
            .findField("x").type();
        see(name, file, 0, false, true);
        if (before == null) {
          fileTyped.put(name, new SchemaDrift.Column(name, type, file, 0, false));
        } else {
          Type wider = wider(before.type(), type);
          if (wider == null) {
            conflicts.add(change(name, before.type(), before.file(), type, file));
          } else {
            fileTyped.put(name, new SchemaDrift.Column(name, wider, before.file(), 0, false));
          }
        }
        continue;
      }
      see(field.name(), file, 0, false, false);
      if (field.type().isStructType() && column.type().isStructType()) {
        typedStruct(field.type().asStructType(), column.type().asStructType(), field.name(), file);
      }
      SchemaDrift.Column already = widened.get(field.name());
      Type current = already != null ? already.type() : field.type();
      Type wider = wider(current, column.type());
      if (wider == null) {
        conflicts.add(change(field.name(), current, already != null ? already.file() : "the source schema",
            column.type(), file));
      } else if (!SchemaDrift.sameShape(wider, current)) {
        widened.put(field.name(), new SchemaDrift.Column(field.name(), wider, file, 0, false));
      }
    }
  }

  /** The type that reads both (the same shape, or the wider of two promotable primitives), or null. */
  private static Type wider(Type a, Type b) {
    Type wider = dev.lakecommit.iceberg.TypeWidening.wider(a, b);
    if (wider != null) {
      return wider;
    }
    if (!a.isPrimitiveType() && !b.isPrimitiveType() && a.typeId() == b.typeId()) {
      return a; // nested columns are matched field by field when read
    }
    return null;
  }

  private static String change(String name, Type before, String beforeWhere, Type now, String file) {
    return "Column '" + name + "' changes type: " + before + " in " + beforeWhere + ", " + now + " in " + file
        + "; only int to long, float to double and wider decimals are followed";
  }
}
