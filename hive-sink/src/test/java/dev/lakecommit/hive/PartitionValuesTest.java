package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.staging.ColumnMetrics;
import dev.lakecommit.staging.StagedFile;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/** Partition values as Hive writes them, from the staged file's typed tuple (not from its staging path). */
class PartitionValuesTest {
  private static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "day", Types.DateType.get()),
      Types.NestedField.optional(3, "ok", Types.BooleanType.get()),
      Types.NestedField.optional(4, "n", Types.LongType.get()),
      Types.NestedField.optional(5, "s", Types.StringType.get()));
  private static final PartitionSpec SPEC =
      PartitionSpec.builderFor(SCHEMA).identity("day").identity("ok").identity("n").identity("s").build();

  @Test
  void formatsValuesAsHive() {
    StagedFile file = file((int) LocalDate.of(2024, 2, 29).toEpochDay(), true, -7L, "a b/é");
    assertThat(PartitionValues.of(file, SPEC, "DEF")).containsExactly("2024-02-29", "true", "-7", "a b/é");
    assertThat(file.partitionPath()).as("Iceberg's staging path escapes differently")
        .isEqualTo("day=2024-02-29/ok=true/n=-7/s=a+b%2F%C3%A9");
  }

  @Test
  void nullAndEmptyValuesAreTheDefaultPartition() {
    assertThat(PartitionValues.of(file(null, null, null, ""), SPEC, "DEF")).containsExactly("DEF", "DEF", "DEF", "DEF");
  }

  private static StagedFile file(Integer day, Boolean ok, Long n, String s) {
    List<Object> values = Arrays.asList(day, ok, n, s);
    List<ByteBuffer> buffers = new ArrayList<>();
    StringBuilder path = new StringBuilder();
    for (int i = 0; i < values.size(); i++) {
      Type type = SPEC.partitionType().fields().get(i).type();
      buffers.add(values.get(i) == null ? null : Conversions.toByteBuffer(type, values.get(i)));
    }
    org.apache.iceberg.PartitionData data = new org.apache.iceberg.PartitionData(SPEC.partitionType());
    for (int i = 0; i < values.size(); i++) {
      data.set(i, values.get(i));
    }
    path.append(SPEC.partitionToPath(data));
    return new StagedFile("file:/t/f.parquet", FileFormat.PARQUET, SPEC.specId(), path.toString(), buffers, 1, 1,
        ColumnMetrics.EMPTY, List.of());
  }
}
