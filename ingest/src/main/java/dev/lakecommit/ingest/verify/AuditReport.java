package dev.lakecommit.ingest.verify;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The figures of the exactly-once audit of a table against its source (DESIGN.md, "The exactly-once audit").
 *
 * @param sourceRows records read from the source
 * @param tableRows rows in the table (its current snapshot)
 * @param duplicateKeys keys that appear more than once in the table
 * @param lostKeys source keys missing from the table
 * @param unexpectedKeys table keys that are not in the source (reported; rows written by something else)
 * @param outOfOrderRows rows whose event time is lower than the largest event time committed in an earlier
 *     snapshot; 0 when no event-time column was given
 * @param eventTimeColumn the event-time column, or null when none was given (then the out-of-order rate was not
 *     measured)
 * @param unparseableSourceRows source records that do not parse or do not fit the schema (what {@code ingest
 *     --bad-records} diverts): counted here, not in {@code sourceRows}, and left out of the comparison
 */
public record AuditReport(long sourceRows, long tableRows, long duplicateKeys, long lostKeys, long unexpectedKeys,
    long outOfOrderRows, String eventTimeColumn, long unparseableSourceRows) {

  /** A report of a source without unparseable rows. */
  public AuditReport(long sourceRows, long tableRows, long duplicateKeys, long lostKeys, long unexpectedKeys,
      long outOfOrderRows, String eventTimeColumn) {
    this(sourceRows, tableRows, duplicateKeys, lostKeys, unexpectedKeys, outOfOrderRows, eventTimeColumn, 0);
  }

  /** The out-of-order rate DESIGN.md accepts: 0.1 %. */
  public static final double MAX_OUT_OF_ORDER_RATE = 0.001;

  private static final JsonFactory JSON = new JsonFactory();

  /** A report with out-of-order rows counted against an unnamed event-time column. */
  public AuditReport(long sourceRows, long tableRows, long duplicateKeys, long lostKeys, long unexpectedKeys,
      long outOfOrderRows) {
    this(sourceRows, tableRows, duplicateKeys, lostKeys, unexpectedKeys, outOfOrderRows, null);
  }

  /** Keys appearing more than once in the table ÷ rows in the table (0 for an empty table). */
  public double duplicateRate() {
    return tableRows == 0 ? 0 : (double) duplicateKeys / tableRows;
  }

  /** Source keys missing from the table ÷ source rows (0 for an empty source). */
  public double lossRate() {
    return sourceRows == 0 ? 0 : (double) lostKeys / sourceRows;
  }

  /** Rows committed late (see {@link #outOfOrderRows()}) ÷ rows in the table. */
  public double outOfOrderRate() {
    return tableRows == 0 ? 0 : (double) outOfOrderRows / tableRows;
  }

  /** Whether an event-time column was given, so that the out-of-order rate was measured. */
  public boolean eventTimeChecked() {
    return eventTimeColumn != null;
  }

  /** No duplicate and no loss. The out-of-order rate is reported, not judged here. */
  public boolean passed() {
    return duplicateKeys == 0 && lostKeys == 0;
  }

  /** A plain-text table in the form of DESIGN.md's audit table, with a verdict line. */
  public String toTable() {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"figure", "count", "rate", "must be", "result"});
    rows.add(new String[] {"duplicate rate", plural(duplicateKeys, "key") + " of " + plural(tableRows, "row"),
        percent(duplicateRate()), "0", duplicateKeys == 0 ? "ok" : "FAIL"});
    rows.add(new String[] {"loss rate", plural(lostKeys, "key") + " of " + plural(sourceRows, "row"),
        percent(lossRate()), "0", lostKeys == 0 ? "ok" : "FAIL"});
    if (eventTimeChecked()) {
      rows.add(new String[] {"out-of-order rate (" + eventTimeColumn + ")",
          plural(outOfOrderRows, "row") + " of " + plural(tableRows, "row"), percent(outOfOrderRate()),
          "<= 0.1 %", outOfOrderRate() <= MAX_OUT_OF_ORDER_RATE ? "ok" : "over"});
    } else {
      rows.add(new String[] {"out-of-order rate", "not measured (no event-time column)", "", "<= 0.1 %", "-"});
    }
    rows.add(new String[] {"unexpected keys", plural(unexpectedKeys, "key") + " not in the source", "", "reported",
        "-"});
    rows.add(new String[] {"unparseable source rows", plural(unparseableSourceRows, "row")
        + " left out of the audit", "", "reported", "-"});
    int[] widths = new int[5];
    for (String[] row : rows) {
      for (int i = 0; i < row.length; i++) {
        widths[i] = Math.max(widths[i], row[i].length());
      }
    }
    StringBuilder out = new StringBuilder();
    out.append(String.format(Locale.ROOT, "Exactly-once audit: %,d source rows, %,d table rows\n", sourceRows,
        tableRows));
    for (int r = 0; r < rows.size(); r++) {
      out.append('|');
      for (int i = 0; i < widths.length; i++) {
        String cell = rows.get(r)[i];
        out.append(' ').append(cell).append(" ".repeat(widths[i] - cell.length())).append(" |");
      }
      out.append('\n');
      if (r == 0) {
        out.append('|');
        for (int width : widths) {
          out.append("-".repeat(width + 2)).append('|');
        }
        out.append('\n');
      }
    }
    out.append(passed() ? "PASSED: no duplicates, no losses"
        : "FAILED: " + plural(duplicateKeys, "duplicate key") + ", " + plural(lostKeys, "lost key"));
    return out.toString();
  }

  private static String plural(long count, String noun) {
    return String.format(Locale.ROOT, "%,d %s%s", count, noun, count == 1 ? "" : "s");
  }

  private static String percent(double rate) {
    return String.format(Locale.ROOT, "%.4f %%", rate * 100);
  }

  /** The figures and rates as one JSON object (pretty-printed); out-of-order figures are null if not measured. */
  public String toJson() {
    StringWriter text = new StringWriter();
    try (JsonGenerator json = JSON.createGenerator(text)) {
      json.useDefaultPrettyPrinter();
      json.writeStartObject();
      json.writeNumberField("sourceRows", sourceRows);
      json.writeNumberField("tableRows", tableRows);
      json.writeNumberField("duplicateKeys", duplicateKeys);
      json.writeNumberField("lostKeys", lostKeys);
      json.writeNumberField("unexpectedKeys", unexpectedKeys);
      json.writeNumberField("unparseableSourceRows", unparseableSourceRows);
      json.writeNumberField("duplicateRate", duplicateRate());
      json.writeNumberField("lossRate", lossRate());
      json.writeStringField("eventTimeColumn", eventTimeColumn);
      if (eventTimeChecked()) {
        json.writeNumberField("outOfOrderRows", outOfOrderRows);
        json.writeNumberField("outOfOrderRate", outOfOrderRate());
      } else {
        json.writeNullField("outOfOrderRows");
        json.writeNullField("outOfOrderRate");
      }
      json.writeBooleanField("passed", passed());
      json.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return text.toString();
  }
}
