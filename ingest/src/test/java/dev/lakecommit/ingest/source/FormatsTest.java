package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.luben.zstd.ZstdOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPOutputStream;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The formats users have (issue 15, point 5): compressed JSON lines and CSV, epoch numbers for timestamps, Avro
 * enums and unions, and {@code **} globs.
 */
class FormatsTest {
  @TempDir
  Path dir;

  static byte[] gzip(String text) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (OutputStream out = new GZIPOutputStream(bytes)) {
      out.write(text.getBytes(StandardCharsets.UTF_8));
    }
    return bytes.toByteArray();
  }

  static byte[] zstd(String text) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (OutputStream out = new ZstdOutputStream(bytes)) {
      out.write(text.getBytes(StandardCharsets.UTF_8));
    }
    return bytes.toByteArray();
  }

  private static String jsonLines(int from, int to) {
    StringBuilder text = new StringBuilder();
    for (int i = from; i < to; i++) {
      text.append("{\"id\": ").append(i).append(", \"name\": \"n").append(i).append("\"}\n");
    }
    return text.toString();
  }

  @Test
  void compressedJsonLinesByExtensionAndByMagicBytesResumeExactly() throws IOException {
    Sources.write(dir.resolve("in/a.jsonl.gz"), gzip(jsonLines(0, 5)));
    Sources.write(dir.resolve("in/b.json.gz"), gzip(jsonLines(5, 8)));
    Sources.write(dir.resolve("in/c.jsonl.zst"), zstd(jsonLines(8, 12)));
    Sources.write(dir.resolve("in/d.jsonl"), gzip(jsonLines(12, 14))); // gzip without saying so
    Sources.write(dir.resolve("in/e.jsonl"), zstd(jsonLines(14, 15)));
    // two gzip members, as `cat a.gz b.gz` makes
    byte[] first = gzip(jsonLines(15, 17));
    byte[] second = gzip(jsonLines(17, 18));
    byte[] both = new byte[first.length + second.length];
    System.arraycopy(first, 0, both, 0, first.length);
    System.arraycopy(second, 0, both, first.length, second.length);
    Sources.write(dir.resolve("in/f.jsonl.gz"), both);

    FileSource source = Sources.of(dir.resolve("in"));
    assertThat(source.format()).isEqualTo(InputFormat.JSON);
    assertThat(source.schema().findField("name")).isNotNull();
    List<Record> all = Sources.assertResumesExactly(source);
    List<Long> ids = new ArrayList<>();
    for (long i = 0; i < 18; i++) {
      ids.add(i);
    }
    assertThat(all).extracting(r -> r.getField("id")).containsExactlyElementsOf(ids);
  }

  @Test
  void compressedCsvResumesExactlyWithTheHeaderReadAgain() throws IOException {
    Sources.write(dir.resolve("in/a.csv.gz"), gzip("id,name\n1,\"x\ny\"\n2,b\n"));
    Sources.write(dir.resolve("in/b.csv.zst"), zstd("id,name\n3,c\n4,d\n"));

    FileSource source = Sources.of(dir.resolve("in"));
    assertThat(source.format()).isEqualTo(InputFormat.CSV);
    List<Record> all = Sources.assertResumesExactly(source);
    assertThat(all).extracting(r -> r.getField("id")).containsExactly(1L, 2L, 3L, 4L);
    assertThat(all.get(0).getField("name")).isEqualTo("x\ny");
  }

  @Test
  void aCompressedFileShorterThanThePositionFailsTheResume() throws IOException {
    Path file = Sources.write(dir.resolve("in/a.jsonl.gz"), gzip(jsonLines(0, 5)));
    FileSource source = Sources.of(file);
    byte[] position;
    try (var reader = source.open(null)) {
      for (int i = 0; i < 4; i++) {
        reader.next();
      }
      position = reader.position();
    }
    Sources.write(file, gzip(jsonLines(0, 1)));
    assertThatThrownBy(() -> {
      try (var reader = source.open(position)) {
        reader.next();
      }
    }).isInstanceOf(ChangedInputException.class).hasMessageContaining("a.jsonl.gz")
        .hasMessageContaining("changed: it ends before the");
  }

  @Test
  void epochNumbersBecomeTimestampsByMagnitude() throws IOException {
    Sources.lines(dir.resolve("in/a.jsonl"),
        "{\"id\": 1, \"ts\": 1700000000, \"local\": 1700000000}",
        "{\"id\": 2, \"ts\": 1700000000123, \"local\": \"1700000000123\"}",
        "{\"id\": 3, \"ts\": 1700000000123456, \"local\": 1700000000.5}",
        "{\"id\": 4, \"ts\": 1700000000123456000, \"local\": \"2023-11-14T22:13:20\"}",
        "{\"id\": 5, \"ts\": -86400, \"local\": null}");
    FileSource source = Sources.of(dir.resolve("in/a.jsonl"), null,
        SchemaParser.parse("id long, ts timestamptz, local timestamp"));
    List<Record> all = Sources.readAll(source);
    OffsetDateTime base = OffsetDateTime.parse("2023-11-14T22:13:20Z");
    assertThat(all).extracting(r -> r.getField("ts")).containsExactly(base, base.plusNanos(123_000_000),
        base.plusNanos(123_456_000), base.plusNanos(123_456_000), OffsetDateTime.parse("1969-12-31T00:00Z"));
    LocalDateTime local = LocalDateTime.parse("2023-11-14T22:13:20");
    assertThat(all).extracting(r -> r.getField("local")).containsExactly(local, local.plusNanos(123_000_000),
        local.plusNanos(500_000_000), local, null);

    Sources.write(dir.resolve("csv/a.csv"), "id,ts\n1,1700000000123\n2,2023-11-14T22:13:20Z\n");
    List<Record> csv = Sources.readAll(Sources.of(dir.resolve("csv/a.csv"), null,
        SchemaParser.parse("id long, ts timestamptz")));
    assertThat(csv).extracting(r -> r.getField("ts")).containsExactly(base.plusNanos(123_000_000), base);

    Sources.lines(dir.resolve("bad/a.jsonl"), "{\"ts\": 1700000000123456789}");
    assertThatThrownBy(() -> Sources.readAll(Sources.of(dir.resolve("bad/a.jsonl"), null,
        SchemaParser.parse("ts timestamptz"))))
        .isInstanceOf(BadRecordException.class)
        .hasMessageContaining("field 'ts'").hasMessageContaining("nanoseconds")
        .hasMessageContaining("finer than a microsecond");
  }

  @Test
  void avroEnumsAreStringsAndUnionsOfPrimitivesTheirWidestType() throws IOException {
    org.apache.avro.Schema color = SchemaBuilder.enumeration("color").symbols("RED", "GREEN");
    org.apache.avro.Schema avro = SchemaBuilder.record("row").fields()
        .requiredLong("id")
        .name("color").type(color).noDefault()
        .name("any").type().unionOf().nullType().and().stringType().and().longType().endUnion().nullDefault()
        .name("number").type().unionOf().intType().and().longType().endUnion().noDefault()
        .name("maybe").type().unionOf().nullType().and().type(color).endUnion().nullDefault()
        .endRecord();
    List<org.apache.avro.generic.GenericRecord> rows = new ArrayList<>();
    Object[][] values = {{"RED", "a", 1, "GREEN"}, {"GREEN", 42L, 7L, null}, {"RED", null, 3, "RED"}};
    for (int i = 0; i < values.length; i++) {
      GenericData.Record row = new GenericData.Record(avro);
      row.put("id", (long) i);
      row.put("color", new GenericData.EnumSymbol(color, values[i][0]));
      row.put("any", values[i][1]);
      row.put("number", values[i][2]);
      row.put("maybe", values[i][3] == null ? null : new GenericData.EnumSymbol(color, values[i][3]));
      rows.add(row);
    }
    FileWriters.plainAvro(dir.resolve("in/a.avro"), avro, rows, 2);

    FileSource source = Sources.of(dir.resolve("in"));
    assertThat(source.schema().findField("color").type()).isEqualTo(Types.StringType.get());
    assertThat(source.schema().findField("any").type()).isEqualTo(Types.StringType.get());
    assertThat(source.schema().findField("number").type()).isEqualTo(Types.LongType.get());
    List<Record> all = Sources.assertResumesExactly(source);
    assertThat(all).extracting(r -> r.getField("color")).containsExactly("RED", "GREEN", "RED");
    assertThat(all).extracting(r -> r.getField("any")).containsExactly("a", "42", null);
    assertThat(all).extracting(r -> r.getField("number")).containsExactly(1L, 7L, 3L);
    assertThat(all).extracting(r -> r.getField("maybe")).containsExactly("GREEN", null, "RED");
  }

  @Test
  void anAvroUnionWithoutAWidestTypeIsRefusedNamingTheField() throws IOException {
    org.apache.avro.Schema avro = SchemaBuilder.record("row").fields()
        .requiredLong("id")
        .name("odd").type().unionOf().nullType().and().stringType().and().array().items().longType().endUnion()
        .nullDefault()
        .endRecord();
    GenericData.Record row = new GenericData.Record(avro);
    row.put("id", 1L);
    FileWriters.plainAvro(dir.resolve("in/a.avro"), avro, List.of(row), 1);

    assertThatThrownBy(() -> Sources.of(dir.resolve("in")))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("a.avro").hasMessageContaining("field 'odd'")
        .hasMessageContaining("only unions of booleans, numbers, strings and enums are read");
  }

  @Test
  void doubleStarGlobsMatchAtEveryDepthIncludingTheTop() throws IOException {
    for (String name : new String[] {"in/a.jsonl", "in/sub/b.jsonl", "in/sub/deeper/c.jsonl", "in/d.csv",
        "in/x/y/e.jsonl"}) {
      Sources.lines(dir.resolve(name), "{\"id\": 1}");
    }
    String in = dir.resolve("in").toString();
    assertThat(FileSource.of(in + "/**/*.jsonl", null, null, Map.of(), null).files())
        .containsExactly(in + "/a.jsonl", in + "/sub/b.jsonl", in + "/sub/deeper/c.jsonl", in + "/x/y/e.jsonl");
    assertThat(FileSource.of(in + "/**/deeper/*.jsonl", null, null, Map.of(), null).files())
        .containsExactly(in + "/sub/deeper/c.jsonl");
    assertThat(FileSource.of(in + "/x/**/*.jsonl", null, null, Map.of(), null).files())
        .containsExactly(in + "/x/y/e.jsonl");
    assertThat(FileSource.of(in + "/sub/**/**/*.jsonl", null, null, Map.of(), null).files())
        .containsExactly(in + "/sub/b.jsonl", in + "/sub/deeper/c.jsonl");
  }
}
