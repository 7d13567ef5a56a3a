package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.runtime.CheckpointedSource.SourceReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad input either stops the reader with a message naming the file, the line or record and the field, or, with a
 * sink, goes to the sink with its reason and is skipped; good records are never lost either way.
 */
class BadInputTest {
  private static final Schema SCHEMA = SchemaParser.parse("id long not null, amount decimal(6,2), name string, "
      + "ok boolean");

  @TempDir
  Path dir;

  private static final String[] JSON = {
      "{\"id\": 1, \"amount\": 1.5, \"name\": \"a\", \"ok\": true}",
      "{\"id\": 2, \"amount\": 2, \"name\": \"b\"",                      // truncated
      "{\"id\": \"three\", \"amount\": 3, \"name\": \"c\"}",             // wrong type
      "{\"id\": 99999999999999999999, \"name\": \"d\"}",                 // overflows long
      "{\"id\": 5, \"amount\": 12345.678}",                              // too many decimals
      "{\"id\": 6, \"amount\": 123456}",                                 // does not fit decimal(6,2)
      "{\"amount\": 7}",                                                 // required id missing
      "[1, 2]",                                                          // not an object
      "{\"id\": 9, \"id\": 10}",                                         // duplicate key
      "{\"id\": 11} {\"id\": 12}",                                     // trailing content
      "{\"id\": 12, \"ok\": \"yes\"}",                                   // wrong type
      "{\"id\": 13, \"name\": \"m\"}"};

  @Test
  void eachBadJsonLineStopsTheReaderNamingFileLineAndField() throws IOException {
    Path file = Sources.lines(dir.resolve("in.jsonl"), JSON);
    String[][] expected = {
        {"2", null, "Unexpected end-of-input"},
        {"3", "id", "expected long, got a string \"three\""},
        {"4", "id", "overflows long"},
        {"5", "amount", "has more than 2 decimal places"},
        {"6", "amount", "does not fit decimal(6, 2)"},
        {"7", "id", "is missing but required"},
        {"8", null, "expected a JSON object, got an array"},
        {"9", null, "Duplicate field 'id'"},
        {"10", null, "after the JSON value"},
        {"11", "ok", "expected boolean, got a string"}};
    for (String[] bad : expected) {
      long line = Long.parseLong(bad[0]);
      List<String> lines = new ArrayList<>(List.of(JSON));
      for (int i = 1; i < lines.size(); i++) {
        if (i + 1 != line && i != lines.size() - 1) {
          lines.set(i, "{\"id\": " + (100 + i) + "}");
        }
      }
      Sources.lines(file, lines.toArray(String[]::new));
      FileSource source = Sources.of(file, null, SCHEMA);
      try (SourceReader<Record> reader = source.open(null)) {
        assertThatThrownBy(() -> Sources.drain(reader))
            .isInstanceOfSatisfying(BadRecordException.class, e -> {
              assertThat(e.file()).isEqualTo(file.toString());
              assertThat(e.lineOrRecord()).isEqualTo(line);
              assertThat(e.field()).isEqualTo(bad[1]);
              assertThat(e.reason()).contains(bad[2]);
              assertThat(e.rawText()).isEqualTo(JSON[(int) line - 1]);
            })
            .hasMessageStartingWith("Bad input in " + file + " line " + line
                + (bad[1] == null ? ": " : ", field '" + bad[1] + "': "));
      }
    }
  }

  @Test
  void withASinkBadLinesAreRecordedAndSkippedAndGoodOnesKept() throws IOException {
    Path file = Sources.lines(dir.resolve("in/data.jsonl"), JSON);
    Path dead = dir.resolve("dead");
    List<Record> records;
    try (DeadLetterFiles sink = new DeadLetterFiles(dead, "job-1", 3)) {
      FileSource source = Sources.of(file, null, SCHEMA).badRecords(sink);
      records = Sources.readAll(source);
      assertThat(sink.count()).isEqualTo(10);
    }
    assertThat(records).extracting(r -> r.getField("id")).containsExactly(1L, 13L);
    List<String> letters = Files.readAllLines(dead.resolve("job-1-3.bad.jsonl"));
    assertThat(letters).hasSize(10);
    assertThat(letters.get(1)).isEqualTo("{\"file\":\"" + file + "\",\"line\":3,\"reason\":\"field 'id': expected "
        + "long, got a string \\\"three\\\"\",\"raw\":\"{\\\"id\\\": \\\"three\\\", \\\"amount\\\": 3, \\\"name\\\": "
        + "\\\"c\\\"}\"}");
  }

