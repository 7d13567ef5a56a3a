package dev.lakecommit.hive;

import dev.lakecommit.staging.StagedFile;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.types.Type;

/**
 * The Hive partition values of a staged file, as Hive writes them: strings as they are, numbers and booleans in
 * decimal and {@code true}/{@code false}, dates as {@code yyyy-MM-dd}, null and empty values as the default
 * partition name.
 *
 * <p>They come from the file's typed partition tuple, not from {@link StagedFile#partitionPath()}: the staging
 * path escapes values as Iceberg does (URL encoding: {@code a b} is {@code a+b}, {@code é} is {@code %C3%A9}),
 * which is not Hive's escaping and must not name a Hive partition directory.
 */
final class PartitionValues {
  private PartitionValues() {}

  static List<String> of(StagedFile file, PartitionSpec spec, String defaultName) {
    return of(file.partition(spec), spec, defaultName);
  }

  static List<String> of(StructLike tuple, PartitionSpec spec, String defaultName) {
    List<String> values = new ArrayList<>(spec.fields().size());
    for (int i = 0; i < spec.fields().size(); i++) {
      Type type = spec.schema().findType(spec.fields().get(i).sourceId());
      Object value = tuple.get(i, Object.class);
      String text = value == null ? null : format(type, value);
      values.add(text == null || text.isEmpty() ? defaultName : text);
    }
    return values;
  }

  private static String format(Type type, Object value) {
    if (type.typeId() == Type.TypeID.DATE) {
      return LocalDate.ofEpochDay(((Number) value).longValue()).toString();
    }
    return value.toString();
  }
}
