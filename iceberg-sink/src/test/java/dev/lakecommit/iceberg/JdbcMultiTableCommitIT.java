package dev.lakecommit.iceberg;

import java.util.stream.Stream;

/** {@link JdbcMultiTableCommitTest} on Iceberg's JDBC catalog on PostgreSQL. */
class JdbcMultiTableCommitIT extends JdbcMultiTableCommitTest {
  static Stream<String> catalogs() {
    return Stream.of("jdbc-postgres");
  }
}
