package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The bad inputs users have, each through {@code lakecommit ingest} as a user runs it: every file ends in its
 * documented outcome (README, "What happens to bad input") — committed (0), a usage error found before anything is
 * created (2), a failed job that committed nothing of the bad checkpoint (3), or, with {@code --bad-records}, a
 * completed job whose bad records are in dead-letter files (4) — and never in a silent loss: {@code verify} of
 * every job that exits 0 or 4 finds the table exact against the records that parse.
 */
class BadInputCorpusTest {
  @TempDir Path dir;

  /**
   * One input of the corpus.
   *
   * @param name the file's name (its extension tells the format)
   * @param content writes its content
   * @param options options the user gives ({@code --schema}, ...)
   * @param exit the exit code without {@code --bad-records}
   * @param message what the output says (a part of it), or null
   * @param badRecords the records that go to dead-letter files with {@code --bad-records} (exit 4), or -1 if
   *     {@code --bad-records} does not change the outcome
   */
  record Case(String name, Content content, List<String> options, int exit, String message, int badRecords) {
    Case(String name, byte[] bytes, List<String> options, int exit, String message, int badRecords) {
      this(name, file -> Files.write(file, bytes), options, exit, message, badRecords);
    }

    @Override
    public String toString() {
      return name;
    }
  }

  /** Writes a case's file (large ones are written when their case runs, not held in memory by the corpus). */
  interface Content {
    void writeTo(Path file) throws IOException;
  }

  private static Case ok(String name, String text, String... options) {
    return new Case(name, utf8(text), List.of(options), 0, null, -1);
  }

  private static Case bad(String name, byte[] bytes, String message, int badRecords, String... options) {
    return new Case(name, bytes, List.of(options), 3, message, badRecords);
  }

  private static Case failed(String name, byte[] bytes, String message, String... options) {
    return new Case(name, bytes, List.of(options), 3, message, -1);
  }

  private static Case usage(String name, byte[] bytes, String message, String... options) {
    return new Case(name, bytes, List.of(options), 2, message, -1);
  }

  /**
   * A JSON lines file whose 4th line is 64 MiB and a byte long (the limit, FileSource.MAX_RECORD_BYTES, plus one):
   * a bad record, read in bounded memory, its text cut in the dead-letter file.
   */
  private static Case hugeLine() {
    return new Case("huge-line.jsonl", file -> {
      try (OutputStream out = new java.io.BufferedOutputStream(Files.newOutputStream(file), 1 << 20)) {
        out.write(utf8(lines(0, 3)));
        out.write(utf8("{\"id\": 3, \"name\": \""));
        byte[] chunk = new byte[1 << 20];
        Arrays.fill(chunk, (byte) 'x');
        for (int i = 0; i < 64; i++) {
          out.write(chunk);
        }
        out.write(utf8("\"}\n"));
        out.write(utf8(lines(4, 10)));
      }
    }, List.of("--schema", "id long not null, name string"), 3, "huge-line.jsonl line 4", 1);
  }

