package dev.lakecommit.ingest.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNoException;

import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class TableOptionsTest {
  private static final Supplier<String> NO_HIVE_SITE = () -> "";
  private static final String MISSING = "Missing option -C uri";

  private static TableOptions parse(String... args) {
    TableOptions options = new TableOptions();
    new CommandLine(options).setCaseInsensitiveEnumValuesAllowed(true).parseArgs(args);
    return options;
  }

  /**
   * A Hive catalog names its metastore by {@code -C uri}, by {@code -C hive.metastore.uris} (which the catalog is
   * given as its {@code uri}: Iceberg's HiveCatalog reads no other), or by a {@code hive-site.xml}; a blank URI is
   * none (Hive takes it for "start one here") and is not passed on; two different URIs are refused.
   */
  @Test
  void anIcebergHiveCatalogNeedsAMetastoreUriFromAnOptionOrAHiveSite() {
    TableOptions hive = parse("--table", "shop.orders", "-C", "type=hive");
    assertThatIllegalArgumentException().isThrownBy(() -> hive.checkHiveCatalogUri(NO_HIVE_SITE))
        .withMessageContaining(MISSING);
    assertThatNoException().isThrownBy(() -> hive.checkHiveCatalogUri(() -> "thrift://127.0.0.1:9083"));
    assertThatIllegalArgumentException().isThrownBy(() -> parse("--table", "shop.orders", "-C", "type=hive", "-C",
        "uri= ").checkHiveCatalogUri(NO_HIVE_SITE)).withMessageContaining(MISSING);
    assertThatIllegalArgumentException().isThrownBy(() -> parse("--table", "shop.orders", "-C",
        "catalog-impl=org.apache.iceberg.hive.HiveCatalog").checkHiveCatalogUri(NO_HIVE_SITE))
        .withMessageContaining(MISSING);

    TableOptions byHiveKey = parse("--table", "shop.orders", "-C", "type=hive", "-C",
        "hive.metastore.uris=thrift://127.0.0.1:9083");
    assertThatNoException().isThrownBy(() -> byHiveKey.checkHiveCatalogUri(NO_HIVE_SITE));
    assertThat(byHiveKey.catalogProperties()).containsEntry("uri", "thrift://127.0.0.1:9083");
    assertThatIllegalArgumentException().isThrownBy(() -> parse("--table", "shop.orders", "-C", "type=hive", "-C",
        "uri=thrift://a:9083", "-C", "hive.metastore.uris=thrift://b:9083").checkHiveCatalogUri(NO_HIVE_SITE))
        .withMessageContaining("Conflicting metastore URIs").withMessageContaining("-C hive.metastore.uris");
    assertThatNoException().isThrownBy(() -> parse("--table", "shop.orders", "-C", "type=hive", "-C",
        "uri=thrift://a:9083", "-C", "hive.metastore.uris=thrift://a:9083").checkHiveCatalogUri(NO_HIVE_SITE));
    // a blank uri is left out, so that the hive-site.xml's metastore is the one used
    TableOptions blankWithHiveSite = parse("--table", "shop.orders", "-C", "type=hive", "-C", "uri=");
    assertThatNoException().isThrownBy(() -> blankWithHiveSite.checkHiveCatalogUri(() -> "thrift://127.0.0.1:9083"));
    assertThat(blankWithHiveSite.catalogProperties()).doesNotContainKey("uri");

    assertThatNoException().isThrownBy(() -> parse("--table", "shop.orders", "-C", "type=rest", "-C",
        "uri=http://127.0.0.1:8181").checkHiveCatalogUri(NO_HIVE_SITE));
    assertThatNoException().isThrownBy(() -> parse("--table", "shop.orders").checkHiveCatalogUri(NO_HIVE_SITE));
    assertThat(parse("--table", "shop.orders", "-C", "type=jdbc", "-C", "uri=jdbc:sqlite:x.db", "-C",
        "hive.metastore.uris=thrift://b:9083").catalogProperties()).containsEntry("uri", "jdbc:sqlite:x.db");
  }
}
