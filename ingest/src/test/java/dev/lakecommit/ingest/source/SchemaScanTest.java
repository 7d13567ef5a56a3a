package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The scan of every record for columns the schema lacks (issue 15, point 2), per format. */
class SchemaScanTest {
  @TempDir
  Path dir;

  @Test
  void jsonColumnsAfterTheSampleAreFoundWithTheirLineAndType() throws IOException {
    StringBuilder text = new StringBuilder();
    for (int i = 1; i <= 3_000; i++) {
      text.append("{\"id\": ").append(i).append(i == 2_500 ? ", \"late\": {\"a\": 1.5}" : "")
          .append(i == 2_999 ? ", \"later\": null" : "").append("}\n");
    }
    Sources.write(dir.resolve("in/a.jsonl"), text.toString());
    FileSource source = Sources.of(dir.resolve("in"));
    assertThat(source.schema().findField("late")).as("not in the sample").isNull();

    SchemaDrift drift = source.scan();

    assertThat(drift.added()).extracting(SchemaDrift.Column::name).containsExactly("late", "later");
    assertThat(drift.added().get(0).where()).isEqualTo(dir.resolve("in/a.jsonl") + " line 2500");
    assertThat(drift.added().get(0).type().asStructType().field("a").type()).isEqualTo(Types.DoubleType.get());
    assertThat(drift.added().get(1).type()).isEqualTo(Types.StringType.get());
    source.evolve(drift.plan(null, false, "t"));
    List<Record> all = Sources.readAll(source);
    assertThat(((Record) all.get(2_499).getField("late")).getField("a")).isEqualTo(1.5);
  }

  @Test
  void aJsonFieldThatAppearsAfterTheScanFailsTheReadNamingIt() throws IOException {
    Path file = Sources.lines(dir.resolve("in/a.jsonl"), "{\"id\": 1}", "{\"id\": 2}");
    FileSource source = Sources.of(file);
    source.evolve(source.scan().plan(null, false, "t"));
    Files.writeString(file, "{\"id\": 3, \"sneaky\": 1}\n", StandardOpenOption.APPEND);

    assertThatThrownBy(() -> Sources.readAll(source.badRecords(new DeadLetterFiles(dir.resolve("bad"), "job", 1))))
        .isInstanceOf(IOException.class).isNotInstanceOf(BadRecordException.class)
        .hasMessageContaining("Column 'sneaky' in " + file + " line 3");
  }

