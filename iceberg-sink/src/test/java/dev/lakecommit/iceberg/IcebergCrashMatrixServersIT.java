package dev.lakecommit.iceberg;

import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/** {@link IcebergCrashMatrixTest} over JDBC/PostgreSQL and Hive. */
class IcebergCrashMatrixServersIT extends IcebergCrashMatrixTest {
  static Stream<String> catalogs() {
    return CatalogFixture.SERVER_NAMES.stream();
  }

  static Stream<Arguments> pointsAndCatalogs() {
    return pointsAndCatalogs(CatalogFixture.SERVER_NAMES);
  }
}
