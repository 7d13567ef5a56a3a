package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.runtime.CheckpointedSource.SourceReader;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;

/** Test helpers: files, reading a source out, and the resume-at-every-position check. */
final class Sources {
  private Sources() {}

  static FileSource of(Path input) throws IOException {
    return FileSource.of(input.toString(), null, null, Map.of(), null);
  }

  static FileSource of(Path input, InputFormat format, Schema schema) throws IOException {
    return FileSource.of(input.toString(), format, schema, Map.of(), null);
  }

  static Path write(Path file, String text) throws IOException {
    return write(file, text.getBytes(StandardCharsets.UTF_8));
  }

  static Path write(Path file, byte[] bytes) throws IOException {
    Files.createDirectories(file.getParent());
    return Files.write(file, bytes);
  }

  static Path lines(Path file, String... lines) throws IOException {
    return write(file, String.join("\n", lines) + "\n");
  }

  static List<Record> drain(SourceReader<Record> reader) throws IOException {
    List<Record> records = new ArrayList<>();
    for (Record record = reader.next(); record != null; record = reader.next()) {
      records.add(record);
    }
    return records;
  }

  static List<Record> readAll(FileSource source) throws IOException {
    try (SourceReader<Record> reader = source.open(null)) {
      return drain(reader);
    }
  }

  /** Records as plain values (nested records as lists, binary as strings), comparable with equals. */
  static List<Object> values(List<Record> records) {
    List<Object> values = new ArrayList<>();
    for (Record record : records) {
      values.add(plain(record));
    }
    return values;
  }

  static Object plain(Object value) {
    if (value instanceof Record) {
      Record record = (Record) value;
      List<Object> fields = new ArrayList<>();
      for (int i = 0; i < record.size(); i++) {
        fields.add(plain(record.get(i)));
      }
      return fields;
    } else if (value instanceof Collection) {
      List<Object> elements = new ArrayList<>();
      for (Object element : (Collection<?>) value) {
        elements.add(plain(element));
      }
      return elements;
    } else if (value instanceof Map) {
      Map<Object, Object> entries = new LinkedHashMap<>();
      ((Map<?, ?>) value).forEach((k, v) -> entries.put(plain(k), plain(v)));
      return entries;
    } else if (value instanceof ByteBuffer) {
      ByteBuffer bytes = ((ByteBuffer) value).duplicate();
      byte[] copy = new byte[bytes.remaining()];
      bytes.get(copy);
      return "bytes:" + java.util.HexFormat.of().formatHex(copy);
    } else if (value instanceof byte[]) {
      return "bytes:" + java.util.HexFormat.of().formatHex((byte[]) value);
    } else if (value instanceof Double && ((Double) value).isNaN()) {
      return "NaN";
    } else if (value instanceof Float && ((Float) value).isNaN()) {
      return "NaN";
    }
    return value;
  }

  /**
   * Reads the whole source, taking the position after every record, then reopens at each position (0..n records
   * read) and checks that exactly the remaining records come back, and that positions taken by a resumed reader
   * are the same bytes as those of the first reader.
   *
   * @return every record
   */
  static List<Record> assertResumesExactly(FileSource source) throws IOException {
    List<Record> all = new ArrayList<>();
    List<byte[]> positions = new ArrayList<>();
    try (SourceReader<Record> reader = source.open(null)) {
      positions.add(reader.position());
      for (Record record = reader.next(); record != null; record = reader.next()) {
        all.add(record);
        positions.add(reader.position());
      }
    }
    List<Object> expected = values(all);
    for (int k = 0; k <= all.size(); k++) {
      try (SourceReader<Record> reader = source.open(positions.get(k))) {
        assertThat(reader.position()).as("position of a reader reopened after %d records", k)
            .isEqualTo(positions.get(k));
        List<Record> rest = new ArrayList<>();
        for (Record record = reader.next(); record != null; record = reader.next()) {
          rest.add(record);
          assertThat(reader.position()).as("position after record %d, resumed after %d", k + rest.size(), k)
              .isEqualTo(positions.get(k + rest.size()));
        }
        assertThat(values(rest)).as("records after reopening at the position after %d of %d records (%s)", k,
            all.size(), FileSource.describe(positions.get(k))).isEqualTo(expected.subList(k, all.size()));
      }
    }
    return all;
  }
}
