package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.runtime.CheckpointedSource.SourceReader;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import org.apache.avro.SchemaBuilder;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An input is one input however it is spelled, and a position knows the file it was taken in: a file replaced,
 * truncated or rewritten under the same name stops the resume naming the file and what changed; appending is
 * fine; positions of the previous version still resume.
 */
class InputIdentityTest {
  @TempDir
  Path dir;

  @Test
  void localSpellingsOfOneInputAreOneLocation() {
    Path cwd = Path.of("").toAbsolutePath();
    String absolute = cwd.resolve("in/a.jsonl").toString();
    assertThat(List.of("in/a.jsonl", "./in/a.jsonl", absolute, "in//a.jsonl", "in/x/../a.jsonl", "file:in/a.jsonl",
        "file://" + absolute)).extracting(InputLocations::canonical).containsOnly(absolute);
    assertThat(InputLocations.canonical("in/")).isEqualTo(cwd.resolve("in").toString());
    assertThat(InputLocations.canonical("./in/*.jsonl")).isEqualTo(cwd.resolve("in/*.jsonl").toString());
    assertThat(InputLocations.canonical("in/b.jsonl")).isNotEqualTo(absolute);
  }

  @Test
  void objectStoreLocationsAreNormalised() {
    assertThat(List.of("s3://bucket/in/a.jsonl", "s3a://bucket/in/a.jsonl", "S3://bucket/in/a.jsonl",
        "s3n://bucket/in/a.jsonl")).extracting(InputLocations::canonical).containsOnly("s3://bucket/in/a.jsonl");
    assertThat(InputLocations.canonical("s3://bucket/in/")).isEqualTo("s3://bucket/in");
    assertThat(InputLocations.canonical("s3://bucket/In/a.jsonl")).as("keys are case-sensitive")
        .isEqualTo("s3://bucket/In/a.jsonl");
    assertThat(InputLocations.canonical("HDFS://NameNode:8020/in/./a/../b")).isEqualTo("hdfs://namenode:8020/in/b");
    assertThat(InputLocations.canonical("s3a://bucket/in/*.csv")).isEqualTo("s3://bucket/in/*.csv");
  }

  /** The landing file of one day replaced by the next day's under the same name: never resumed at the old offset. */
  @Test
  void aReplacedFileStopsTheResumeNamingTheFile() throws IOException {
    Path file = Sources.lines(dir.resolve("in/landing.jsonl"), rows(1, 1000));
    byte[] atEnd = readAllPositions(Sources.of(file)).get(1000);

    Sources.lines(file, rows(1001, 2000)); // the next day's file: same name, as long or longer
    FileSource source = Sources.of(file);
    assertThatThrownBy(() -> Sources.drain(source.open(atEnd))).isInstanceOfSatisfying(ChangedInputException.class,
        e -> assertThat(e.file()).isEqualTo(file.toString()))
        .hasMessageContaining("Input file " + file + " changed")
        .hasMessageContaining("are not the same any more; it was replaced or rewritten")
        .hasMessageContaining("--on-changed-input new-job");
    assertThatThrownBy(() -> source.checkResumable(atEnd)).isInstanceOf(ChangedInputException.class);
  }

  @Test
  void aRewrittenLineInTheConsumedPartStopsTheResumeEvenWithTheSameSizeAndTime() throws IOException {
    Path file = Sources.lines(dir.resolve("a.csv"), "id,name", "1,aa", "2,bb", "3,cc");
    FileTime time = Files.getLastModifiedTime(file);
    byte[] afterTwo = readAllPositions(Sources.of(file)).get(2);
    Sources.lines(file, "id,name", "1,aa", "7,bb", "3,cc");
    Files.setLastModifiedTime(file, time);
    assertThatThrownBy(() -> Sources.drain(Sources.of(file).open(afterTwo)))
        .isInstanceOf(ChangedInputException.class).hasMessageContaining("first 18 bytes (lines 1-3, already read)");

    Sources.lines(file, "id,name", "1,aa", "2,bb", "3,cc", "4,dd");
    assertThat(Sources.drain(Sources.of(file).open(afterTwo))).as("changed only after the position: appended")
        .extracting(r -> r.getField("id")).containsExactly(3L, 4L);
  }