  /**
   * ASCII lines are parsed from their bytes, other lines from their decoded text: both read the same, and a
   * malformed line's column counts characters either way.
   */
  @Test
  void asciiAndNonAsciiLinesReadAlikeAndColumnsCountCharacters() throws IOException {
    Path file = Sources.lines(dir.resolve("mixed.jsonl"), "{\"id\": 1, \"name\": \"abc\"}",
        "{\"id\": 2, \"name\": \"\u00e4\u00f6\u00fc\"}", "{\"id\": 3, \"name\": \"\u65e5\u672c\u8a9e\"}");
    assertThat(Sources.readAll(Sources.of(file, null, SCHEMA))).extracting(r -> r.getField("name"))
        .containsExactly("abc", "\u00e4\u00f6\u00fc", "\u65e5\u672c\u8a9e");
    List<String> reasons = new ArrayList<>();
    for (String name : List.of("abc", "\u00e4\u00f6\u00fc", "\u65e5\u672c\u8a9e")) {
      Path bad = Sources.lines(dir.resolve("bad-" + reasons.size() + ".jsonl"),
          "{\"name\": \"" + name + "\", \"id\": x}");
      try (SourceReader<Record> reader = Sources.of(bad, null, SCHEMA).open(null)) {
        assertThatThrownBy(reader::next).isInstanceOfSatisfying(BadRecordException.class,
            e -> reasons.add(e.reason()));
      }
    }
    assertThat(reasons.get(0)).contains("malformed JSON at column 23");
    assertThat(reasons).as("the same column for three characters of one, two and three bytes").containsOnly(
        reasons.get(0));
  }

  @Test
  void aNonUtf8ByteIsBadInputWithTheByteNamed() throws IOException {
    byte[] good = "{\"id\": 1, \"name\": \"ok\"}\n".getBytes(StandardCharsets.UTF_8);
    byte[] bad = "{\"id\": 2, \"name\": \"b\u00e4d\"}\n".getBytes(StandardCharsets.ISO_8859_1);
    Path file = dir.resolve("latin1.jsonl");
    Files.write(file, concat(good, bad, good));
    try (SourceReader<Record> reader = Sources.of(file, null, SCHEMA).open(null)) {
      assertThat(reader.next()).isNotNull();
      assertThatThrownBy(reader::next).isInstanceOf(BadRecordException.class)
          .hasMessage("Bad input in " + file + " line 2: not valid UTF-8 (byte 21 of the line)");
    }
    Path csv = dir.resolve("latin1.csv");
    Files.write(csv, concat("id,name\n1,ok\n".getBytes(StandardCharsets.UTF_8),
        "2,b\u00e4d\n".getBytes(StandardCharsets.ISO_8859_1)));
    try (SourceReader<Record> reader = Sources.of(csv).open(null)) {
      assertThat(reader.next()).isNotNull();
      assertThatThrownBy(reader::next).isInstanceOf(BadRecordException.class)
          .hasMessage("Bad input in " + csv + " line 3: not valid UTF-8 (byte 4 of the record)");
    }
  }

  @Test
  void aLineIsReadAsUtf8EvenWhereZeroBytesMakeItLookLikeUtf16() throws IOException {
    // {"id":3} as UTF-16BE: every other byte is zero, all of them ASCII
    byte[] utf16 = "{\"id\":3}".getBytes(StandardCharsets.UTF_16BE);
    Path file = dir.resolve("zeros.jsonl");
    Files.write(file, concat("{\"id\": 1}\n".getBytes(StandardCharsets.UTF_8), utf16, "\n{\"id\": 2}\n".getBytes(
        StandardCharsets.UTF_8)));
    try (SourceReader<Record> reader = Sources.of(file, null, SCHEMA).open(null)) {
      assertThat(reader.next().getField("id")).isEqualTo(1L);
      assertThatThrownBy(reader::next).as("not decoded as UTF-16 into {\"id\":3}")
          .isInstanceOf(BadRecordException.class)
          .hasMessageStartingWith("Bad input in " + file + " line 2: malformed JSON")
          .hasMessageContaining("Illegal character ((CTRL-CHAR, code 0))");
    }
  }

