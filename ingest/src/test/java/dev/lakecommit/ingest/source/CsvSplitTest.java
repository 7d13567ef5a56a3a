package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A CSV record without quotes is split on commas without commons-csv: for every text the cells (nulls for empty
 * cells) or the error are what commons-csv gives.
 */
class CsvSplitTest {
  private static final String[] PIECES = {"a", "b", "7", ",", ",", ",", "\"", "\"\"", "\r", "\n", "\r\n", " ", "\t",
      "é", "日本", "x y", ";", "'", "\\"};

  @Test
  void everyTextSplitsAsCommonsCsvParsesIt() {
    Random random = new Random(3_12_2026L);
    int plain = 0;
    for (int i = 0; i < 50_000; i++) {
      StringBuilder text = new StringBuilder();
      int pieces = random.nextInt(10);
      for (int p = 0; p < pieces; p++) {
        // mostly pieces without quotes or line breaks, so that many texts take the plain split
        String piece = PIECES[random.nextInt(random.nextInt(4) == 0 ? PIECES.length : 6)];
        text.append(piece);
      }
      switch (random.nextInt(4)) {
        case 0 -> text.append('\n');
        case 1 -> text.append("\r\n");
        default -> { }
      }
      String split = outcome(text.toString());
      CsvFileRecords.splitPlain = false;
      String parsed;
      try {
        parsed = outcome(text.toString());
      } finally {
        CsvFileRecords.splitPlain = true;
      }
      assertThat(split).as("text %s", escape(text.toString())).isEqualTo(parsed);
      if (CsvFileRecords.splitPlain(text.toString()) != null) {
        plain++;
      }
    }
    assertThat(plain).as("texts split without the parser").isGreaterThan(20_000);
  }

  @Test
  void emptyCellsAreNullAndALineEndIsNotACell() {
    assertThat(CsvFileRecords.parse("a,,b,\r\n")).containsExactly("a", null, "b", null);
    assertThat(CsvFileRecords.parse(",")).containsExactly(null, null);
    assertThat(CsvFileRecords.parse(" x ,y")).containsExactly(" x ", "y");
    assertThat(CsvFileRecords.splitPlain("a,\"b\"")).isNull();
    assertThat(CsvFileRecords.splitPlain("a\rb")).isNull();
    assertThat(CsvFileRecords.splitPlain("\n")).isNull();
  }

  private static String outcome(String text) {
    try {
      List<String> cells = CsvFileRecords.parse(text);
      return "cells " + cells.size() + " " + String.join("|", cells.stream()
          .map(c -> c == null ? "<null>" : "[" + c + "]").toList());
    } catch (IllegalArgumentException e) {
      return "error " + e.getMessage();
    }
  }

  private static String escape(String text) {
    return text.replace("\r", "\\r").replace("\n", "\\n");
  }
}