  @Test
  void aTruncatedFileStopsTheResume() throws IOException {
    Path file = Sources.lines(dir.resolve("a.jsonl"), rows(1, 10));
    byte[] afterEight = readAllPositions(Sources.of(file)).get(8);
    Sources.lines(file, rows(1, 5));
    assertThatThrownBy(() -> Sources.drain(Sources.of(file).open(afterEight)))
        .isInstanceOf(ChangedInputException.class)
        .hasMessageContaining("it has 80 bytes, fewer than the 128 bytes (8 lines) already read");
  }

  @Test
  void aReplacedAvroFileStopsTheResume() throws IOException {
    org.apache.avro.Schema avro = SchemaBuilder.record("row").fields().requiredLong("id").endRecord();
    List<org.apache.avro.generic.GenericRecord> rows = new ArrayList<>();
    for (long i = 0; i < 6; i++) {
      org.apache.avro.generic.GenericData.Record row = new org.apache.avro.generic.GenericData.Record(avro);
      row.put("id", i);
      rows.add(row);
    }
    Path file = FileWriters.plainAvro(dir.resolve("a.avro"), avro, rows.subList(0, 4), 2);
    byte[] afterThree = readAllPositions(Sources.of(file)).get(3);
    Files.delete(file);
    FileWriters.plainAvro(file, avro, rows, 2);
    assertThatThrownBy(() -> Sources.drain(Sources.of(file).open(afterThree)))
        .isInstanceOf(ChangedInputException.class)
        .hasMessageContaining("changed since 3 of its records were read: it is not the same file");
  }

  @Test
  void anUnchangedFileResumesAndItsPositionsCarryTheFingerprint() throws IOException {
    Path file = Sources.lines(dir.resolve("in/a.jsonl"), rows(1, 5));
    Sources.lines(dir.resolve("in/b.jsonl"), rows(6, 9));
    FileSource source = Sources.of(dir.resolve("in"));
    Sources.assertResumesExactly(source);
    Position third = Position.parse(readAllPositions(source).get(3));
    assertThat(third.fingerprint().size()).isEqualTo(Files.size(file));
    assertThat(third.fingerprint().modified()).isEqualTo(Files.getLastModifiedTime(file).toMillis());
    assertThat(third.checksum()).isEqualTo(TextRecords.prefixChecksum(file.toString(),
        org.apache.iceberg.Files.localInput(file.toFile()), third.offset()));
  }

  /** Positions written before fingerprints (version 1) restore, and the reader then records fingerprints. */
  @Test
  void versionOnePositionsStillResume() throws IOException {
    Path file = Sources.lines(dir.resolve("a.jsonl"), rows(1, 4));
    byte[] v1 = versionOne(0, 1, file.toString(), Position.listingHash(List.of(file.toString()), 0), true, 32, 2);
    assertThat(FileSource.describe(v1)).isEqualTo("file 1/1 " + file + " line 2");
    FileSource source = Sources.of(file);
    source.checkResumable(v1);
    try (SourceReader<Record> reader = source.open(v1)) {
      assertThat(Sources.drain(reader)).extracting(r -> r.getField("id")).containsExactly(3L, 4L);
      Position now = Position.parse(reader.position());
      assertThat(now.fingerprint().known()).isTrue();
      assertThat(now.offset()).isEqualTo(64);
    }
    byte[] past = versionOne(0, 1, file.toString(), Position.listingHash(List.of(file.toString()), 0), true, 100, 6);
    assertThatThrownBy(() -> Sources.drain(source.open(past))).isInstanceOf(ChangedInputException.class)
        .hasMessageContaining("it has 64 bytes, fewer than the 100 bytes (6 lines) already read");
  }

