package dev.lakecommit.iceberg;

import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/** {@link IcebergCrashMatrixTest} over JDBC/PostgreSQL and Hive. */
class IcebergCrashMatrixServersIT extends IcebergCrashMatrixTest {
  static Stream<Arguments> catalogs() {
    return Stream.of(0, 2).flatMap(uncommitted -> catalogsFor(CatalogFixture.SERVER_NAMES, uncommitted).stream()
        .map(catalog -> Arguments.of(catalog, uncommitted)));
  }

  static Stream<Arguments> pointsAndCatalogs() {
    return pointsAndCatalogs(CatalogFixture.SERVER_NAMES);
  }
}
