package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Schemas: parsed from text, inferred from JSON lines and CSV samples, and the input format option. */
class SchemaTest {
  @TempDir
  Path dir;

  @Test
  void parsesColumnsTypesAndNullability() {
    Schema schema = SchemaParser.parse("id long not null, name string, ts timestamptz, amount decimal(10,2), "
        + "tags list<string>, `odd name` map<string, int>, p struct<x: double not null, y double>, day DATE, "
        + "b binary, f fixed(4), u uuid, t time, local timestamp, flag boolean, r float");
    assertThat(schema.toString()).isEqualTo(new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "name", Types.StringType.get()),
        Types.NestedField.optional(3, "ts", Types.TimestampType.withZone()),
        Types.NestedField.optional(4, "amount", Types.DecimalType.of(10, 2)),
        Types.NestedField.optional(5, "tags", Types.ListType.ofOptional(16, Types.StringType.get())),
        Types.NestedField.optional(6, "odd name",
            Types.MapType.ofOptional(17, 18, Types.StringType.get(), Types.IntegerType.get())),
        Types.NestedField.optional(7, "p", Types.StructType.of(
            Types.NestedField.required(19, "x", Types.DoubleType.get()),
            Types.NestedField.optional(20, "y", Types.DoubleType.get()))),
        Types.NestedField.optional(8, "day", Types.DateType.get()),
        Types.NestedField.optional(9, "b", Types.BinaryType.get()),
        Types.NestedField.optional(10, "f", Types.FixedType.ofLength(4)),
        Types.NestedField.optional(11, "u", Types.UUIDType.get()),
        Types.NestedField.optional(12, "t", Types.TimeType.get()),
        Types.NestedField.optional(13, "local", Types.TimestampType.withoutZone()),
        Types.NestedField.optional(14, "flag", Types.BooleanType.get()),
        Types.NestedField.optional(15, "r", Types.FloatType.get())).toString());
  }

  @Test
  void parseErrorsNameTheColumnAndType() {
    assertThatThrownBy(() -> SchemaParser.parse("id long, amount decmal(10,2)"))
        .hasMessageStartingWith("Schema: column 'amount': unknown type 'decmal'; known types: boolean, int");
    assertThatThrownBy(() -> SchemaParser.parse("id long, amount decimal(40,2)"))
        .hasMessage("Schema: column 'amount': decimal precision must be 1..38, not 40 in 'decimal(40,2)'");
    assertThatThrownBy(() -> SchemaParser.parse("id long, name"))
        .hasMessageStartingWith("Schema: column 'name' has no type");
    assertThatThrownBy(() -> SchemaParser.parse("id long, id string"))
        .hasMessage("Schema: duplicate column 'id'");
    assertThatThrownBy(() -> SchemaParser.parse("tags list<string"))
        .hasMessage("Schema: column 'tags': list<...> is not closed");
    assertThatThrownBy(() -> SchemaParser.parse("p struct<x: nope>"))
        .hasMessageStartingWith("Schema: column 'p.x': unknown type 'nope'");
    assertThatThrownBy(() -> SchemaParser.parse("id long not nul"))
        .hasMessage("Schema: column 'id': expected 'not null'");
    assertThatThrownBy(() -> SchemaParser.parse("id long,"))
        .hasMessage("Schema: column 2 has no name (trailing comma?)");
    assertThatThrownBy(() -> SchemaParser.parse(" "))
        .hasMessageStartingWith("Schema is empty");
  }

  @Test
  void infersJsonTypesWideningAndNesting() throws IOException {
    Sources.lines(dir.resolve("a.jsonl"),
        "{\"id\": 1, \"n\": 1, \"mixed\": 1, \"ts\": \"2024-01-02T03:04:05Z\", \"local\": \"2024-01-02 03:04:05\", "
            + "\"day\": \"2024-01-02\", \"flag\": true, \"nested\": {\"a\": 1, \"b\": [1, 2]}, \"tags\": [], "
            + "\"nothing\": null, \"big\": 1, \"obj\": {}}",
        "{\"id\": 2, \"n\": 2.5, \"mixed\": \"x\", \"ts\": \"2024-01-02T03:04:05.123+01:00\", "
            + "\"local\": \"2024-01-02T03:04:05.5\", \"day\": null, \"flag\": false, "
            + "\"nested\": {\"b\": [3.5], \"c\": \"new\"}, \"tags\": [\"x\"], \"big\": 123456789012345678901234, "
            + "\"late\": 1}");
    FileSource source = Sources.of(dir.resolve("a.jsonl"));
    assertThat(source.schema().asStruct().fields()).extracting(f -> f.fieldId() + " " + f.name() + " " + f.type())
        .containsExactly("1 id long", "2 n double", "3 mixed string", "4 ts timestamptz", "5 local timestamp",
            "6 day date", "7 flag boolean", "8 nested struct<14: a: optional long, 15: b: optional list<double>, "
                + "16: c: optional string>",
            "9 tags list<string>", "10 nothing string", "11 big string", "12 obj string", "13 late long");
    assertThat(source.schema().columns()).allMatch(Types.NestedField::isOptional);

    List<Record> records = Sources.readAll(source);
    assertThat(records.get(0).getField("mixed")).isEqualTo("1");
    assertThat(records.get(0).getField("n")).isEqualTo(1.0);
    assertThat(records.get(0).getField("obj")).isEqualTo("{}");
    assertThat(records.get(1).getField("big")).isEqualTo("123456789012345678901234");
    assertThat(records.get(1).getField("ts")).isEqualTo(OffsetDateTime.parse("2024-01-02T03:04:05.123+01:00"));
    assertThat(records.get(1).getField("local")).isEqualTo(LocalDateTime.parse("2024-01-02T03:04:05.5"));
    assertThat(records.get(0).getField("day")).isEqualTo(LocalDate.parse("2024-01-02"));
    assertThat(((Record) records.get(1).getField("nested")).getField("b")).isEqualTo(List.of(3.5));
  }

  @Test
  void infersCsvTypesFromText() throws IOException {
    Sources.lines(dir.resolve("a.csv"),
        "id,score,flag,day,ts,name,empty",
        "1,2,true,2024-01-01,2024-01-01T00:00:00,x,",
        "2,2.5,FALSE,2024-01-02,2024-01-01T00:00:01,007,",
        "3,,true,,2024-01-01T00:00:02,\"\",");
    FileSource source = Sources.of(dir.resolve("a.csv"));
    assertThat(source.schema().asStruct().fields()).extracting(f -> f.name() + " " + f.type())
        .containsExactly("id long", "score double", "flag boolean", "day date", "ts timestamp", "name string",
            "empty string");
    List<Record> records = Sources.readAll(source);
    assertThat(records.get(2).getField("score")).isNull();
    assertThat(records.get(2).getField("name")).isEqualTo("");
    assertThat(records.get(1).getField("name")).isEqualTo("007");
    assertThat(records.get(1).getField("flag")).isEqualTo(false);
  }

  @Test
  void anExplicitSchemaOverridesInference() throws IOException {
    Sources.lines(dir.resolve("a.jsonl"), "{\"id\": 1, \"amount\": 1.5, \"extra\": 1}");
    Schema given = SchemaParser.parse("amount decimal(5,2), id int");
    FileSource source = Sources.of(dir.resolve("a.jsonl"), null, given);
    assertThat(source.schema().asStruct()).isEqualTo(given.asStruct());
    assertThat(Sources.values(Sources.readAll(source))).containsExactly(List.of(new java.math.BigDecimal("1.50"), 1));
  }

  @Test
  void formatOptionAndExtensions() {
    assertThat(InputFormat.of("jsonl")).isEqualTo(InputFormat.JSON);
    assertThat(InputFormat.of("JSON")).isEqualTo(InputFormat.JSON);
    assertThat(InputFormat.of("csv")).isEqualTo(InputFormat.CSV);
    assertThat(InputFormat.of("parquet")).isEqualTo(InputFormat.PARQUET);
    assertThat(InputFormat.of("avro")).isEqualTo(InputFormat.AVRO);
    assertThatThrownBy(() -> InputFormat.of("xml"))
        .hasMessage("Unknown --format 'xml': expected one of json, jsonl, csv, parquet, avro");
    assertThat(InputFormat.fromExtension("s3://b/in/x.JSONL")).contains(InputFormat.JSON);
    assertThat(InputFormat.fromExtension("/a.b/part-0.parquet")).contains(InputFormat.PARQUET);
    assertThat(InputFormat.fromExtension("/a.b/README")).isEmpty();
  }
}