  @Test
  void positionsRoundTripWithFingerprintDivertedCountAndFinishedFiles() {
    Position position = new Position(2, 5, "s3://b/in/c.jsonl", 42, true, 1200, 30,
        new Fingerprint(5000, 1_700_000_000_000L, "\"etag-1\""), 99, 7, false);
    assertThat(Position.parse(position.toBytes())).isEqualTo(position);
    Position finished = new Position(2, 5, "s3://b/in/c.parquet", 42, false, 0, 0, Fingerprint.UNKNOWN, 0, 8, true);
    assertThat(Position.parse(finished.toBytes())).isEqualTo(finished);
    assertThat(FileSource.divertedAt(finished.toBytes())).isEqualTo(8);
    assertThat(FileSource.describe(finished.toBytes())).isEqualTo("file 3/5 s3://b/in/c.parquet (rejected whole)");
  }

  /**
   * Was: only the file a position was taken in was checked; an earlier file of the input replaced under its name was
   * never read again ("Nothing new to commit", its new rows lost). Now every file the reader finished is checked.
   */
  @Test
  void aFinishedFileReplacedUnderItsNameWithTheSameSizeStopsTheResume() throws IOException {
    Path a = Sources.lines(dir.resolve("in/a.jsonl"), rows(1, 5));
    Sources.lines(dir.resolve("in/b.jsonl"), rows(6, 9));
    List<byte[]> positions = readAllPositions(Sources.of(dir.resolve("in")));
    byte[] atEnd = positions.get(9);
    assertThat(Position.parse(atEnd).done().size()).as("a.jsonl finished").isEqualTo(1);
    assertThat(Position.parse(positions.get(5)).done().size()).as("a.jsonl not yet known finished").isZero();

    FileTime before = Files.getLastModifiedTime(a);
    Sources.lines(a, rows(101, 105)); // other rows, the same size
    Files.setLastModifiedTime(a, FileTime.fromMillis(before.toMillis() + 2000));
    assertThat(Files.size(a)).isEqualTo(80);
    FileSource source = Sources.of(dir.resolve("in"));
    assertThatThrownBy(() -> source.checkResumable(atEnd)).isInstanceOfSatisfying(ChangedInputException.class,
        e -> assertThat(e.file()).isEqualTo(a.toString()))
        .hasMessageContaining("Input file " + a + " changed after the job read it to its end: its modification time")
        .hasMessageNotContaining("its size")
        .hasMessageContaining("--on-changed-input new-job");
    assertThatThrownBy(() -> source.open(atEnd)).isInstanceOf(ChangedInputException.class);
    assertThatThrownBy(() -> Sources.drain(source.open(positions.get(5)))).as("resumed in a.jsonl: its checksum")
        .isInstanceOf(ChangedInputException.class).hasMessageContaining("are not the same any more");
  }

  @Test
  void aFileRejectedWholeIsFingerprintedToo() throws IOException {
    Path bad = Files.writeString(Files.createDirectories(dir.resolve("in")).resolve("a.avro"), "not avro at all");
    org.apache.avro.Schema avro = SchemaBuilder.record("row").fields().requiredLong("id").endRecord();
    org.apache.avro.generic.GenericData.Record row = new org.apache.avro.generic.GenericData.Record(avro);
    row.put("id", 1L);
    FileWriters.plainAvro(dir.resolve("in/b.avro"), avro, List.of(row), 1);
    FileSource source = FileSource.of(dir.resolve("in").toString(), InputFormat.AVRO,
        SchemaParser.parse("id long"), null, null).badRecords(BadInputTest.sink(new ArrayList<>()));
    byte[] atEnd;
    try (SourceReader<Record> reader = source.open(null)) {
      assertThat(Sources.drain(reader)).hasSize(1);
      atEnd = reader.position();
    }
    assertThat(Position.parse(atEnd).done().get(0).size()).isEqualTo(15);
    Files.writeString(bad, "not avro at all, longer");
    assertThatThrownBy(() -> source.checkResumable(atEnd)).isInstanceOf(ChangedInputException.class)
        .hasMessageContaining(bad + " changed after the job read it to its end: its size (15 bytes then, 23 now)");
  }

