package dev.lakecommit.ingest.cli;

import java.time.Duration;
import java.util.Locale;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Durations as {@code 500ms}, {@code 30s}, {@code 5m}, {@code 1h}, {@code 3d} or ISO-8601 ({@code PT30S}). */
public final class DurationConverter implements ITypeConverter<Duration> {
  @Override
  public Duration convert(String value) {
    String text = value.trim().toLowerCase(Locale.ROOT);
    try {
      if (text.startsWith("pt") || text.startsWith("p")) {
        return Duration.parse(value.trim().toUpperCase(Locale.ROOT));
      }
      if (text.endsWith("ms")) {
        return Duration.ofMillis(Long.parseLong(text.substring(0, text.length() - 2)));
      }
      long amount = Long.parseLong(text.substring(0, text.length() - 1));
      return switch (text.charAt(text.length() - 1)) {
        case 's' -> Duration.ofSeconds(amount);
        case 'm' -> Duration.ofMinutes(amount);
        case 'h' -> Duration.ofHours(amount);
        case 'd' -> Duration.ofDays(amount);
        default -> throw new NumberFormatException();
      };
    } catch (RuntimeException e) {
      throw new TypeConversionException("Invalid duration: '" + value + "' (use 500ms, 30s, 5m, 1h, 3d or PT30S)");
    }
  }
}
