package dev.lakecommit.iceberg;

import java.util.stream.Stream;

/** {@link RecordedCutTest} on Iceberg's Hive catalog on the in-process metastore. */
class RecordedCutIT extends RecordedCutTest {
  static Stream<String> catalogs() {
    return Stream.of("hive");
  }
}