  @Test
  void csvRowsWithTooManyOrTooFewColumnsOrBadValues() throws IOException {
    Path file = Sources.lines(dir.resolve("in.csv"),
        "id,amount,name,ok",
        "1,1.50,a,true",
        "2,2,b,false,extra",
        "3,3",
        "x4,4,d,true",
        "5,5,e,maybe",
        ",6,f,true",
        "7,\"unterminated,g,true",
        "8,8,h,true");
    Path dead = dir.resolve("dead");
    List<Record> records;
    List<String> reasons = new ArrayList<>();
    BadRecordSink sink = new BadRecordSink() {
      @Override
      public void reject(String f, long line, String reason, String raw) {
        reasons.add(line + ": " + reason);
      }

      @Override
      public long count() {
        return reasons.size();
      }

      @Override
      public void close() {}
    };
    records = Sources.readAll(Sources.of(file, null, SCHEMA).badRecords(sink));
    assertThat(records).as("the line after an unterminated quote is read").extracting(r -> r.getField("id"))
        .containsExactly(1L, 8L);
    assertThat(reasons).containsExactly(
        "3: the row has 5 columns, the header has 4",
        "4: the row has 2 columns, the header has 4",
        "5: field 'id': value 'x4' is not a long",
        "6: field 'ok': value 'maybe' is not a boolean",
        "7: field 'id': is empty but required",
        "8: unterminated quoted field: the quote opened on this line is not closed within 1000 lines or before the "
            + "end of the file; only this line is rejected, reading goes on at the next line");
    assertThat(Files.exists(dead)).isFalse();
  }

  @Test
  void emptyFilesHaveNoRecords() throws IOException {
    Sources.write(dir.resolve("in/a.jsonl"), "");
    Sources.write(dir.resolve("in/b.jsonl"), "\n\n");
    Sources.lines(dir.resolve("in/c.jsonl"), "{\"id\": 1}");
    Sources.write(dir.resolve("csv/a.csv"), "");
    Sources.write(dir.resolve("csv/b.csv"), "id\n");
    Sources.write(dir.resolve("pq/a.parquet"), "");
    assertThat(Sources.readAll(Sources.of(dir.resolve("in")))).hasSize(1);
    assertThat(Sources.readAll(Sources.of(dir.resolve("csv"), null, SCHEMA))).isEmpty();
    assertThat(Sources.readAll(Sources.of(dir.resolve("pq"), null, SCHEMA))).isEmpty();
  }

  @Test
  void aFileThatDisappearsAfterListingFailsTheReaderEvenWithASink() throws IOException {
    Sources.lines(dir.resolve("in/a.jsonl"), "{\"id\": 1}");
    Path gone = Sources.lines(dir.resolve("in/b.jsonl"), "{\"id\": 2}");
    Sources.lines(dir.resolve("in/c.jsonl"), "{\"id\": 3}");
    FileSource source = Sources.of(dir.resolve("in"));
    Files.delete(gone);
    try (DeadLetterFiles sink = new DeadLetterFiles(dir.resolve("dead"), "j", 1);
        SourceReader<Record> reader = source.badRecords(sink).open(null)) {
      assertThat(reader.next().getField("id")).isEqualTo(1L);
      byte[] before = reader.position();
      assertThatThrownBy(reader::next).isInstanceOf(InputReadException.class)
          .hasMessageStartingWith("Cannot read input file " + gone + ": it no longer exists (it disappeared after "
              + "the input was listed); nothing after it was read or skipped");
      assertThat(reader.position()).as("the position stays before the file").isEqualTo(before);
      assertThat(sink.count()).isZero();
    }
  }