  @Test
  void parquetFilesAddColumnsWidenTypesAndRefuseOtherChanges() throws IOException {
    Schema first = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "n", Types.IntegerType.get()));
    Schema second = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "n", Types.LongType.get()),
        Types.NestedField.optional(3, "extra", Types.StringType.get()));
    FileWriters.icebergParquet(dir.resolve("in/a.parquet"), first,
        List.of(GenericRecord.create(first).copy(java.util.Map.of("id", 1L, "n", 7))), false);
    FileWriters.icebergParquet(dir.resolve("in/b.parquet"), second,
        List.of(GenericRecord.create(second).copy(java.util.Map.of("id", 2L, "n", 5_000_000_000L, "extra", "x"))), false);
    FileSource source = Sources.of(dir.resolve("in"));
    assertThat(source.schema().findField("n").type()).as("from the first file").isEqualTo(Types.IntegerType.get());

    SchemaDrift drift = source.scan();

    assertThat(drift.added()).extracting(SchemaDrift.Column::name).containsExactly("extra");
    assertThat(drift.added().get(0).where()).isEqualTo("the schema of " + dir.resolve("in/b.parquet"));
    assertThat(drift.widened().get("n").type()).isEqualTo(Types.LongType.get());
    Schema table = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "n", Types.IntegerType.get()));
    assertThatThrownBy(() -> drift.plan(table, false, "db.t"))
        .hasMessageContaining("Column 'n' is int in table db.t but long in the input")
        .hasMessageContaining("--add-new-columns");
    source.evolve(drift.plan(table, true, "db.t"));
    List<Record> all = Sources.readAll(source);
    assertThat(all).extracting(r -> r.getField("n")).containsExactly(7L, 5_000_000_000L);
    assertThat(all).extracting(r -> r.getField("extra")).containsExactly(null, "x");

    Schema third = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "n", Types.StringType.get()));
    FileWriters.icebergParquet(dir.resolve("in/c.parquet"), third,
        List.of(GenericRecord.create(third).copy(java.util.Map.of("id", 3L, "n", "seven"))), false);
    SchemaDrift changed = Sources.of(dir.resolve("in")).scan();
    assertThat(changed.conflicts()).singleElement().asString()
        .contains("Column 'n' changes type").contains("long in " + dir.resolve("in/b.parquet"))
        .contains("string in " + dir.resolve("in/c.parquet"));
    assertThatThrownBy(() -> changed.plan(null, true, "db.t")).hasMessageContaining("Column 'n' changes type");
  }

  /**
   * A field new inside a struct column, at any depth: found with its path, place and type; a Hive table (columns
   * by name) refuses it with or without evolution; an Iceberg table without the option refuses it, with the option
   * plans the struct with the field, and the values are read.
   */
  @Test
  void jsonFieldsNewInsideStructColumnsAreFoundAtEveryDepth() throws IOException {
    StringBuilder text = new StringBuilder();
    for (int i = 1; i <= 2_000; i++) {
      text.append("{\"id\": ").append(i).append(", \"a\": {\"b\": {\"c\": 1")
          .append(i >= 1_500 ? ", \"d\": " + i : "").append("}}}\n");
    }
    Path file = Sources.write(dir.resolve("in/a.jsonl"), text.toString());
    FileSource source = Sources.of(file);
    assertThat(source.schema().findField("a.b.d")).as("not in the sample").isNull();

    SchemaDrift drift = source.scan();

    assertThat(drift.added()).isEmpty();
    assertThat(drift.nestedAdded()).extracting(SchemaDrift.Column::name).containsExactly("a.b.d");
    assertThat(drift.nestedAdded().get(0).where()).isEqualTo(file + " line 1500");
    assertThat(drift.nestedAdded().get(0).type()).isEqualTo(Types.LongType.get());
    assertThatThrownBy(() -> drift.planByName(List.of("id", "a"), true, "db.t"))
        .hasMessageContaining("Input field 'a.b.d' (first in " + file + " line 1500)")
        .hasMessageContaining("struct columns are not evolved");
    Schema table = source.schema();
    assertThatThrownBy(() -> drift.plan(table, false, "db.t"))
        .hasMessageContaining("Input field 'a.b.d' (first in " + file + " line 1500) is not in struct column 'a'")
        .hasMessageContaining("--add-new-columns");

    Schema planned = drift.plan(table, true, "db.t");
    assertThat(planned.findField("a.b.d").type()).isEqualTo(Types.LongType.get());
    List<Record> all = Sources.readAll(source.evolve(planned));
    Record b = (Record) ((Record) all.get(1_799).getField("a")).getField("b");
    assertThat(b.getField("d")).isEqualTo(1_800L);
    assertThat(((Record) ((Record) all.get(0).getField("a")).getField("b")).getField("d")).isNull();
  }

  /**
   * A line that does not parse (or repeats a key) is skipped by the scan as a whole, also the columns before the
   * place it breaks: the read reports it as a bad record, so it adds nothing to the table's schema. Lines around it are parsed one
   * parser per file (a malformed line drops it); their columns are found at their lines.
   */
  @Test
  void aMalformedJsonLineAddsNoColumnAndTheLinesAfterItAreStillScanned() throws IOException {
    Path file = Sources.lines(dir.resolve("in/a.jsonl"), "{\"id\": 1}", "{\"id\": 2, \"ghost\": 2",
        "{\"id\": 3, \"n\": {\"x\": 1}} \"tail", "{\"id\": 4, \"late\": \"x\"}", "[1, 2]",
        "{\"id\": 5, \"s\": {\"k\": 1, \"deep\": ", "{\"id\": 6, \"later\": 1.5}   ",
        "{\"id\": 7} {\"other\": 1}", "{\"id\": 8, \"last\": true}", "{\"id\": 9, \"twice\": 1, \"twice\": 2}",
        "{\"id\": 10, \"s\": {\"k\": 1, \"k\": 2, \"inner\": 1}}", "{\"dup\": 1, \"id\": 11, \"id\": 12}");
    Schema schema = new Schema(Types.NestedField.optional(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "s", Types.StructType.of(
            Types.NestedField.optional(3, "k", Types.LongType.get()))));

    SchemaDrift drift = Sources.of(file, InputFormat.JSON, schema).scan(1);

    // line 3's object is whole: what follows it is the read's to report, as ever; line 8's second object is not read
    assertThat(drift.added()).extracting(SchemaDrift.Column::name, SchemaDrift.Column::where).containsExactly(
        org.assertj.core.groups.Tuple.tuple("n", file + " line 3"),
        org.assertj.core.groups.Tuple.tuple("late", file + " line 4"),
        org.assertj.core.groups.Tuple.tuple("later", file + " line 7"),
        org.assertj.core.groups.Tuple.tuple("last", file + " line 9"));
    assertThat(drift.added().get(0).type().asStructType().field("x").type()).isEqualTo(Types.LongType.get());
    assertThat(drift.added().subList(1, 4)).extracting(SchemaDrift.Column::type).containsExactly(Types.StringType.get(),
        Types.DoubleType.get(), Types.BooleanType.get());
    assertThat(drift.nestedAdded()).as("line 6 breaks inside struct s").isEmpty();
  }

  /**
   * JSON and CSV files are scanned on several threads, one file each, and merged in file order: whatever the files
   * hold (new columns first seen in any file, their values of kinds that join differently, new fields in a struct
   * column, lines that do not parse), the result is the one of a scan on one thread.
   */
  @Test
  void filesScannedOnManyThreadsFindWhatOneThreadFinds() throws IOException {
    Schema schema = new Schema(Types.NestedField.optional(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "s", Types.StructType.of(
            Types.NestedField.optional(3, "k", Types.LongType.get()))));
    String[] values = {"1", "2.5", "\"text\"", "\"2026-12-02\"", "\"2026-12-02T10:00:00Z\"", "true", "null",
        "{\"p\": 1}", "{\"q\": \"x\"}", "[1, 2]", "[1.5]"};
    for (long seed = 1; seed <= 20; seed++) {
      java.util.Random random = new java.util.Random(seed);
      Path json = dir.resolve("json-" + seed);
      Path csv = dir.resolve("csv-" + seed);
      for (int f = 0; f < 2 + random.nextInt(14); f++) {
        StringBuilder lines = new StringBuilder();
        StringBuilder rows = new StringBuilder();
        List<String> header = new java.util.ArrayList<>(List.of("id"));
        for (int c = 0; c < random.nextInt(4); c++) {
          String name = "c" + random.nextInt(6);
          if (!header.contains(name)) {
            header.add(name);
          }
        }
        rows.append(String.join(",", header)).append('\n');
        for (int line = 0; line < 1 + random.nextInt(40); line++) {
          lines.append(jsonLine(random, values)).append('\n');
          List<String> cells = new java.util.ArrayList<>(List.of(String.valueOf(line)));
          for (int c = 1; c < header.size(); c++) {
            cells.add(List.of("7", "7.5", "x", "2026-12-02", "", "true").get(random.nextInt(6)));
          }
          rows.append(String.join(",", cells)).append('\n');
        }
        Sources.write(json.resolve(String.format("f%02d.jsonl", f)), lines.toString());
        Sources.write(csv.resolve(String.format("f%02d.csv", f)), rows.toString());
      }
      for (Path input : List.of(json, csv)) {
        FileSource source = Sources.of(input, null, input == json ? schema : schema.select("id"));
        String oneThread = describe(source.scan(1));
        assertThat(oneThread).as("seed %d: new columns to find", seed).containsPattern("added \\w");
        for (int threads : new int[] {2, 3, 8}) {
          assertThat(describe(source.scan(threads))).as("seed %d, %s, %d threads", seed, input, threads)
              .isEqualTo(oneThread);
        }
      }
    }
  }

  /**
   * Lines whose top-level keys are all columns the scan has already seen are skipped without being parsed: whatever
   * the lines hold (keys written with escapes, whitespace before the colon, strings that look like keys, nested
   * objects, a second object after the first, lines cut anywhere or with a byte changed), the scan finds what it
   * finds when it parses every line.
   */
  @Test
  void linesSkippedUnparsedChangeNothingTheScanFinds() throws IOException {
    Schema schema = new Schema(Types.NestedField.optional(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "s", Types.StructType.of(
            Types.NestedField.optional(3, "k", Types.LongType.get()))),
        Types.NestedField.optional(4, "v", Types.StringType.get()));
    String[] values = {"1", "2.5", "\"text\"", "\"a\\\": {\"c1\": \"", "true", "null", "{\"p\": 1}",
        "{\"c1\": \"x\"}", "[1, {\"c2\": 2}]", "\"}\""};
    String[] keys = {"\"id\"", "\"v\"", "\"s\"", "\"c1\"", "\"c2\"", "\"\\u0069d\"", "\"c\\u0031\"", "\"c2\" \r ",
        "\"c1\"\t"};
    long skippedBefore = SchemaScan.SKIPPED_UNPARSED.sum();
    for (long seed = 1; seed <= 40; seed++) {
      java.util.Random random = new java.util.Random(seed);
      StringBuilder text = new StringBuilder();
      for (int i = 0; i < 200; i++) {
        StringBuilder line = new StringBuilder("{\"id\": ").append(i);
        for (int f = 0; f < random.nextInt(4); f++) {
          String key = random.nextInt(4) == 0 ? keys[random.nextInt(keys.length)] : "\"v\"";
          String value = key.startsWith("\"s\"") ? "{\"k\": 1" + (random.nextInt(5) == 0 ? ", \"n\": 1}" : "}")
              : values[random.nextInt(values.length)];
          line.append(", ").append(key).append(": ").append(value);
        }
        line.append('}');
        if (random.nextInt(10) == 0) {
          line.append(random.nextBoolean() ? " {\"c3\": 1}" : " ]");
        }
        String written = line.toString();
        switch (random.nextInt(12)) {
          case 0 -> written = written.substring(0, random.nextInt(written.length()));
          case 1 -> {
            char[] chars = written.toCharArray();
            chars[random.nextInt(chars.length)] = "{}[]\":, \\".charAt(random.nextInt(9));
            written = new String(chars);
          }
          default -> { }
        }
        text.append(written).append('\n');
      }
      Path file = Sources.write(dir.resolve("skip-" + seed + "/a.jsonl"), text.toString());
      FileSource source = Sources.of(file, InputFormat.JSON, schema);
      String skipped = describe(source.scan(1));
      SchemaScan.skipSettledLines = false;
      try {
        assertThat(skipped).as("seed %d", seed).isEqualTo(describe(source.scan(1)));
      } finally {
        SchemaScan.skipSettledLines = true;
      }
    }
    assertThat(SchemaScan.SKIPPED_UNPARSED.sum() - skippedBefore).as("lines skipped").isGreaterThan(2_000);
  }

  private static String jsonLine(java.util.Random random, String[] values) {
    if (random.nextInt(30) == 0) {
      return "{\"id\": 1, \"broken\": ";
    }
    StringBuilder line = new StringBuilder("{\"id\": ").append(random.nextInt(100));
    if (random.nextBoolean()) {
      line.append(", \"s\": {\"k\": 1").append(random.nextBoolean() ? ", \"n" + random.nextInt(3) + "\": "
          + values[random.nextInt(values.length)] : "").append('}');
    }
    for (int c = 0; c < random.nextInt(3); c++) {
      line.append(", \"c").append(random.nextInt(6) * 10 + c).append("\": ").append(values[random.nextInt(values.length)]);
    }
    return line.append('}').toString();
  }

  private static String describe(SchemaDrift drift) {
    StringBuilder text = new StringBuilder();
    text.append("added ");
    drift.added().forEach(c -> text.append(c.name()).append(' ').append(c.type()).append(" at ").append(c.where())
        .append("; "));
    text.append("\nnested ");
    drift.nestedAdded().forEach(c -> text.append(c.name()).append(' ').append(c.type()).append(" at ")
        .append(c.where()).append("; "));
    text.append("\nseen ");
    for (String name : new String[] {"id", "s", "v", "c0", "c1", "c2", "c3", "c4", "c5"}) {
      drift.column(name).ifPresent(c -> text.append(name).append(" at ").append(c.where()).append("; "));
    }
    return text.append("\ninput schema ").append(drift.inputSchema().asStruct()).toString();
  }
}
