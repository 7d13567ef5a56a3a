package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Lines without CSV quotes are read a run of bytes at a time: each record, its offsets, its checksum and the length
 * bound must be what a byte-by-byte reading gives, also for lines that span the 64 KiB read buffer, CR LF endings,
 * empty lines, a last line without a line feed and lines over the bound.
 */
class TextRecordsTest {
  private static final int MAX_RECORD_BYTES = 100_000;

  @Test
  void linesReadInRunsMatchAByteByByteReadingOfTheSameBytes() throws IOException {
    for (long seed = 1; seed <= 20; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      ByteArrayOutputStream text = new ByteArrayOutputStream();
      int lines = 1 + random.nextInt(300);
      for (int i = 0; i < lines; i++) {
        int length = random.nextInt(10) == 0 ? random.nextInt(150_000) : random.nextInt(200);
        for (int j = 0; j < length; j++) {
          text.write('a' + random.nextInt(26));
        }
        if (i < lines - 1 || random.nextBoolean()) {
          if (random.nextInt(4) == 0) {
            text.write('\r');
          }
          text.write('\n');
        }
      }
      byte[] bytes = text.toByteArray();
      List<Expected> expected = byteByByte(bytes);

      List<Expected> read = new ArrayList<>();
      try (TextRecords records = new TextRecords(new ByteArrayInputStream(bytes), 0, false, MAX_RECORD_BYTES)) {
        while (records.next()) {
          read.add(new Expected(Expected.text(records.bytes(), records.length()), records.overlong(),
              records.recordStart(), records.nextOffset(), records.checksum(), records.lines()));
        }
      }
      assertThat(read).as("seed %d: records", seed).hasSameSizeAs(expected);
      for (int i = 0; i < read.size(); i++) {
        assertThat(read.get(i)).as("seed %d, record %d", seed, i).isEqualTo(expected.get(i));
      }
    }
  }

  /** The records of {@code bytes} as lines, read one byte at a time with an FNV-1a checksum of what was consumed. */
  private static List<Expected> byteByByte(byte[] bytes) {
    List<Expected> out = new ArrayList<>();
    long checksum = TextRecords.EMPTY_CHECKSUM;
    int start = 0;
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    boolean overlong = false;
    for (int i = 0; i < bytes.length; i++) {
      checksum = (checksum ^ (bytes[i] & 0xff)) * 0x100000001b3L;
      if (bytes[i] == '\n') {
        out.add(record(line, overlong, start, i + 1, checksum));
        line.reset();
        overlong = false;
        start = i + 1;
      } else if (line.size() < MAX_RECORD_BYTES) {
        line.write(bytes[i]);
      } else {
        overlong = true;
      }
    }
    if (start < bytes.length) {
      out.add(record(line, overlong, start, bytes.length, checksum));
    }
    return out;
  }

  private static Expected record(ByteArrayOutputStream line, boolean overlong, long start, long next, long checksum) {
    byte[] content = line.toByteArray();
    if (!overlong && content.length > 0 && content[content.length - 1] == '\r') {
      content = Arrays.copyOf(content, content.length - 1);
    }
    return new Expected(Expected.text(content, content.length), overlong, start, next, checksum, 1);
  }

  /** A record's content as one char per byte (ISO-8859-1), so that the record compares by value. */
  private record Expected(String content, boolean overlong, long recordStart, long nextOffset, long checksum,
      int lines) {
    static String text(byte[] bytes, int length) {
      return new String(bytes, 0, length, StandardCharsets.ISO_8859_1);
    }
  }
}
