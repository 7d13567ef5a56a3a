package dev.lakecommit.iceberg;

import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Table identifiers as text that reads back to the same identifier: namespace levels and the name joined by dots,
 * a dot or a percent sign inside a level escaped ({@code %2E}, {@code %25}). {@code db.orders} stays as it is; the
 * table {@code orders.eu} of namespace {@code db} is {@code db.orders%2Eeu}, not the table {@code eu} of {@code
 * db.orders}.
 */
final class TableNames {
  private TableNames() {}

  static String encode(TableIdentifier table) {
    StringBuilder text = new StringBuilder();
    for (String level : table.namespace().levels()) {
      text.append(escape(level)).append('.');
    }
    return text.append(escape(table.name())).toString();
  }

  static TableIdentifier decode(String text) {
    String[] parts = text.split("\\.", -1);
    List<String> levels = new ArrayList<>();
    for (int i = 0; i < parts.length - 1; i++) {
      levels.add(unescape(parts[i]));
    }
    return TableIdentifier.of(Namespace.of(levels.toArray(String[]::new)), unescape(parts[parts.length - 1]));
  }

  private static String escape(String part) {
    return part.replace("%", "%25").replace(".", "%2E");
  }

  private static String unescape(String part) {
    return part.replace("%2E", ".").replace("%25", "%");
  }
}
