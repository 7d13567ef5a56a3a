package dev.lakecommit.iceberg;

import java.util.stream.Stream;

/** {@link TableCommitterTest} over the catalogs behind servers: JDBC on PostgreSQL, and Hive. */
class TableCommitterServersIT extends TableCommitterTest {
  static Stream<String> catalogs() {
    return CatalogFixture.SERVER_NAMES.stream();
  }
}
