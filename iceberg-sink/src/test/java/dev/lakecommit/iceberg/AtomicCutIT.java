package dev.lakecommit.iceberg;

import java.util.stream.Stream;

/** {@link AtomicCutTest} on Iceberg's JDBC catalog on PostgreSQL. */
class AtomicCutIT extends AtomicCutTest {
  static Stream<String> catalogs() {
    return Stream.of("jdbc-postgres");
  }
}
