package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.runtime.CheckpointedSource.SourceReader;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Only records that do not parse or fit are bad records, and each is one record: a stray CSV quote rejects its
 * line, not the rest of the file; the job's count of diverted records travels in the positions and is bounded.
 */
class BadRecordsTest {
  @TempDir
  Path dir;

  private final List<String> rejected = new ArrayList<>();

  /** The case: a quote left open on row 7 of 25,000 turned the other 24,993 rows into one bad record. */
  @Test
  void anUnterminatedCsvQuoteRejectsOnlyItsLine() throws IOException {
    List<String> lines = new ArrayList<>(List.of("id,name"));
    for (int i = 1; i <= 25_000; i++) {
      lines.add(i == 7 ? "7,\"no closing quote" : i + ",n" + i);
    }
    Path file = Sources.lines(dir.resolve("a.csv"), lines.toArray(String[]::new));
    List<Record> records = Sources.readAll(Sources.of(file).badRecords(sink()));
    assertThat(records).hasSize(24_999);
    assertThat(records.get(6).getField("id")).isEqualTo(8L);
    assertThat(rejected).containsExactly(file + " 8: unterminated quoted field: the quote opened on this line is "
        + "not closed within 1000 lines or before the end of the file; only this line is rejected, reading goes on "
        + "at the next line");
  }

  @Test
  void quotedFieldsSpanUpToTheLimitOfLinesAndResumeExactly() throws IOException {
    StringBuilder text = new StringBuilder("id,note\n1,\"");
    for (int i = 0; i < TextRecords.MAX_QUOTED_LINES - 1; i++) {
      text.append("line ").append(i).append('\n');
    }
    text.append("end\"\n2,\"too long");
    for (int i = 0; i < TextRecords.MAX_QUOTED_LINES; i++) {
      text.append('\n').append(100 + i).append(",x");
    }
    text.append("\n3,\"stray\n4,four\n");
    Path file = Sources.write(dir.resolve("a.csv"), text.toString());
    FileSource source = Sources.of(file, null, SchemaParser.parse("id long, note string")).badRecords(sink());
    List<Record> records = Sources.readAll(source);
    assertThat(records.get(0).getField("note").toString().lines()).hasSize(TextRecords.MAX_QUOTED_LINES);
    assertThat(records).extracting(r -> r.getField("id")).as("the %s lines after the cut are read as rows",
        TextRecords.MAX_QUOTED_LINES).hasSize(2 + TextRecords.MAX_QUOTED_LINES).startsWith(1L, 100L).endsWith(4L);
    assertThat(rejected).hasSize(2).allMatch(r -> r.contains("unterminated quoted field"));
    assertThat(rejected.get(0)).startsWith(file + " 1002:");

    rejected.clear();
    Path small = Sources.write(dir.resolve("small.csv"), "id,note\n1,\"a\nb\"\n2,\"open\n3,x\n4,y\n");
    List<Record> all = Sources.assertResumesExactly(Sources.of(small, null, SchemaParser.parse("id long, note string"))
        .badRecords(sink()));
    assertThat(all).extracting(r -> r.getField("id")).containsExactly(1L, 3L, 4L);
  }

  @Test
  void theDivertedCountTravelsInPositionsAndIsBounded() throws IOException {
    Path file = Sources.lines(dir.resolve("a.jsonl"), "{\"id\": 1}", "bad", "{\"id\": 2}", "bad", "bad",
        "{\"id\": 3}", "bad", "{\"id\": 4}");
    FileSource source = Sources.of(file, null, SchemaParser.parse("id long")).badRecords(sink());
    List<byte[]> positions = InputIdentityTest.readAllPositions(source);
    assertThat(positions).extracting(FileSource::divertedAt).containsExactly(0L, 0L, 1L, 3L, 4L);
    assertThat(rejected).hasSize(4);

    rejected.clear();
    try (SourceReader<Record> reader = source.maxBadRecords(2).open(null)) {
      assertThatThrownBy(() -> Sources.drain(reader)).isInstanceOf(BadRecordLimitException.class)
          .hasMessageContaining("already diverted 2 record(s)").hasMessageContaining(file + " line 5");
    }
    rejected.clear();
    try (SourceReader<Record> reader = source.maxBadRecords(3).open(positions.get(2))) {
      assertThat(reader.next().getField("id")).isEqualTo(3L);
      assertThat(FileSource.divertedAt(reader.position())).as("counted over runs, not again").isEqualTo(3);
      assertThatThrownBy(reader::next).isInstanceOf(BadRecordLimitException.class);
    }
    assertThat(rejected).hasSize(2);
  }

  @Test
  void aFileRejectedWholeIsNotRejectedAgainOnResume() throws IOException {
    Sources.lines(dir.resolve("in/a.csv"), "id,id", "1,2");
    Sources.lines(dir.resolve("in/b.csv"), "id", "3");
    FileSource source = Sources.of(dir.resolve("in"), null, SchemaParser.parse("id long")).badRecords(sink());
    byte[] afterRejection;
    try (SourceReader<Record> reader = source.open(null)) {
      assertThat(reader.next().getField("id")).isEqualTo(3L);
      assertThat(FileSource.divertedAt(reader.position())).isEqualTo(1);
    }
    try (SourceReader<Record> reader = source.open(null)) {
      reader.next();
      afterRejection = reader.position();
    }
    rejected.clear();
    try (SourceReader<Record> reader = source.open(afterRejection)) {
      assertThat(reader.next()).isNull();
    }
    assertThat(rejected).isEmpty();
  }

  private BadRecordSink sink() {
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
}
