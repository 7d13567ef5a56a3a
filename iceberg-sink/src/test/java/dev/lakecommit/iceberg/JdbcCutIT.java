package dev.lakecommit.iceberg;

import java.util.stream.Stream;

/** {@link JdbcCutTest} on Iceberg's JDBC catalog on PostgreSQL. */
class JdbcCutIT extends JdbcCutTest {
  static Stream<String> catalogs() {
    return Stream.of("jdbc-postgres");
  }
}
