package dev.lakecommit.iceberg;

import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;

/** Parses partition transforms as Iceberg's SQL writes them: {@code col}, {@code day(col)}, {@code bucket(16, col)}. */
public final class PartitionSpecs {
  private static final Pattern TRANSFORM = Pattern.compile(
      "\\s*(?:(identity|year|years|month|months|day|days|hour|hours|bucket|truncate)\\s*\\(\\s*"
          + "(?:(\\d+)\\s*,\\s*)?([^()\\s,]+)\\s*\\)|([^()\\s,]+))\\s*",
      Pattern.CASE_INSENSITIVE);

  private PartitionSpecs() {}

  /**
   * @throws IllegalArgumentException naming the transform that is malformed or the column that is missing
   */
  public static PartitionSpec parse(Schema schema, List<String> transforms) {
    PartitionSpec.Builder spec = PartitionSpec.builderFor(schema);
    for (String transform : transforms) {
      Matcher m = TRANSFORM.matcher(transform);
      if (!m.matches()) {
        throw new IllegalArgumentException(String.format(
            "Invalid partition transform: '%s' (use col, year(col), month(col), day(col), hour(col), "
                + "bucket(N, col) or truncate(W, col))", transform));
      }
      String column = m.group(4) != null ? m.group(4) : m.group(3);
      if (schema.findField(column) == null) {
        throw new IllegalArgumentException(
            String.format("Invalid partition transform: '%s': no column '%s' in the schema", transform, column));
      }
      String name = m.group(1) == null ? "identity" : m.group(1).toLowerCase(Locale.ROOT);
      String width = m.group(2);
      boolean needsWidth = name.equals("bucket") || name.equals("truncate");
      if (needsWidth != (width != null)) {
        throw new IllegalArgumentException(String.format("Invalid partition transform: '%s' (%s)", transform,
            needsWidth ? name + " needs a number: " + name + "(N, " + column + ")" : name + " takes no number"));
      }
      switch (name) {
        case "identity" -> spec.identity(column);
        case "year", "years" -> spec.year(column);
        case "month", "months" -> spec.month(column);
        case "day", "days" -> spec.day(column);
        case "hour", "hours" -> spec.hour(column);
        case "bucket" -> spec.bucket(column, Integer.parseInt(width));
        case "truncate" -> spec.truncate(column, Integer.parseInt(width));
        default -> throw new IllegalStateException(name);
      }
    }
    return spec.build();
  }
}
