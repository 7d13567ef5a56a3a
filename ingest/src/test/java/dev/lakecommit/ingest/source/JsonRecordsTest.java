package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * JSON lines read straight into records (no map of the object in between) give what the map's way gives: the same
 * record, or the same bad-record report (line, field, message) or failure, for every line, also after a bad one.
 */
class JsonRecordsTest {
  private static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "name", Types.StringType.get()),
      Types.NestedField.optional(3, "amount", Types.DoubleType.get()),
      Types.NestedField.optional(4, "price", Types.DecimalType.of(10, 2)),
      Types.NestedField.optional(5, "ts", Types.TimestampType.withZone()),
      Types.NestedField.optional(6, "tags", Types.ListType.ofOptional(7, Types.LongType.get())),
      Types.NestedField.optional(8, "s", Types.StructType.of(Types.NestedField.required(9, "k", Types.IntegerType.get()))),
      Types.NestedField.optional(10, "n", Types.IntegerType.get()));
  private static final String[] KEYS = {"id", "name", "amount", "price", "ts", "tags", "s", "n", "other", "Id"};
  private static final String[] VALUES = {"1", "-7", "2.5", "1e400", "12345678901234567890", "\"text\"", "\"12.345\"",
      "\"2026-12-03T10:00:00Z\"", "1764756000", "true", "null", "[1, 2, null]", "[\"x\"]", "{\"k\": 1}", "{\"k\": null}",
      "{\"k\": 1, \"k\": 2}", "{}", "\"\"", "3000000000"};

  @TempDir
  Path dir;

  @Test
  void everyLineReadsAsTheMapsWayReadsIt() throws IOException {
    Random random = new Random(3_12_2026L);
    StringBuilder text = new StringBuilder();
    for (int i = 0; i < 3_000; i++) {
      text.append(line(random, i)).append('\n');
    }
    Path file = Sources.write(dir.resolve("a.jsonl"), text.toString());
    for (boolean strict : new boolean[] {false, true}) {
      List<String> direct = outcomes(file, strict);
      JsonRecords.enabled = false;
      List<String> mapped;
      try {
        mapped = outcomes(file, strict);
      } finally {
        JsonRecords.enabled = true;
      }
      assertThat(direct).hasSameSizeAs(mapped).hasSizeGreaterThan(2_900); // a line cut to nothing is blank
      for (int i = 0; i < direct.size(); i++) {
        assertThat(direct.get(i)).as("strict %s, line %d", strict, i + 1).isEqualTo(mapped.get(i));
      }
      assertThat(mapped.stream().filter(o -> o.startsWith("record")).count()).as("records").isGreaterThan(300);
      assertThat(mapped.stream().filter(o -> o.startsWith("bad")).count()).as("bad records").isGreaterThan(500);
    }
  }

  private static String line(Random random, int i) {
    StringBuilder line = new StringBuilder("{");
    if (random.nextInt(8) != 0) {
      line.append("\"id\": ").append(i);
    }
    for (int f = 0; f < random.nextInt(6); f++) {
      line.append(line.length() > 1 ? ", " : "").append('"').append(KEYS[random.nextInt(KEYS.length)])
          .append("\": ").append(VALUES[random.nextInt(VALUES.length)]);
    }
    String written = line.append('}').toString();
    switch (random.nextInt(15)) {
      case 0:
        return written.substring(0, random.nextInt(written.length()));
      case 1:
        return written + " {}";
      case 2:
        return "[" + written + "]";
      case 3:
        return " " + written + " \t";
      default:
        return written;
    }
  }

  private static List<String> outcomes(Path file, boolean strict) throws IOException {
    List<String> outcomes = new ArrayList<>();
    try (JsonFileRecords records = new JsonFileRecords(file.toString(), org.apache.iceberg.Files.localInput(file.toFile()), SCHEMA, 0, 0,
        FileSource.MAX_RECORD_BYTES).strictColumns(strict)) {
      while (true) {
        try {
          Record record = records.next();
          if (record == null) {
            return outcomes;
          }
          outcomes.add("record " + Sources.plain(record));
        } catch (BadRecordException e) {
          outcomes.add("bad " + e.getMessage());
        } catch (IOException e) {
          outcomes.add("failed " + e.getMessage());
        }
      }
    }
  }
}
