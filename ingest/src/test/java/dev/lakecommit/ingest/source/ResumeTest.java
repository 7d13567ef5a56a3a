package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.runtime.CheckpointedSource.SourceReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.apache.avro.SchemaBuilder;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reopening at a position yields exactly the records after it: for every format, at every position of small
 * files, across file boundaries (including empty files), and for positions taken by a reader that itself resumed.
 */
class ResumeTest {
  @TempDir
  Path dir;

  @Test
  void jsonLines() throws IOException {
    Sources.lines(dir.resolve("in/a.jsonl"),
        "{\"id\": 1, \"name\": \"a\", \"info\": {\"x\": 1.5, \"tags\": [\"p\", \"q\"]}}",
        "",
        "{\"id\": 2, \"name\": \"b\\nwith newline escape\", \"info\": null}\r",
        "   ",
        "{\"id\": 3, \"name\": \"ünïcødé\", \"info\": {\"x\": 2, \"tags\": []}}");
    Sources.write(dir.resolve("in/b.jsonl"), "");
    Sources.write(dir.resolve("in/c/d.jsonl"), "{\"id\": 4}\n{\"id\": 5, \"name\": \"e\"}"); // no final newline
    Sources.write(dir.resolve("in/_SUCCESS"), "");
    Sources.write(dir.resolve("in/.c.jsonl.crc"), "junk");

    FileSource source = Sources.of(dir.resolve("in"));
    assertThat(source.files()).hasSize(3);
    List<Record> all = Sources.assertResumesExactly(source);
    assertThat(all).extracting(r -> r.getField("id")).containsExactly(1L, 2L, 3L, 4L, 5L);
    assertThat(all.get(1).getField("name")).isEqualTo("b\nwith newline escape");
    assertThat(((Record) all.get(0).getField("info")).getField("tags")).isEqualTo(List.of("p", "q"));
  }

  @Test
  void csvWithQuotedNewlinesSurvivesAResumeInsideAndAfterIt() throws IOException {
    byte[] bom = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};
    String first = "id,name,score\r\n"
        + "1,plain,1.5\r\n"
        + "2,\"two\nlines, and a comma\",2\r\n"
        + "3,\"say \"\"hi\"\"\",\r\n"
        + "4,\"\",4.25\r\n"
        + "\r\n"
        + "5,\"multi\r\nline\r\nfield\",5\r\n";
    byte[] firstBytes = first.getBytes(StandardCharsets.UTF_8);
    byte[] withBom = new byte[bom.length + firstBytes.length];
    System.arraycopy(bom, 0, withBom, 0, bom.length);
    System.arraycopy(firstBytes, 0, withBom, bom.length, firstBytes.length);
    Sources.write(dir.resolve("in/1.csv"), withBom);
    Sources.write(dir.resolve("in/2.csv"), "id,name,score\n");
    Sources.write(dir.resolve("in/3.csv"), "name,id,score\n\"x\ny\",6,6.5\nlast,7,7"); // other column order

