package dev.lakecommit.ingest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The tool's default open-file limit follows the heap. */
class WriteOptionsTest {
  private static final long MB = 1L << 20;

  @Test
  void openFilesPerWriterAreWhatAQuarterOfTheHeapHoldsWithinBounds() {
    assertThat(WriteOptions.openFilesPerWriter(2, 2048 * MB)).isEqualTo(102);
    assertThat(WriteOptions.openFilesPerWriter(2, 800 * MB)).isEqualTo(40);
    assertThat(WriteOptions.openFilesPerWriter(4, 2048 * MB)).isEqualTo(51);
    assertThat(WriteOptions.openFilesPerWriter(2, 300 * MB)).as("never below the library's 32").isEqualTo(32);
    assertThat(WriteOptions.openFilesPerWriter(0, 300 * MB)).isEqualTo(32);
    assertThat(WriteOptions.openFilesPerWriter(1, 100_000 * MB)).as("a file-handle bound").isEqualTo(1000);
  }
}