  @Test
  void finishedFilesShareOneArrayAndNeverChange() {
    ConsumedFiles one = ConsumedFiles.NONE.plus(new ConsumedFiles.Entry(1, 1, 0));
    ConsumedFiles two = one.plus(new ConsumedFiles.Entry(2, 2, 0));
    ConsumedFiles other = one.plus(new ConsumedFiles.Entry(3, 3, 0));
    assertThat(one.size()).isEqualTo(1);
    assertThat(two.get(1).size()).isEqualTo(2);
    assertThat(other.get(1).size()).isEqualTo(3);
    assertThat(two).isNotEqualTo(other).isEqualTo(ConsumedFiles.of(new ConsumedFiles.Entry(1, 1, 0),
        new ConsumedFiles.Entry(2, 2, 0)));
  }

  /** Stored bytes of every version of a position read as they were written (regenerate only on purpose). */
  @Test
  void storedPositionsOfEveryVersionAreRead() throws IOException {
    byte[] v1 = getClass().getResourceAsStream("/compat/file-position-v1.bin").readAllBytes();
    assertThat(Position.parse(v1)).isEqualTo(new Position(2, 5, "s3://bucket/in/c.jsonl", 0x1234567890abcdefL, true,
        1200, 30));
    byte[] v2 = getClass().getResourceAsStream("/compat/file-position-v2.bin").readAllBytes();
    Position position = new Position(2, 5, "s3://bucket/in/c.jsonl", 0x1234567890abcdefL, true, 1200, 30,
        new Fingerprint(5000, 1_700_000_000_000L, "\"etag-1\""), 99, 7, false);
    assertThat(Position.parse(v2)).isEqualTo(position);
    byte[] v3 = getClass().getResourceAsStream("/compat/file-position-v3.bin").readAllBytes();
    Position three = new Position(2, 5, "s3://bucket/in/c.jsonl", 0x1234567890abcdefL, true, 1200, 30,
        new Fingerprint(5000, 1_700_000_000_000L, "\"etag-1\""), 99, 7, false, ConsumedFiles.of(
            new ConsumedFiles.Entry(100, 1_700_000_000_000L, ConsumedFiles.versionHash("\"etag-a\"")),
            new ConsumedFiles.Entry(200, 1_700_000_001_000L, ConsumedFiles.versionHash("\"etag-b\""))), 1230);
    assertThat(Position.parse(v3)).isEqualTo(three);
    assertThat(three.toBytes()).isEqualTo(v3);
  }

  static String[] rows(int from, int to) {
    String[] rows = new String[to - from + 1];
    for (int i = 0; i < rows.length; i++) {
      rows[i] = "{\"id\":" + " ".repeat(8 - Integer.toString(from + i).length()) + (from + i) + "}";
    }
    return rows; // 16 bytes a line with its line feed
  }

  /** Every position of a source: after 0, 1, ... n records. */
  static List<byte[]> readAllPositions(FileSource source) throws IOException {
    List<byte[]> positions = new ArrayList<>();
    try (SourceReader<Record> reader = source.open(null)) {
      positions.add(reader.position());
      while (reader.next() != null) {
        positions.add(reader.position());
      }
    }
    return positions;
  }

  private static byte[] versionOne(int index, int count, String file, long hash, boolean lines, long offset,
      long consumed) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(1);
      out.writeInt(index);
      out.writeInt(count);
      byte[] name = file.getBytes(StandardCharsets.UTF_8);
      out.writeInt(name.length);
      out.write(name);
      out.writeLong(hash);
      out.writeByte(lines ? 0 : 1);
      out.writeLong(offset);
      out.writeLong(consumed);
    }
    return bytes.toByteArray();
  }
}