    FileSource source = Sources.of(dir.resolve("in"));
    assertThat(source.schema().asStruct().fields()).extracting(f -> f.name() + " " + f.type())
        .containsExactly("id long", "name string", "score double");
    List<Record> all = Sources.assertResumesExactly(source);
    assertThat(all).extracting(r -> r.getField("id")).containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 7L);
    assertThat(all).extracting(r -> r.getField("name")).containsExactly("plain", "two\nlines, and a comma",
        "say \"hi\"", "", "multi\r\nline\r\nfield", "x\ny", "last");
    assertThat(all.get(2).getField("score")).isNull();

    // The position after record 2 (whose field spans two lines) names the line where it ended.
    try (SourceReader<Record> reader = source.open(null)) {
      reader.next();
      reader.next();
      assertThat(FileSource.describe(reader.position())).endsWith("1.csv line 4");
    }
  }

  @Test
  void parquetWrittenByIcebergSkipsRowGroups() throws IOException {
    Schema schema = SchemaParser.parse("id long not null, name string, point struct<x: double, y: double>, "
        + "tags list<string>");
    List<Record> rows = new ArrayList<>();
    for (long i = 0; i < 9; i++) {
      Record point = GenericRecord.create(schema.findType("point").asStructType());
      point.setField("x", i * 0.5);
      point.setField("y", i % 3 == 0 ? null : -1.0 * i);
      Record row = GenericRecord.create(schema);
      row.setField("id", i);
      row.setField("name", i % 4 == 0 ? null : "n" + i);
      row.setField("point", point);
      row.setField("tags", List.of("t" + i, "u"));
      rows.add(row);
    }
    Path a = FileWriters.icebergParquet(dir.resolve("in/a.parquet"), schema, rows.subList(0, 6), true);
    FileWriters.icebergParquet(dir.resolve("in/b.parquet"), schema, List.of(), false);
    FileWriters.icebergParquet(dir.resolve("in/c.parquet"), schema, rows.subList(6, 9), true);
    try (ParquetFileReader reader = ParquetFileReader.open(Inputs.parquet(org.apache.iceberg.Files.localInput(
        a.toFile())))) {
      assertThat(reader.getRowGroups()).as("row groups of the test file").hasSizeGreaterThan(2);
    }

    FileSource source = Sources.of(dir.resolve("in"));
    List<Record> all = Sources.assertResumesExactly(source);
    assertThat(Sources.values(all)).isEqualTo(Sources.values(rows));
  }

  @Test
  void parquetWithoutFieldIds() throws IOException {
    MessageType type = MessageTypeParser.parseMessageType(
        "message row { required int64 id; optional binary name (STRING); optional double score; }");
    SimpleGroupFactory groups = new SimpleGroupFactory(type);
    List<Group> rows = new ArrayList<>();
    for (long i = 0; i < 7; i++) {
      Group row = groups.newGroup().append("id", i).append("score", i * 1.25);
      if (i != 3) {
        row.append("name", "n" + i);
      }
      rows.add(row);
    }
    FileWriters.plainParquet(dir.resolve("in/x.parquet"), type, rows.subList(0, 4));
    FileWriters.plainParquet(dir.resolve("in/y.parquet"), type, rows.subList(4, 7));

    FileSource source = Sources.of(dir.resolve("in"));
    assertThat(source.schema().toString()).contains("id: required long", "name: optional string");
    List<Record> all = Sources.assertResumesExactly(source);
    assertThat(all).extracting(r -> r.getField("id")).containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L);
    assertThat(all.get(3).getField("name")).isNull();

    // An explicit schema picks and orders columns by name, and widens nothing it cannot.
    FileSource projected = Sources.of(dir.resolve("in"), null, SchemaParser.parse("score double, id long"));
    assertThat(Sources.values(Sources.readAll(projected))).first().isEqualTo(List.of(0.0, 0L));
  }

  @Test
  void avroWrittenByAvroSkipsBlocks() throws IOException {
    org.apache.avro.Schema avro = SchemaBuilder.record("row").fields()
        .requiredLong("id").optionalString("name").optionalDouble("score").endRecord();
    List<org.apache.avro.generic.GenericRecord> rows = new ArrayList<>();
    for (long i = 0; i < 11; i++) {
      org.apache.avro.generic.GenericData.Record row = new org.apache.avro.generic.GenericData.Record(avro);
      row.put("id", i);
      row.put("name", i % 5 == 0 ? null : "n" + i);
      row.put("score", i / 4.0);
      rows.add(row);
    }
    FileWriters.plainAvro(dir.resolve("in/a.avro"), avro, rows.subList(0, 7), 3);
    FileWriters.plainAvro(dir.resolve("in/b.avro"), avro, List.of(), 3);
    FileWriters.plainAvro(dir.resolve("in/c.avro"), avro, rows.subList(7, 11), 2);

    FileSource source = Sources.of(dir.resolve("in"));
    List<Record> all = Sources.assertResumesExactly(source);
    assertThat(all).extracting(r -> r.getField("id")).containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L);
    assertThat(all.get(5).getField("name")).isNull();
    assertThat(all.get(6).getField("score")).isEqualTo(1.5);
  }

  @Test
  void avroWrittenByIcebergKeepsNestedTypes() throws IOException {
    Schema schema = SchemaParser.parse("id long not null, ts timestamptz, day date, amount decimal(9,2), "
        + "point struct<x: double not null, label: string>, attrs map<string, long>");
    List<Record> rows = new ArrayList<>();
    for (long i = 0; i < 5; i++) {
      Record point = GenericRecord.create(schema.findType("point").asStructType());
      point.setField("x", i * 2.0);
      point.setField("label", "p" + i);
      Record row = GenericRecord.create(schema);
      row.setField("id", i);
      row.setField("ts", java.time.OffsetDateTime.parse("2024-05-01T10:00:00Z").plusMinutes(i));
      row.setField("day", java.time.LocalDate.of(2024, 5, 1).plusDays(i));
      row.setField("amount", new java.math.BigDecimal(i + ".25"));
      row.setField("point", point);
      row.setField("attrs", java.util.Map.of("k" + i, i));
      rows.add(row);
    }
    FileWriters.icebergAvro(dir.resolve("in/a.avro"), schema, rows);
    FileSource source = Sources.of(dir.resolve("in"));
    assertThat(Sources.values(Sources.assertResumesExactly(source))).isEqualTo(Sources.values(rows));
  }

  @Test
  void positionsAreVersionedAndDescribed() throws IOException {
    Sources.lines(dir.resolve("in/a.jsonl"), "{\"id\": 1}", "{\"id\": 2}");
    Sources.lines(dir.resolve("in/b.jsonl"), "{\"id\": 3}");
    FileSource source = Sources.of(dir.resolve("in"));
    byte[] position;
    try (SourceReader<Record> reader = source.open(null)) {
      assertThat(FileSource.describe(reader.position())).isEqualTo("file 1/2 " + dir.resolve("in/a.jsonl")
          + " line 0");
      reader.next();
      reader.next();
      reader.next();
      position = reader.position();
    }
    assertThat(FileSource.describe(position)).isEqualTo("file 2/2 " + dir.resolve("in/b.jsonl") + " line 1");
    assertThat(FileSource.describe(null)).isEqualTo("start of input");
    assertThat(position[3]).as("version first").isEqualTo((byte) Position.VERSION);

    byte[] future = position.clone();
    future[3] = 7;
    assertThatThrownBy(() -> source.open(future)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Unknown version 7");
    assertThatThrownBy(() -> FileSource.describe(new byte[] {0, 0, 0, 1, 0}))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Corrupt file source position");
  }

  @Test
  void aChangedListingFailsTheResumeNamingTheFile() throws IOException {
    Sources.lines(dir.resolve("in/b.jsonl"), "{\"id\": 1}", "{\"id\": 2}");
    Sources.lines(dir.resolve("in/c.jsonl"), "{\"id\": 3}", "{\"id\": 4}");
    byte[] inC;
    try (SourceReader<Record> reader = Sources.of(dir.resolve("in")).open(null)) {
      reader.next();
      reader.next();
      reader.next();
      inC = reader.position();
    }

    // A file after the current one: fine, it is read.
    Sources.lines(dir.resolve("in/d.jsonl"), "{\"id\": 5}");
    try (SourceReader<Record> reader = Sources.of(dir.resolve("in")).open(inC)) {
      assertThat(Sources.drain(reader)).extracting(r -> r.getField("id")).containsExactly(4L, 5L);
    }

    // A file before it: the order up to the current file changed.
    Sources.lines(dir.resolve("in/a.jsonl"), "{\"id\": 0}");
    FileSource withEarlier = Sources.of(dir.resolve("in"));
    assertThatThrownBy(() -> withEarlier.open(inC)).isInstanceOf(IOException.class)
        .hasMessageContaining("listing changed").hasMessageContaining(dir.resolve("in/c.jsonl").toString());

    // The current file is gone.
    Files.delete(dir.resolve("in/a.jsonl"));
    Files.delete(dir.resolve("in/c.jsonl"));
    FileSource without = Sources.of(dir.resolve("in"));
    assertThatThrownBy(() -> without.open(inC)).isInstanceOf(IOException.class)
        .hasMessageContaining(dir.resolve("in/c.jsonl") + " (file 2/2 at the position to resume from) is no "
            + "longer in");
  }

  @Test
  void appendedBytesAfterAPositionAreReadOnResume() throws IOException {
    Path file = Sources.lines(dir.resolve("in/a.jsonl"), "{\"id\": 1}");
    FileSource source = Sources.of(file);
    byte[] position;
    try (SourceReader<Record> reader = source.open(null)) {
      reader.next();
      position = reader.position();
    }
    Files.writeString(file, "{\"id\": 2}\n", StandardOpenOption.APPEND);
    try (SourceReader<Record> reader = source.open(position)) {
      assertThat(Sources.drain(reader)).extracting(r -> r.getField("id")).containsExactly(2L);
    }
  }
}
