package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.TemporalAccessor;
import java.util.Objects;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The digit-by-digit path for common timestamps gives exactly what the formatter gives, for valid texts and for
 * every near miss (out-of-range fields, odd separators, fractions, offsets), so it changes speed and nothing else.
 */
class TimestampParsingTest {
  private static final String[] ZONES = {"", "", "Z", "z", "+01:00", "-05:30", "+00:00", "-00:00", "+18:00",
      "+19:00", "+05:60", "+0530", "+05", "Zx", "+5:30", "+05:30:15", " "};
  private static final String[] SEPARATORS = {"T", "T", "t", " ", "x", "_"};

  @Test
  void commonShapesParseAsTheFormatterParsesThem() {
    long seed = System.nanoTime();
    Random random = new Random(seed);
    int fastPath = 0;
    int parsed = 0;
    for (int i = 0; i < 20_000; i++) {
      String text = candidate(random);
      TemporalAccessor expected = Values.parseTimestampWithFormatter(text);
      TemporalAccessor actual = Values.parseTimestamp(text);
      assertThat(Objects.equals(actual, expected))
          .as("'%s' (seed %s): %s, the formatter gives %s", text, seed, actual, expected).isTrue();
      if (actual != null) {
        parsed++;
        assertThat(actual.getClass()).isEqualTo(expected.getClass());
      }
      if (Values.parseCommonTimestamp(text) != null) {
        fastPath++;
      }
    }
    // Both paths were exercised: most valid texts took the fast one, and some texts only the formatter reads.
    assertThat(fastPath).as("texts read by the fast path (seed %s)", seed).isGreaterThan(2_000);
    assertThat(parsed).as("texts read at all (seed %s)", seed).isGreaterThan(fastPath);
  }

  @Test
  void examples() {
    assertThat(Values.parseTimestamp("2026-11-01T00:00:00Z"))
        .isEqualTo(OffsetDateTime.of(2026, 11, 1, 0, 0, 0, 0, ZoneOffset.UTC));
    assertThat(Values.parseTimestamp("2026-11-01 12:34:56.789"))
        .isEqualTo(LocalDateTime.of(2026, 11, 1, 12, 34, 56, 789_000_000));
    assertThat(Values.parseTimestamp("2026-11-01t12:34-05:30"))
        .isEqualTo(OffsetDateTime.of(2026, 11, 1, 12, 34, 0, 0, ZoneOffset.ofHoursMinutes(-5, -30)));
    // The formatter's smart resolution: a day past the month's end is its last day (the fast path leaves it).
    assertThat(Values.parseCommonTimestamp("2026-02-30T00:00:00")).isNull();
    assertThat(Values.parseTimestamp("2026-02-30T00:00:00")).isEqualTo(LocalDateTime.of(2026, 2, 28, 0, 0));
    assertThat(Values.parseTimestamp("2026-13-01T00:00:00")).isNull();
  }

  private static String candidate(Random random) {
    StringBuilder text = new StringBuilder();
    text.append(pad(random.nextInt(10) == 0 ? random.nextInt(10_000) : 1990 + random.nextInt(50), 4))
        .append('-').append(pad(random.nextInt(8) == 0 ? random.nextInt(14) : 1 + random.nextInt(12), 2))
        .append('-').append(pad(random.nextInt(8) == 0 ? random.nextInt(33) : 1 + random.nextInt(28), 2))
        .append(SEPARATORS[random.nextInt(SEPARATORS.length)])
        .append(pad(random.nextInt(8) == 0 ? random.nextInt(26) : random.nextInt(24), 2))
        .append(':').append(pad(random.nextInt(8) == 0 ? random.nextInt(62) : random.nextInt(60), 2));
    if (random.nextInt(5) > 0) {
      text.append(':').append(pad(random.nextInt(8) == 0 ? random.nextInt(62) : random.nextInt(60), 2));
      if (random.nextBoolean()) {
        text.append('.');
        int digits = random.nextInt(11);
        for (int i = 0; i < digits; i++) {
          text.append((char) ('0' + random.nextInt(10)));
        }
      }
    }
    text.append(ZONES[random.nextInt(ZONES.length)]);
    if (random.nextInt(10) == 0) {
      // a near miss anywhere: one character replaced
      int at = random.nextInt(text.length());
      text.setCharAt(at, "0123456789:-.T Zz+x".charAt(random.nextInt(19)));
    }
    return text.toString();
  }

  private static String pad(int value, int width) {
    String digits = Integer.toString(value);
    return "0".repeat(Math.max(0, width - digits.length())) + digits;
  }
}
