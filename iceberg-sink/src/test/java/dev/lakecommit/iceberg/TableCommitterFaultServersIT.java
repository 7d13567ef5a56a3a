package dev.lakecommit.iceberg;

import java.util.stream.Stream;

/** {@link TableCommitterFaultTest} (races, lost acks, concurrent changes) over JDBC/PostgreSQL and Hive. */
class TableCommitterFaultServersIT extends TableCommitterFaultTest {
  static Stream<String> catalogs() {
    return CatalogFixture.SERVER_NAMES.stream();
  }
}
