package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * JSON lines parsed with one reused parser ({@link Json.Lines}) give what each line parsed alone gives: the same
 * value, or the same error, also on the lines after a malformed one.
 */
class JsonLinesTest {
  private static final String[] GOOD = {
      "{\"id\": 1, \"name\": \"a\", \"amount\": 12.50, \"tags\": [1, 2, {\"k\": null}], \"ok\": true}",
      "{}", "  {\"big\": 123456789012345678901234567890, \"neg\": -0.0, \"e\": 1e400}\t ",
      "{\"nested\": {\"a\": {\"b\": [[], {}]}}, \"s\": \"quote \\\" and \\\\ and \\u0041\"}",
      "{\"n\": 0}", "{\"x\":false,\"y\":null}"};
  private static final String[] BAD = {
      "{\"id\": 1, \"id\": 2}", "{\"id\": 1", "{\"id\": 1} {\"id\": 2}", "{\"id\": 1} \"tail",
      "{\"id\": 1} t", "[1, 2]", "123", "\"text\"", "nul", "{\"id\": }", "{\"id\" 1}", "{\"a\": [1, 2}",
      "{\"a\": 1,}", "}", "{\"a\": 1}}", "{\"s\": \"unterminated}"};

  @Test
  void everyLineParsesAsItDoesAloneAndAWellFormedLineKeepsTheParser() {
    Random random = new Random(20261203L);
    int checked = 0;
    int broken = 0;
    for (int run = 0; run < 300; run++) {
      try (Json.Lines lines = new Json.Lines()) {
        int malformed = 0;
        for (int i = 0; i < 30; i++) {
          String line = line(random);
          // the line is given in a buffer longer than it, reused for the next line, as TextRecords does
          byte[] buffer = new byte[line.length() + 8];
          byte[] bytes = line.getBytes(StandardCharsets.US_ASCII);
          System.arraycopy(bytes, 0, buffer, 0, bytes.length);
          java.util.Arrays.fill(buffer, bytes.length, buffer.length, (byte) '}');
          String alone = outcome(() -> Json.parse(bytes, bytes.length));
          String reused = outcome(() -> lines.parse(buffer, bytes.length));
          assertThat(reused).as("line %s after %s line(s)", line, i).isEqualTo(alone);
          checked++;
          if (!alone.startsWith("value {")) {
            malformed++;
          }
        }
        broken += malformed;
        assertThat(lines.parsers()).as("a parser for the first line and one after each line that is not one object")
            .isBetween(1, 1 + malformed);
      }
    }
    assertThat(checked).isEqualTo(9_000);
    assertThat(broken).as("malformed lines were given").isGreaterThan(1_000);
  }

  @Test
  void wellFormedLinesShareOneParser() throws Exception {
    try (Json.Lines lines = new Json.Lines()) {
      for (int i = 0; i < 1_000; i++) {
        byte[] bytes = GOOD[i % GOOD.length].getBytes(StandardCharsets.US_ASCII);
        lines.parse(bytes, bytes.length);
      }
      assertThat(lines.parsers()).isEqualTo(1);
      byte[] bad = "{\"id\": 1} 2".getBytes(StandardCharsets.US_ASCII);
      assertThat(outcome(() -> lines.parse(bad, bad.length))).startsWith("error unexpected value after the JSON value");
      byte[] good = GOOD[0].getBytes(StandardCharsets.US_ASCII);
      assertThat(outcome(() -> lines.parse(good, good.length))).isEqualTo(outcome(() -> Json.parse(good, good.length)));
      assertThat(lines.parsers()).isEqualTo(2);
    }
  }

  /** A good line, a bad one, or a good one cut, with a byte changed or a value appended. */
  private static String line(Random random) {
    String good = GOOD[random.nextInt(GOOD.length)];
    switch (random.nextInt(6)) {
      case 0:
        return BAD[random.nextInt(BAD.length)];
      case 1:
        return good.substring(0, random.nextInt(good.length()) + 1);
      case 2: {
        char[] chars = good.toCharArray();
        chars[random.nextInt(chars.length)] = "{}[]\",: 0a\\t".charAt(random.nextInt(12));
        return new String(chars);
      }
      case 3:
        return good + " " + List.of("1", "{}", "\"x", "t", "  ", "\t").get(random.nextInt(6));
      default:
        return good;
    }
  }

  private interface Parse {
    Object run() throws Json.SyntaxException;
  }

  private static String outcome(Parse parse) {
    try {
      Object value = parse.run();
      return "value " + (value instanceof java.util.Map ? "{" : "") + value;
    } catch (Json.SyntaxException e) {
      return "error " + e.getMessage();
    } catch (RuntimeException e) {
      return "thrown " + e;
    }
  }
}
