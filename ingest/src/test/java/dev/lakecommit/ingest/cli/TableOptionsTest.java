package dev.lakecommit.ingest.cli;

import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNoException;

import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class TableOptionsTest {

  private static TableOptions parse(String... args) {
    TableOptions options = new TableOptions();
    new CommandLine(options).setCaseInsensitiveEnumValuesAllowed(true).parseArgs(args);
    return options;
  }

  /** A Hive configuration directory may name the metastore (hive-site.xml), so the URI is not required then. */
  @Test
  void anIcebergHiveCatalogWithoutUriIsRefusedUnlessAHiveConfigurationMayNameIt() {
    TableOptions hive = parse("--table", "shop.orders", "-C", "type=hive");
    assertThatIllegalArgumentException().isThrownBy(() -> hive.checkHiveCatalogUri(Map.of()))
        .withMessageContaining("Missing option -C uri");
    assertThatNoException().isThrownBy(() -> hive.checkHiveCatalogUri(Map.of("HIVE_CONF_DIR", "/etc/hive/conf")));
    assertThatNoException().isThrownBy(() -> hive.checkHiveCatalogUri(Map.of("HIVE_HOME", "/opt/hive")));
    assertThatNoException().isThrownBy(() -> parse("--table", "shop.orders", "-C", "type=hive", "-C",
        "hive.metastore.uris=thrift://127.0.0.1:9083").checkHiveCatalogUri(Map.of()));
    assertThatNoException().isThrownBy(() -> parse("--table", "shop.orders", "-C", "type=rest", "-C",
        "uri=http://127.0.0.1:8181").checkHiveCatalogUri(Map.of()));
    assertThatNoException().isThrownBy(() -> parse("--table", "shop.orders").checkHiveCatalogUri(Map.of()));
  }
}