  /**
   * A file that cannot be read: permission denied. Mode 000 is no obstacle for root, who reads it anyway; as root
   * the file is a link to a write-only sysfs attribute, which the kernel refuses to open for reading to anyone
   * (EACCES) — the same "Permission denied". Never a bad record: the job stops naming the file, with or without
   * --bad-records. Skipped only where neither works (root, and no such attribute).
   */
  private static Case unreadable() {
    return new Case("unreadable.jsonl", file -> {
      Files.write(file, utf8(lines(0, 10)));
      Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("---------"));
      if (Files.isReadable(file)) { // root
        Files.delete(file);
        Path writeOnly = Stream.of("/sys/bus/cpu/uevent", "/sys/bus/pci/rescan").map(Path::of)
            .filter(BadInputCorpusTest::deniesReading).findFirst().orElse(null);
        org.junit.jupiter.api.Assumptions.assumeTrue(writeOnly != null, "running as root, who reads a mode-000 "
            + "file, and no write-only sysfs attribute to stand in for an unreadable file");
        Files.createSymbolicLink(file, writeOnly);
      }
    }, List.of("--schema", "id long not null, name string"), 3, "Permission denied", -1);
  }

  private static boolean deniesReading(Path path) {
    try (var in = Files.newInputStream(path)) {
      return false;
    } catch (java.nio.file.AccessDeniedException e) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static String lines(int from, int to) {
    StringBuilder text = new StringBuilder();
    for (int i = from; i < to; i++) {
      text.append("{\"id\": ").append(i).append(", \"name\": \"n").append(i).append("\"}\n");
    }
    return text.toString();
  }

  private static byte[] gzip(byte[] bytes) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (OutputStream gz = new GZIPOutputStream(out)) {
      gz.write(bytes);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return out.toByteArray();
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] part : parts) {
      out.writeBytes(part);
    }
    return out.toByteArray();
  }

  static Stream<Case> corpus() {
    byte[] good = utf8(lines(0, 10));
    byte[] gz = gzip(good);
    byte[] bom = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};
    String schema = "id long not null, name string";
    List<Case> cases = new ArrayList<>(List.of(
        // JSON lines
        ok("plain.jsonl", lines(0, 10)),
        ok("crlf.jsonl", lines(0, 10).replace("\n", "\r\n")),
        ok("blank-lines.jsonl", "\n\n" + lines(0, 5) + "\n\n" + lines(5, 10)),
        ok("no-final-newline.jsonl", lines(0, 10).strip()),
        new Case("bom.jsonl", concat(bom, good), List.of(), 0, null, -1),
        ok("nested-nulls.jsonl", "{\"id\": 1, \"a\": {\"b\": null, \"c\": [null, 1]}}\n{\"id\": 2, \"a\": null}\n"),
        ok("unicode.jsonl", "{\"id\": 1, \"name\": \"Zoë 東京 🙂\"}\n"),
        ok("extra-fields-with-schema.jsonl", "{\"id\": 1, \"name\": \"a\", \"other\": 3}\n", "--schema", schema,
            "--add-new-columns"),
        bad("invalid-utf8.jsonl", concat(utf8(lines(0, 3)), new byte[] {'{', '"', 'i', 'd', '"', ':', ' ', '1',
            ',', ' ', '"', 'n', 'a', 'm', 'e', '"', ':', ' ', '"', (byte) 0xC3, (byte) 0x28, '"', '}', '\n'},
            utf8(lines(4, 10))), "invalid-utf8.jsonl", 1),
        bad("truncated-record.jsonl", utf8(lines(0, 5) + "{\"id\": 5, \"na"), "truncated-record.jsonl", 1),
        // a cut line with a field the schema lacks: the scan once counted the field and then failed on its type
        bad("truncated-new-field.jsonl", utf8(lines(0, 3) + "{\"id\": 3, \"name\": \"c\", \"extra\": 1\n"
            + lines(4, 6)), "truncated-new-field.jsonl line 4", 1, "--schema", schema),
        bad("not-an-object.jsonl", utf8(lines(0, 3) + "[1, 2, 3]\n" + lines(4, 6)), "not-an-object.jsonl", 1),
        bad("plain-text-line.jsonl", utf8(lines(0, 3) + "hello world\n" + lines(4, 6)), "plain-text-line.jsonl", 1),
        bad("comment-line.jsonl", utf8("// exported 2026-12-01\n" + lines(0, 5)), "comment-line.jsonl", 1),
        bad("type-change.jsonl", utf8(lines(0, 3) + "{\"id\": \"three\", \"name\": \"x\"}\n" + lines(4, 6)),
            "type-change.jsonl", 1, "--schema", schema),
        bad("number-overflow.jsonl", utf8(lines(0, 3) + "{\"id\": 99999999999999999999, \"name\": \"x\"}\n"),
            "number-overflow.jsonl", 1, "--schema", schema),
        bad("missing-required.jsonl", utf8(lines(0, 3) + "{\"name\": \"no id\"}\n"), "missing-required.jsonl", 1,
            "--schema", schema),
        bad("null-required.jsonl", utf8(lines(0, 3) + "{\"id\": null, \"name\": \"x\"}\n"), "null-required.jsonl", 1,
            "--schema", schema),
        bad("bad-timestamp.jsonl", utf8("{\"id\": 1, \"ts\": \"2026-12-01T00:00:00Z\"}\n{\"id\": 2, \"ts\": \"soon\"}\n"),
            "bad-timestamp.jsonl", 1, "--schema", "id long, ts timestamptz"),
        ok("epoch-millis.jsonl", "{\"id\": 1, \"ts\": 1764547200000}\n", "--schema", "id long, ts timestamptz"),
        bad("bad-boolean.jsonl", utf8("{\"id\": 1, \"ok\": true}\n{\"id\": 2, \"ok\": \"yes\"}\n"), "bad-boolean.jsonl",
            1, "--schema", "id long, ok boolean"),
        usage("empty.jsonl", new byte[0], "give --schema"),
        usage("only-blank-lines.jsonl", utf8("\n\n\n"), "give --schema"),
        // compressed
        new Case("good.jsonl.gz", gz, List.of(), 0, null, -1),
        failed("truncated.jsonl.gz", Arrays.copyOf(gz, gz.length / 2), "truncated.jsonl.gz"),
        failed("not-gzip.jsonl.gz", good, "not-gzip.jsonl.gz"),
        // CSV
        ok("plain.csv", "id,name\n1,a\n2,b\n"),
        new Case("bom.csv", concat(bom, utf8("id,name\n1,a\n2,b\n")), List.of(), 0, null, -1),
        ok("quoted.csv", "id,name\n1,\"a, with comma\"\n2,\"line\nbreak\"\n3,\"say \"\"hi\"\"\"\n"),
        ok("header-only.csv", "id,name\n", "--schema", schema),
        bad("wrong-delimiter.csv", utf8("id;name\n1;a\n2;b\n"), "wrong-delimiter.csv", 1, "--schema", schema),
        bad("ragged-row.csv", utf8("id,name\n1,a\n2,b,extra\n3,c\n"), "ragged-row.csv", 1),
        bad("stray-quote.csv", utf8("id,name\n1,a\n2,\"b\n3,c\n"), "stray-quote.csv", 1),
        bad("csv-type-error.csv", utf8("id,name\n1,a\nx,b\n3,c\n"), "csv-type-error.csv", 1, "--schema", schema),
        usage("empty.csv", new byte[0], "give --schema"),
        // binary formats
        failed("text.parquet", good, "text.parquet"),
        failed("text.avro", good, "text.avro"),
        usage("empty.parquet", new byte[0], "give --schema"),
        failed("truncated.parquet", utf8("PAR1 this is not the rest of a Parquet file"), "truncated.parquet"),
        // names and formats the tool cannot tell
        usage("data.txt", good, "data.txt"),
        usage("data.jsonl.bz2", good, "data.jsonl.bz2"),
        // files that cannot be read in full
        hugeLine(),
        unreadable()));
    return cases.stream();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("corpus")
  void everyBadInputEndsInItsDocumentedOutcome(Case input) throws Exception {
    Path file = dir.resolve("in").resolve(input.name());
    Files.createDirectories(file.getParent());
    input.content().writeTo(file);
    CliRun run = ingest(file, input.options(), "plain");
    assertThat(run.exitCode()).as(run.toString()).isEqualTo(input.exit());
    if (input.message() != null) {
      assertThat(run.out() + run.err()).as(run.toString()).contains(input.message());
    }
    assertThat(run.err()).as("one line, no stack trace").doesNotContain("\tat ").doesNotContain("Exception in thread");
    if (input.exit() == 2) {
      assertThat(dir.resolve("wh/corpus")).as("a usage error creates nothing").doesNotExist();
    }
    if (input.exit() == 0) {
      assertExact(file, input.options(), "plain");
    }
    if (input.exit() == 3 && input.badRecords() < 0) {
      CliRun diverted = ingest(file, input.options(), "diverted", "--bad-records",
          dir.resolve("dead").toString());
      assertThat(diverted.exitCode()).as("a file that cannot be read is never a bad record: " + diverted)
          .isEqualTo(3);
    }
    if (input.badRecords() >= 0) {
      CliRun diverted = ingest(file, input.options(), "diverted", "--bad-records",
          dir.resolve("dead").toString());
      assertThat(diverted.exitCode()).as(diverted.toString()).isEqualTo(4);
      assertThat(diverted.out()).as(diverted.toString())
          .contains(String.format("%,d record(s) of this job went to dead-letter files", input.badRecords()));
      assertExact(file, input.options(), "diverted");
    }
  }

  private CliRun ingest(Path file, List<String> options, String table, String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", file.toString(), "--table", "corpus." + table,
        "--warehouse", dir.resolve("wh").toString()));
    args.addAll(options);
    args.addAll(List.of(extra));
    return CliRun.of(args.toArray(String[]::new));
  }

  /** The table holds every record of the file that parses, once ({@code verify} leaves the others out). */
  private void assertExact(Path file, List<String> options, String table) {
    List<String> args = new ArrayList<>(List.of("verify", "--source", file.toString(), "--table",
        "corpus." + table, "--warehouse", dir.resolve("wh").toString(), "--key", "id", "--json"));
    int schema = options.indexOf("--schema");
    if (schema >= 0) {
      args.addAll(List.of("--schema", options.get(schema + 1)));
    }
    CliRun verify = CliRun.of(args.toArray(String[]::new));
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
  }
}