  @Test
  void binaryFilesThatAreNotTheirFormatAreBadInput() throws IOException {
    Path parquet = Sources.write(dir.resolve("pq/a.parquet"), "not parquet at all");
    Schema schema = SchemaParser.parse("id long");
    try (SourceReader<Record> reader = Sources.of(parquet, null, schema).open(null)) {
      assertThatThrownBy(reader::next).isInstanceOf(BadRecordException.class)
          .hasMessageStartingWith("Bad input in " + parquet + ": not a readable Parquet file");
    }
    Path avro = Sources.write(dir.resolve("av/a.avro"), "not avro either");
    try (SourceReader<Record> reader = Sources.of(avro, null, schema).open(null)) {
      assertThatThrownBy(reader::next).isInstanceOf(BadRecordException.class)
          .hasMessageStartingWith("Bad input in " + avro + ": not a readable Avro file");
    }
  }

  @Test
  void aParquetColumnOfAnotherTypeNamesTheColumn() throws IOException {
    Schema written = SchemaParser.parse("id string");
    org.apache.iceberg.data.GenericRecord row = org.apache.iceberg.data.GenericRecord.create(written);
    row.setField("id", "x");
    Path file = FileWriters.icebergParquet(dir.resolve("a.parquet"), written, List.of(row), false);
    try (SourceReader<Record> reader = Sources.of(file, null, SchemaParser.parse("id long")).open(null)) {
      assertThatThrownBy(reader::next).isInstanceOf(BadRecordException.class)
          .hasMessage("Bad input in " + file + ": column 'id' is string in the file but long in the schema");
    }
  }

  @Test
  void aNullInARequiredParquetColumnNamesTheRecordAndField() throws IOException {
    Schema written = SchemaParser.parse("id long, name string");
    List<Record> rows = new ArrayList<>();
    for (long i = 0; i < 4; i++) {
      org.apache.iceberg.data.GenericRecord row = org.apache.iceberg.data.GenericRecord.create(written);
      row.setField("id", i == 2 ? null : i);
      row.setField("name", "n" + i);
      rows.add(row);
    }
    Path file = FileWriters.icebergParquet(dir.resolve("a.parquet"), written, rows, false);
    List<String> rejected = new ArrayList<>();
    FileSource source = Sources.of(file, null, SchemaParser.parse("id long not null, name string"));
    try (SourceReader<Record> reader = source.open(null)) {
      reader.next();
      reader.next();
      assertThatThrownBy(reader::next).isInstanceOf(BadRecordException.class)
          .hasMessage("Bad input in " + file + " record 3, field 'id': is null but required");
      assertThat(reader.next().getField("id")).as("reading goes on after a bad record").isEqualTo(3L);
    }
    assertThat(Sources.readAll(source.badRecords(sink(rejected)))).hasSize(3);
    assertThat(rejected).containsExactly(file + " 3: field 'id': is null but required");
  }

  @Test
  void aBadCsvHeaderRejectsTheWholeFile() throws IOException {
    Sources.lines(dir.resolve("in/a.csv"), "id,name,id", "1,a,2");
    Sources.lines(dir.resolve("in/b.csv"), "id,name", "3,c");
    List<String> rejected = new ArrayList<>();
    FileSource source = Sources.of(dir.resolve("in"), null, SchemaParser.parse("id long, name string"));
    assertThat(Sources.readAll(source.badRecords(sink(rejected)))).extracting(r -> r.getField("id"))
        .containsExactly(3L);
    assertThat(rejected).containsExactly(dir.resolve("in/a.csv") + " 1: header column 'id' appears twice");
  }

  static BadRecordSink sink(List<String> rejected) {
    return new BadRecordSink() {
      @Override
      public void reject(String file, long line, String reason, String raw) {
        rejected.add(file + " " + line + ": " + reason);
      }

      @Override
      public long count() {
        return rejected.size();
      }

      @Override
      public void close() {}
    };
  }

  private static byte[] concat(byte[]... parts) {
    int length = 0;
    for (byte[] part : parts) {
      length += part.length;
    }
    byte[] all = new byte[length];
    int at = 0;
    for (byte[] part : parts) {
      System.arraycopy(part, 0, all, at, part.length);
      at += part.length;
    }
    return all;
  }
}
